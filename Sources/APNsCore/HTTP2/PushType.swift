/// The `apns-push-type` header: what kind of notification a request carries.
///
/// Apple requires it on watchOS 6 and later and recommends it everywhere; it must match the
/// payload. The type also decides two rules the server enforces:
///
/// | type | raw value | `apns-topic` must end with | priority | auth | payload limit |
/// |---|---|---|---|---|---|
/// | ``alert`` | `alert` | (the bundle id) | 10, 5, 1 | both | 4096 |
/// | ``background`` | `background` | (the bundle id) | 5 only | both | 4096 |
/// | ``location`` | `location` | `.location-query` | 10, 5, 1 | token only | 4096 |
/// | ``voip`` | `voip` | `.voip` | 10, 5, 1 | both | 5120 |
/// | ``complication`` | `complication` | `.complication` | 10, 5, 1 | both | 4096 |
/// | ``fileProvider`` | `fileprovider` | `.pushkit.fileprovider` | 10, 5, 1 | both | 4096 |
/// | ``mdm`` | `mdm` | (the MDM certificate's topic) | 10, 5, 1 | both | 4096 |
/// | ``liveActivity`` | `liveactivity` | `.push-type.liveactivity` | 5 or 10 | token only | 4096 (content state and attributes 4096 each) |
/// | ``pushToTalk`` | `pushtotalk` | `.voip-ptt` | 10, 5, 1 | both | 4096 |
/// | ``widgets`` | `widgets` | `.push-type.widgets` | 10, 5, 1 | both | 4096, `{"aps":{"content-changed":true}}` |
/// | ``controls`` | `controls` | `.push-type.controls` | 10, 5, 1 | both | 4096 |
///
/// A broadcast (``BroadcastRequest``, Live Activities only) may carry 5120 bytes
/// (``broadcastMaximumPayloadSize``). ``problem(priority:)``, ``problem(usesTokens:)`` and
/// ``problem(payload:)`` are these rules as code, shared by the client's checks before sending and
/// the simulator's validation.
///
/// An open struct: a type Apple adds later, or a misspelt one, keeps its string
/// (``isKnown`` is false for it), so a server can answer `InvalidPushType` and a client can send
/// a type this library does not know yet.
public struct PushType: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    /// The header value.
    public var rawValue: String

    /// Wraps any header value.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A notification that alerts, plays a sound or badges.
    public static let alert = PushType(rawValue: "alert")
    /// Content for the app in the background (`content-available`); always priority 5.
    public static let background = PushType(rawValue: "background")
    /// A location query for a Location Push Service extension.
    public static let location = PushType(rawValue: "location")
    /// An incoming VoIP call (PushKit).
    public static let voip = PushType(rawValue: "voip")
    /// An update for a watchOS complication.
    public static let complication = PushType(rawValue: "complication")
    /// A File Provider extension change signal.
    public static let fileProvider = PushType(rawValue: "fileprovider")
    /// A mobile device management wake-up.
    public static let mdm = PushType(rawValue: "mdm")
    /// A Live Activity update.
    public static let liveActivity = PushType(rawValue: "liveactivity")
    /// A Push to Talk update.
    public static let pushToTalk = PushType(rawValue: "pushtotalk")
    /// A widget reload (WidgetKit).
    public static let widgets = PushType(rawValue: "widgets")
    /// A controls reload (Control Center).
    public static let controls = PushType(rawValue: "controls")

    /// Every type Apple documents, in the order of its documentation.
    public static let allKnown: [PushType] = [
        .alert, .background, .location, .voip, .complication, .fileProvider, .mdm, .liveActivity, .pushToTalk,
        .widgets, .controls,
    ]

    /// The payload limit of every type but VoIP.
    public static let defaultMaximumPayloadSize = 4096
    /// The payload limit of ``voip``.
    public static let voipMaximumPayloadSize = 5120

    /// The payload limit of a broadcast push (`POST /4/broadcasts/apps/<bundle id>`).
    public static let broadcastMaximumPayloadSize = 5120
    /// The limit of a Live Activity's `content-state`, and of its `attributes`, as JSON bytes.
    public static let liveActivityObjectMaximumSize = 4096

    /// Whether Apple documents this type.
    public var isKnown: Bool { Self.allKnown.contains(self) }

    /// The suffix `apns-topic` must carry after the bundle id for this type, or nil when the topic is
    /// the bundle id itself (and for types this library does not know).
    public var requiredTopicSuffix: String? {
        switch rawValue {
        case "alert", "background": nil  // the common two first: a switch on strings compares in order
        case "location": ".location-query"
        case "voip": ".voip"
        case "complication": ".complication"
        case "fileprovider": ".pushkit.fileprovider"
        case "liveactivity": ".push-type.liveactivity"
        case "pushtotalk": ".voip-ptt"
        case "widgets": ".push-type.widgets"
        case "controls": ".push-type.controls"
        default: nil
        }
    }

    /// The largest payload APNs accepts for this type: 5120 bytes for VoIP, 4096 for the rest.
    public var maximumPayloadSize: Int {
        self == .voip ? Self.voipMaximumPayloadSize : Self.defaultMaximumPayloadSize
    }

    /// Whether APNs takes this type only over token authentication (`location` and
    /// `liveactivity`): a certificate connection is refused.
    public var requiresTokenAuthentication: Bool { self == .location || self == .liveActivity }

    /// The priorities APNs allows for this type, or nil when Apple states no rule (10, 5 and 1 are
    /// then valid): `background` 5 only ("using priority 10 is an error"), `liveactivity` 5 or 10.
    public var allowedPriorities: [Priority]? {
        switch rawValue {
        case "background": [.conservePower]
        case "liveactivity": [.immediate, .conservePower]
        default: nil
        }
    }

    /// Why `priority` is wrong for this type (BadPriority and the fix in words), or nil.
    public func problem(priority: Priority) -> (reason: ProviderReason, explanation: String)? {
        guard let allowed = allowedPriorities, !allowed.contains(priority) else { return nil }
        let names = allowed.map(\.description).joined(separator: " or ")
        return (.badPriority, "\(self) pushes must use priority \(names), not \(priority)")
    }

    /// Why this type cannot go over the connection's authentication, or nil: a token-only type
    /// (``requiresTokenAuthentication``) on a certificate connection. Apple does not document the
    /// reason APNs answers; this library (client and simulator) uses **TopicDisallowed**: the
    /// certificate does not grant the topic of a token-only type.
    public func problem(usesTokens: Bool) -> (reason: ProviderReason, explanation: String)? {
        guard !usesTokens, requiresTokenAuthentication else { return nil }
        return (
            .topicDisallowed,
            "\(self) pushes need token authentication (a .p8 key), APNs refuses them on a certificate connection"
        )
    }

    /// Why a payload does not suit this type, or nil. Only two types have rules about the payload's
    /// contents, so for every other type this reads nothing:
    /// - `widgets`: the payload must be `{"aps":{"content-changed":true}}` (InvalidPushType
    ///   otherwise: the type must match the payload);
    /// - `liveactivity`: `aps.content-state` and `aps.attributes`, where present, have at most
    ///   4096 bytes each (PayloadTooLarge), and `aps.event` is `start`, `update` or `end`
    ///   (InvalidPushType); the other rules of ``LiveActivityPayload`` are the builder's.
    public func problem(payload: Payload) -> (reason: ProviderReason, explanation: String)? {
        payload.bytes.withUnsafeBytes { problem(payloadJSON: $0) }
    }

    /// ``problem(payload:)`` on a payload's bytes.
    package func problem(payloadJSON bytes: UnsafeRawBufferPointer) -> (reason: ProviderReason, explanation: String)? {
        switch rawValue {
        case "widgets":
            guard let aps = Self.apsMembers(bytes),
                aps.members.count == 1, aps.members[0].key == "content-changed",
                aps.text(aps.members[0]) == "true"
            else {
                return (.invalidPushType, #"widgets pushes carry exactly {"aps":{"content-changed":true}}"#)
            }
            return nil
        case "liveactivity":
            guard let aps = Self.apsMembers(bytes) else {
                return (.invalidPushType, "liveactivity pushes need an aps object with the activity's event")
            }
            for key in ["content-state", "attributes"] {
                if let member = aps.members.first(where: { $0.key == key }),
                    member.value.count > Self.liveActivityObjectMaximumSize
                {
                    return (
                        .payloadTooLarge,
                        "aps.\(key) has \(member.value.count) bytes; a Live Activity's \(key) may have at most "
                            + "\(Self.liveActivityObjectMaximumSize)"
                    )
                }
            }
            let event = aps.members.first(where: { $0.key == "event" }).flatMap(aps.string)
            guard let event, LiveActivityPayload.Event(rawValue: event) != nil else {
                return (.invalidPushType, "liveactivity pushes need aps.event start, update or end")
            }
            return nil
        default:
            return nil
        }
    }

    /// The members of a payload's `aps` object, or nil when the payload is not an object with one.
    private static func apsMembers(_ bytes: UnsafeRawBufferPointer) -> APSMembers? {
        guard let members = try? JSONScanner.objectMembers(bytes),
            let aps = members.last(where: { $0.key == "aps" })
        else { return nil }
        let apsBytes = UnsafeRawBufferPointer(rebasing: bytes[aps.value])
        guard let inner = try? JSONScanner.objectMembers(apsBytes) else { return nil }
        return APSMembers(bytes: apsBytes, members: inner)
    }

    private struct APSMembers {
        let bytes: UnsafeRawBufferPointer
        let members: [JSONScanner.Member]

        func text(_ member: JSONScanner.Member) -> String {
            String(decoding: UnsafeRawBufferPointer(rebasing: bytes[member.value]), as: UTF8.self)
        }

        func string(_ member: JSONScanner.Member) -> String? {
            JSONScanner.stringValue(bytes, in: member.value)
        }
    }

    /// The header value.
    public var description: String { rawValue }
}
