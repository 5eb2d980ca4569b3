/// The `apns-priority` header of the HTTP/2 provider API: the binary protocol's 10 and 5, plus 1.
///
/// | value | meaning |
/// |---|---|
/// | 10 | deliver immediately (the default when the header is absent) |
/// | 5 | deliver at a time that considers the device's power; required for `background` pushes |
/// | 1 | the device's power over everything else; never wake the device |
extension Priority {
    /// 1: prioritise the device's power over all other factors, and never wake the device
    /// (HTTP/2 only: the binary gateway knew 10 and 5).
    public static let lowest = Priority(rawValue: 1)

    /// The three values the HTTP/2 API accepts, highest first.
    public static let http2Values: [Priority] = [.immediate, .conservePower, .lowest]

    /// Whether the HTTP/2 API accepts this priority (10, 5 or 1).
    public var isValidForHTTP2: Bool { rawValue == 10 || rawValue == 5 || rawValue == 1 }

    /// Creates a priority for the HTTP/2 API, accepting only 10, 5 and 1.
    public init(validatingHTTP2 value: Int) throws {
        guard value == 10 || value == 5 || value == 1 else {
            throw LegacyAPNsError(
                .invalidValue,
                "priority must be 10 (immediate), 5 (conserve power) or 1 (lowest), not \(value)")
        }
        self.init(rawValue: UInt8(value))
    }

    /// Parses an `apns-priority` header value: exactly `10`, `5` or `1`; nil for anything else
    /// (a server answers `BadPriority`).
    package init?(http2HeaderValue text: UnsafeRawBufferPointer) {
        switch text.count {
        case 1 where text[0] == UInt8(ascii: "5"): self = .conservePower
        case 1 where text[0] == UInt8(ascii: "1"): self = .lowest
        case 2 where text[0] == UInt8(ascii: "1") && text[1] == UInt8(ascii: "0"): self = .immediate
        default: return nil
        }
    }
}
