/// The priority item of a command 2 frame (one byte).
///
/// Apple defined two values: 10 (send now; the notification must alert, sound or badge) and 5
/// (send at a time that conserves power; required for content-available-only pushes). Other bytes
/// decode and round-trip, so fixtures with odd values can be inspected, but ``init(validating:)``
/// accepts only the two defined ones.
///
/// The HTTP/2 API adds 1 (``lowest``); see `Priority+HTTP2.swift` and ``init(validatingHTTP2:)``.
public struct Priority: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
    /// The byte in the frame.
    public var rawValue: UInt8

    /// Wraps any byte (use ``init(validating:)`` to accept only 10 and 5).
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Creates a priority, accepting only 10 and 5.
    public init(validating value: Int) throws {
        guard value == 10 || value == 5 else {
            throw LegacyAPNsError(.invalidValue, "priority must be 10 (immediate) or 5 (conserve power), not \(value)")
        }
        self.rawValue = UInt8(value)
    }

    /// 10: deliver immediately.
    public static let immediate = Priority(rawValue: 10)
    /// 5: deliver when it conserves power.
    public static let conservePower = Priority(rawValue: 5)

    /// The number.
    public var description: String { String(rawValue) }
}
