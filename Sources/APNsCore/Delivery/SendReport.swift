/// A notification the gateway refused, with the status it gave.
public struct Rejection: Hashable, Sendable {
    /// The notification's 1-based position in the input sequence.
    public var position: UInt64
    /// The caller's identifier (``PushNotification/identifier``), if it had one.
    public var identifier: UInt32?
    /// The device token it was sent to.
    public var token: DeviceToken
    /// The gateway's status (8, invalid token, is the usual one).
    public var status: StatusCode
    /// True when the notification had been written on an earlier connection that closed without
    /// an answer: that gateway may have delivered it before this one refused it.
    public var mayHaveBeenDelivered: Bool

    /// Creates a rejection.
    public init(
        position: UInt64, identifier: UInt32?, token: DeviceToken, status: StatusCode,
        mayHaveBeenDelivered: Bool = false
    ) {
        self.position = position
        self.identifier = identifier
        self.token = token
        self.status = status
        self.mayHaveBeenDelivered = mayHaveBeenDelivered
    }
}

/// A notification whose fate is unknown: it was written on connections that closed without a
/// verdict, more often than the retry limit allows, or it was waiting when the send stopped. It
/// may or may not have been delivered; it was *not* confirmed.
public struct UnconfirmedNotification: Hashable, Sendable {
    /// The 1-based position in the input sequence.
    public var position: UInt64
    /// The notification, so it can be sent again later.
    public var notification: PushNotification
    /// Whether it was ever written to a gateway (false: it certainly was not delivered).
    public var wasWritten: Bool

    /// Creates an entry.
    public init(position: UInt64, notification: PushNotification, wasWritten: Bool) {
        self.position = position
        self.notification = notification
        self.wasWritten = wasWritten
    }
}

/// A notification that was written again after a connection that carried it closed without a
/// verdict: that gateway may have delivered it already, so the device may see it twice.
public struct PossibleDuplicate: Hashable, Sendable {
    /// The 1-based position in the input sequence.
    public var position: UInt64
    /// The caller's identifier, if it had one.
    public var identifier: UInt32?
    /// The device token it went to.
    public var token: DeviceToken

    /// Creates an entry.
    public init(position: UInt64, identifier: UInt32?, token: DeviceToken) {
        self.position = position
        self.identifier = identifier
        self.token = token
    }
}

/// What happened to every notification of one `PushClient.send(_:)` call.
///
/// Every notification taken from the input ends in exactly one bucket: ``accepted`` (confirmed
/// by the gateway), ``rejected`` (refused, with a status), ``unknownFate`` (written, then its
/// connection was lost without a verdict: it may or may not have been delivered), or ``notSent``
/// (taken from the input but never written: certainly not delivered). The last two together are
/// ``unconfirmed``, so `sent == accepted + rejected.count + unconfirmed.count`; none of them is
/// ever counted as success.
public struct SendReport: Hashable, Sendable {
    /// Notifications taken from the input.
    public var sent: Int = 0
    /// Notifications the gateway confirmed (by a later error response or the confirmation barrier).
    public var accepted: Int = 0
    /// Notifications the gateway refused.
    public var rejected: [Rejection] = []
    /// Notifications that could not be confirmed: ``unknownFate`` and ``notSent`` together.
    public var unconfirmed: [UnconfirmedNotification] = []
    /// Frames written again after an error response, a shutdown or a silent close.
    public var resent: Int = 0
    /// Resent notifications that had been written on a connection that closed without a verdict:
    /// the gateway may have delivered them already, so the device may see them twice. Counts every
    /// such resend; ``possiblyDuplicated`` names the notifications.
    public var possibleDuplicates: Int = 0
    /// The notifications behind ``possibleDuplicates``, each once, in the order of their first resend.
    public var possiblyDuplicated: [PossibleDuplicate] = []
    /// Gateway connections opened.
    public var connections: Int = 0
    /// Wall-clock duration of the send, in seconds.
    public var seconds: Double = 0
    /// Why the send stopped before every notification had a verdict (certificate refused, gateway
    /// unreachable), if it did.
    public var failure: LegacyAPNsError?

    /// An empty report.
    public init() {}

    /// True when every notification was accepted: no rejections, nothing unconfirmed, no failure.
    public var isCompleteSuccess: Bool { failure == nil && rejected.isEmpty && unconfirmed.isEmpty }

    /// Of ``unconfirmed``, the ones that were written to a gateway: they may or may not have been
    /// delivered (sending them again may duplicate them).
    public var unknownFate: [UnconfirmedNotification] { unconfirmed.filter(\.wasWritten) }

    /// Of ``unconfirmed``, the ones never written: certainly not delivered, safe to send again.
    public var notSent: [UnconfirmedNotification] { unconfirmed.filter { !$0.wasWritten } }

    /// Adds another connection's report (for sends over several connections).
    public mutating func merge(_ other: SendReport) {
        sent += other.sent
        accepted += other.accepted
        rejected += other.rejected
        unconfirmed += other.unconfirmed
        resent += other.resent
        possibleDuplicates += other.possibleDuplicates
        possiblyDuplicated += other.possiblyDuplicated
        connections += other.connections
        if failure == nil { failure = other.failure }
    }
}

extension SendReport: CustomStringConvertible {
    /// One line for logs: "3 sent: 2 accepted, 1 rejected, 0 unconfirmed, 1 resent, 1 connection,
    /// 0.012 s", then the unconfirmed split and the failure when there are any:
    /// "..., 0.1 s; unconfirmed: 1 unknown fate, 2 not sent; stopped: cannot connect to ...".
    public var description: String {
        func count(_ number: Int, _ noun: String) -> String { "\(number) \(noun)\(number == 1 ? "" : "s")" }
        var text =
            "\(sent) sent: \(accepted) accepted, \(rejected.count) rejected, \(unconfirmed.count) unconfirmed, "
            + "\(resent) resent, \(count(connections, "connection")), \(Self.formatSeconds(seconds)) s"
        if possibleDuplicates > 0 { text += ", \(count(possiblyDuplicated.count, "possible duplicate"))" }
        if !unconfirmed.isEmpty {
            text += "; unconfirmed: \(unknownFate.count) unknown fate, \(notSent.count) not sent"
        }
        if let failure { text += "; stopped: \(failure.reason)" }
        return text
    }

    /// Seconds with three decimals at most ("0.012", "1.5", "12").
    package static func formatSeconds(_ seconds: Double) -> String {
        let milliseconds = (seconds * 1000).rounded()
        guard milliseconds.isFinite, milliseconds >= 0, milliseconds < 1e15 else { return "\(seconds)" }
        let whole = Int(milliseconds) / 1000
        var fraction = String(Int(milliseconds) % 1000)
        while fraction.count < 3 { fraction = "0" + fraction }
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return fraction.isEmpty ? "\(whole)" : "\(whole).\(fraction)"
    }
}
