/// The `apns-push-type` header: what kind of notification a request carries.
///
/// Apple requires it on watchOS 6 and later and recommends it everywhere; it must match the
/// payload. The type also decides two rules the server enforces:
///
/// | type | raw value | `apns-topic` must end with | payload limit |
/// |---|---|---|---|
/// | ``alert`` | `alert` | (the bundle id) | 4096 |
/// | ``background`` | `background` | (the bundle id) | 4096 |
/// | ``location`` | `location` | `.location-query` | 4096 |
/// | ``voip`` | `voip` | `.voip` | 5120 |
/// | ``complication`` | `complication` | `.complication` | 4096 |
/// | ``fileProvider`` | `fileprovider` | `.pushkit.fileprovider` | 4096 |
/// | ``mdm`` | `mdm` | (the MDM certificate's topic) | 4096 |
/// | ``liveActivity`` | `liveactivity` | `.push-type.liveactivity` | 4096 |
/// | ``pushToTalk`` | `pushtotalk` | `.voip-ptt` | 4096 |
/// | ``widgets`` | `widgets` | `.push-type.widgets` | 4096 |
/// | ``controls`` | `controls` | `.push-type.controls` | 4096 |
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

    /// The header value.
    public var description: String { rawValue }
}
