import APNsCore

/// What one SETTINGS frame from the peer said; a parameter the frame did not mention is nil (its
/// value is unchanged). Handed to ``HTTP2SessionDelegate/didReceiveSettings(_:)`` after nghttp2
/// has applied it.
package struct HTTP2Settings: Hashable, Sendable {
    /// SETTINGS_HEADER_TABLE_SIZE.
    package var headerTableSize: UInt32?
    /// SETTINGS_ENABLE_PUSH.
    package var enablePush: Bool?
    /// SETTINGS_MAX_CONCURRENT_STREAMS: how many requests we may now have open.
    package var maxConcurrentStreams: UInt32?
    /// SETTINGS_INITIAL_WINDOW_SIZE.
    package var initialWindowSize: UInt32?
    /// SETTINGS_MAX_FRAME_SIZE.
    package var maxFrameSize: UInt32?
    /// SETTINGS_MAX_HEADER_LIST_SIZE.
    package var maxHeaderListSize: UInt32?
    /// Every parameter in the frame's order, known or not.
    package var entries: [HTTP2Setting] = []

    package init() {}

    /// Records one parameter.
    package mutating func take(_ setting: HTTP2Setting) {
        entries.append(setting)
        switch setting.identifier {
        case .headerTableSize: headerTableSize = setting.value
        case .enablePush: enablePush = setting.value != 0
        case .maxConcurrentStreams: maxConcurrentStreams = setting.value
        case .initialWindowSize: initialWindowSize = setting.value
        case .maxFrameSize: maxFrameSize = setting.value
        case .maxHeaderListSize: maxHeaderListSize = setting.value
        default: break
        }
    }
}
