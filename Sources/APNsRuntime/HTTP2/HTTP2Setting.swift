import APNsCore

/// One SETTINGS parameter (RFC 9113 §6.5.2), for ``HTTP2Session/submitSettings(_:)`` and the
/// session's first SETTINGS frame.
package struct HTTP2Setting: Hashable, Sendable, CustomStringConvertible {
    /// A SETTINGS identifier; open, so unknown ones pass through.
    package struct Identifier: Hashable, Sendable, RawRepresentable {
        package var rawValue: UInt16
        package init(rawValue: UInt16) { self.rawValue = rawValue }

        package static let headerTableSize = Identifier(rawValue: 0x1)
        package static let enablePush = Identifier(rawValue: 0x2)
        package static let maxConcurrentStreams = Identifier(rawValue: 0x3)
        package static let initialWindowSize = Identifier(rawValue: 0x4)
        package static let maxFrameSize = Identifier(rawValue: 0x5)
        package static let maxHeaderListSize = Identifier(rawValue: 0x6)
    }

    package var identifier: Identifier
    package var value: UInt32

    package init(_ identifier: Identifier, _ value: UInt32) {
        self.identifier = identifier
        self.value = value
    }

    /// SETTINGS_MAX_CONCURRENT_STREAMS: how many streams the peer may have open towards us.
    package static func maxConcurrentStreams(_ value: UInt32) -> HTTP2Setting { .init(.maxConcurrentStreams, value) }
    /// SETTINGS_INITIAL_WINDOW_SIZE: each new stream's receive window.
    package static func initialWindowSize(_ value: UInt32) -> HTTP2Setting { .init(.initialWindowSize, value) }
    /// SETTINGS_MAX_HEADER_LIST_SIZE: the largest header list we accept (RFC accounting: name +
    /// value + 32 per field).
    package static func maxHeaderListSize(_ value: UInt32) -> HTTP2Setting { .init(.maxHeaderListSize, value) }
    /// SETTINGS_ENABLE_PUSH.
    package static func enablePush(_ enabled: Bool) -> HTTP2Setting { .init(.enablePush, enabled ? 1 : 0) }

    /// "MAX_CONCURRENT_STREAMS=1000".
    package var description: String {
        let name =
            switch identifier {
            case .headerTableSize: "HEADER_TABLE_SIZE"
            case .enablePush: "ENABLE_PUSH"
            case .maxConcurrentStreams: "MAX_CONCURRENT_STREAMS"
            case .initialWindowSize: "INITIAL_WINDOW_SIZE"
            case .maxFrameSize: "MAX_FRAME_SIZE"
            case .maxHeaderListSize: "MAX_HEADER_LIST_SIZE"
            default: "0x" + String(identifier.rawValue, radix: 16)
            }
        return "\(name)=\(value)"
    }
}
