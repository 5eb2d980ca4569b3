import APNsCore
import APNsRuntime

/// A session delegate that writes down everything, for scripts that read "event in, events out".
/// Requests (server) and responses (client) are assembled per stream; `onMessage` runs when one is
/// complete (the peer's END_STREAM), so a server can answer from inside the session's call.
final class HTTP2Recorder: HTTP2SessionDelegate {
    enum Event: Equatable, CustomStringConvertible {
        case headers(stream: Int32, endStream: Bool)
        case endData(stream: Int32)
        case closed(stream: Int32, HTTP2ErrorCode)
        case rst(stream: Int32, HTTP2ErrorCode)
        case goaway(lastStreamID: Int32, HTTP2ErrorCode, debugData: [UInt8])
        case settings(maxConcurrentStreams: UInt32?)
        case pingAck(UInt64)

        var description: String {
            switch self {
            case .headers(let stream, let endStream): "headers(\(stream), endStream: \(endStream))"
            case .endData(let stream): "endData(\(stream))"
            case .closed(let stream, let code): "closed(\(stream), \(code))"
            case .rst(let stream, let code): "rst(\(stream), \(code))"
            case .goaway(let last, let code, let debug):
                "goaway(\(last), \(code), \(String(decoding: debug, as: UTF8.self)))"
            case .settings(let max): "settings(max: \(max.map(String.init) ?? "-"))"
            case .pingAck(let payload): "pingAck(\(payload))"
            }
        }
    }

    /// One request or response as it arrived.
    struct Message {
        var fields: [(name: String, value: String)] = []
        var head = ProviderRequestHead()
        var response = ProviderResponse(status: 0)
        var body: [UInt8] = []
        var complete = false

        func value(_ name: String) -> String? { fields.first { $0.name == name }?.value }
    }

    private(set) var events: [Event] = []
    private(set) var messages: [Int32: Message] = [:]
    private(set) var settings: [HTTP2Settings] = []
    /// How many header callbacks arrived in all (to check nothing is decoded twice).
    private(set) var headerCount = 0
    var onMessage: ((Int32, Message) -> Void)?

    func didBeginHeaders(stream: Int32) {
        if messages[stream] == nil { messages[stream] = Message() }
    }

    func didReceiveHeader(stream: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        headerCount += 1
        messages[stream, default: Message()].fields.append(
            (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        messages[stream, default: Message()].head.add(name: name, value: value)
        _ = messages[stream, default: Message()].response.takeHeader(name: name, value: value)
    }

    func didEndHeaders(stream: Int32, endStream: Bool) {
        events.append(.headers(stream: stream, endStream: endStream))
        if endStream { finish(stream) }
    }

    func didReceiveData(stream: Int32, bytes: UnsafeRawBufferPointer) {
        messages[stream, default: Message()].body.append(contentsOf: bytes)
    }

    func didEndData(stream: Int32) {
        events.append(.endData(stream: stream))
        finish(stream)
    }

    func didCloseStream(stream: Int32, errorCode: HTTP2ErrorCode) {
        events.append(.closed(stream: stream, errorCode))
    }

    func didReceiveRstStream(stream: Int32, errorCode: HTTP2ErrorCode) {
        events.append(.rst(stream: stream, errorCode))
    }

    func didReceiveGoaway(lastStreamID: Int32, errorCode: HTTP2ErrorCode, debugData: UnsafeRawBufferPointer) {
        events.append(.goaway(lastStreamID: lastStreamID, errorCode, debugData: Array(debugData)))
    }

    func didReceiveSettings(_ settings: HTTP2Settings) {
        self.settings.append(settings)
        events.append(.settings(maxConcurrentStreams: settings.maxConcurrentStreams))
    }

    func didReceivePingAck(_ payload: UInt64) {
        events.append(.pingAck(payload))
    }

    private func finish(_ stream: Int32) {
        var message = messages[stream] ?? Message()
        message.complete = true
        let body = message.body
        if !body.isEmpty { body.withUnsafeBytes { _ = message.response.takeBody($0) } }
        messages[stream] = message
        onMessage?(stream, message)
    }

    /// The streams closed, in order, with their codes.
    var closedStreams: [(Int32, HTTP2ErrorCode)] {
        events.compactMap { if case .closed(let stream, let code) = $0 { (stream, code) } else { nil } }
    }

    /// Forgets recorded events (messages stay).
    func clearEvents() { events.removeAll() }
}
