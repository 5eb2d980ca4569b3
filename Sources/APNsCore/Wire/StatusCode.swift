/// The status byte of an error response.
///
/// An open struct over `UInt8`, read unsigned (128 and 255 are not negative), so every byte
/// round-trips, including ones Apple never defined. There is no status 9.
public struct StatusCode: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    /// The status byte, unsigned.
    public var rawValue: UInt8

    /// Wraps any status byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// 0: no errors encountered (treated like 10: the named notification went through).
    public static let noErrors = StatusCode(rawValue: 0)
    /// Transient: resend the notification.
    public static let processingError = StatusCode(rawValue: 1)
    /// 2: the frame had no token.
    public static let missingDeviceToken = StatusCode(rawValue: 2)
    /// 3: missing topic.
    public static let missingTopic = StatusCode(rawValue: 3)
    /// 4: the frame had no payload.
    public static let missingPayload = StatusCode(rawValue: 4)
    /// 5: the token had the wrong length.
    public static let invalidTokenSize = StatusCode(rawValue: 5)
    /// 6: invalid topic size.
    public static let invalidTopicSize = StatusCode(rawValue: 6)
    /// 7: the payload was over the limit.
    public static let invalidPayloadSize = StatusCode(rawValue: 7)
    /// The token is unknown, or belongs to the other environment (sandbox versus production).
    public static let invalidToken = StatusCode(rawValue: 8)
    /// The gateway is shutting down; the identifier is the **last notification processed
    /// successfully**, not a bad one.
    public static let shutdown = StatusCode(rawValue: 10)
    /// The bytes could not be parsed.
    public static let protocolError = StatusCode(rawValue: 128)
    /// None (unknown).
    public static let unknown = StatusCode(rawValue: 255)

    /// Every status Apple defined, in numeric order.
    public static let allKnown: [StatusCode] = [
        .noErrors, .processingError, .missingDeviceToken, .missingTopic, .missingPayload, .invalidTokenSize,
        .invalidTopicSize, .invalidPayloadSize, .invalidToken, .shutdown, .protocolError, .unknown,
    ]

    /// Apple's words for the status, lowercased (`"invalid token"`), or `"unknown status N"`.
    public var reason: String {
        switch rawValue {
        case 0: "no errors encountered"
        case 1: "processing error"
        case 2: "missing device token"
        case 3: "missing topic"
        case 4: "missing payload"
        case 5: "invalid token size"
        case 6: "invalid topic size"
        case 7: "invalid payload size"
        case 8: "invalid token"
        case 10: "shutdown"
        case 128: "protocol error"
        case 255: "none (unknown)"
        default: "unknown status \(rawValue)"
        }
    }

    /// Whether resending the named notification may succeed (processing error only).
    public var isTransient: Bool { self == .processingError }

    /// The number and Apple's words: `8 (invalid token)`.
    public var description: String { "\(rawValue) (\(reason))" }
}
