import APNsCore
import APNsRuntime
import TestSupport

/// A provider API that misbehaves on purpose, built from real parts: the project's TLS server
/// context (the fixture server identity, ALPN `h2`) on a loopback port, and then, per connection on
/// a thread of its own, a behaviour that writes raw bytes (garbage, hand-made HTTP/2 frames) or
/// runs an ``HTTP2Session`` server with a delegate of its choosing. Counts connections and the
/// bytes it wrote, so tests can say how much the client was made to swallow.
final class HostileProviderServer: Sendable {
    /// What the server does with one connection after the TLS handshake.
    typealias Behaviour = @Sendable (_ tls: TLSSession, _ server: HostileProviderServer) -> Void

    let endpoint: Endpoint
    let connections = Locked(0)
    let bytesWritten = Locked(0)
    private let listener: Listener
    private let stopped = Locked(false)

    init(_ behaviour: @escaping Behaviour) throws {
        let listener = try Listener(host: "127.0.0.1", port: 0)
        let context = try TLSContext.server(
            identity: TestGateway.serverIdentity, clientTrust: TestGateway.ca, maximum: .tls13,
            clientCertificates: .optional, applicationProtocols: ["h2"])
        self.listener = listener
        endpoint = listener.endpoint
        OSThread.start(name: "h2-hostile-server") { [self] in
            while !stopped.get() {
                guard let (socket, peer) = listener.accept(timeout: 30) else { continue }
                let handOver = HostileSocket(socket)
                connections.update { $0 += 1 }
                OSThread.start(name: "h2-hostile-connection") { [self] in
                    guard
                        let tls = try? TLSSession.accept(
                            handOver.socket, context: context, peer: peer, timeout: 10, drainTimeout: 1)
                    else { return }
                    behaviour(tls, self)
                    tls.close()
                }
            }
        }
    }

    var isStopped: Bool { stopped.get() }

    /// Stops accepting; connection behaviours see ``isStopped`` and end.
    func stop() {
        stopped.set(true)
        listener.wake()
    }

    // MARK: - Parts for behaviours

    /// Writes all of `bytes` (waiting for the socket), false when the client is gone or the server
    /// stopped.
    @discardableResult
    func write(_ bytes: [UInt8], to tls: TLSSession) -> Bool {
        var offset = 0
        while offset < bytes.count {
            if isStopped { return false }
            let result = bytes.withUnsafeBytes { tls.write(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            switch result {
            case .done(let count):
                offset += count
                bytesWritten.update { $0 += count }
            case .wantWrite: _ = tls.wait(for: .writable, timeout: 0.2)
            case .wantRead: _ = tls.wait(for: .readable, timeout: 0.2)
            case .closed, .failed: return false
            }
        }
        return true
    }

    /// Reads and throws away what the client sends, for at most `seconds`; false once it closed.
    @discardableResult
    func discardInput(from tls: TLSSession, seconds: Double) -> Bool {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 8)
        defer { buffer.deallocate() }
        let deadline = Monotonic.now() + seconds
        while Monotonic.now() < deadline, !isStopped {
            switch tls.read(into: buffer) {
            case .done: continue
            case .wantRead: _ = tls.wait(for: .readable, timeout: min(0.05, max(0, deadline - Monotonic.now())))
            case .wantWrite: _ = tls.wait(for: .writable, timeout: 0.05)
            case .closed, .failed: return false
            }
        }
        return true
    }

    /// One HTTP/2 frame (RFC 9113 §4.1): 24-bit length, type, flags, 31-bit stream, payload.
    static func frame(type: UInt8, flags: UInt8 = 0, stream: UInt32 = 0, payload: [UInt8] = []) -> [UInt8] {
        var writer = ByteWriter()
        writer.writeInteger(UInt8(truncatingIfNeeded: payload.count >> 16))
        writer.writeInteger(UInt16(truncatingIfNeeded: payload.count))
        writer.writeInteger(type)
        writer.writeInteger(flags)
        writer.writeInteger(stream & 0x7FFF_FFFF)
        return writer.bytes + payload
    }

    /// SETTINGS with SETTINGS_MAX_CONCURRENT_STREAMS (0x3) = `streams`, or an empty one.
    static func settings(maximumConcurrentStreams streams: UInt32? = nil) -> [UInt8] {
        var writer = ByteWriter()
        if let streams {
            writer.writeInteger(UInt16(3))
            writer.writeInteger(streams)
        }
        return frame(type: 0x4, payload: writer.bytes)
    }

    static let settingsAck = frame(type: 0x4, flags: 0x1)

    /// GOAWAY with a last-stream-id, an error code and debug data.
    static func goaway(lastStreamID: UInt32, errorCode: UInt32 = 0, debugData: [UInt8] = []) -> [UInt8] {
        var writer = ByteWriter()
        writer.writeInteger(lastStreamID)
        writer.writeInteger(errorCode)
        return frame(type: 0x7, payload: writer.bytes + debugData)
    }
}

/// Moves an accepted socket to the thread that serves it.
private final class HostileSocket: @unchecked Sendable {
    // @unchecked: written once here, then used only by the one thread it is handed to.
    let socket: Socket

    init(_ socket: Socket) { self.socket = socket }
}

/// An ``HTTP2Session`` server delegate that answers every complete request with what `answer`
/// says for its device token (the last path segment, as hex).
final class ScriptedResponder: HTTP2SessionDelegate {
    weak var session: HTTP2Session?
    private var paths: [Int32: String] = [:]
    private var headers = HTTP2HeaderList()
    private let answer: (String) -> (status: Int, body: [UInt8])

    init(answer: @escaping (String) -> (status: Int, body: [UInt8])) { self.answer = answer }

    func didReceiveHeader(stream: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        if String(decoding: name, as: UTF8.self) == ":path" { paths[stream] = String(decoding: value, as: UTF8.self) }
    }

    func didEndHeaders(stream: Int32, endStream: Bool) { if endStream { respond(stream) } }

    func didEndData(stream: Int32) { respond(stream) }

    func didCloseStream(stream: Int32, errorCode: HTTP2ErrorCode) { paths[stream] = nil }

    private func respond(_ stream: Int32) {
        guard let path = paths[stream], let session else { return }
        let token = String(path.split(separator: "/").last ?? "")
        let (status, body) = answer(token)
        headers.removeAll()
        ProviderResponse(status: status).writeHeaders(into: &headers)
        try? session.submitResponse(stream: stream, headers: headers, body: body)
    }
}
