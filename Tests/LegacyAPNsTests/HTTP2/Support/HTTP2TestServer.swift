import APNsCore
import APNsCredentials
import APNsRuntime
import TestSupport

/// A tiny HTTP/2 provider API on loopback: TLS with ALPN `h2` and an optional client certificate,
/// one thread per connection running ``HTTP2TLSDriver``, every request judged by
/// ``ProviderRequestValidator`` (certificate auth with the client certificate's topics, token auth
/// accepted without a JWT check when there is none) and answered.
final class HTTP2TestServer: Sendable {
    /// What one connection looked like.
    struct Connection: Sendable {
        var applicationProtocol = ""
        var peerTopics: [String]?
        var handshakeError: LegacyAPNsError?
        var sessionError: LegacyAPNsError?
        var requests: [ProviderRequest] = []
        var responses: [ProviderResponse] = []
    }

    let endpoint: Endpoint
    private let connections = ConnectionLog()
    private let listener: Listener
    private let stopped = Locked(false)

    static let identity = TestGateway.serverIdentity
    static let ca = TestGateway.ca

    init(applicationProtocols: [String] = ["h2"], maximum: TLSConfiguration.Version = .tls13) throws {
        let listener = try Listener(host: "127.0.0.1", port: 0)
        let context = try TLSContext.server(
            identity: Self.identity, clientTrust: Self.ca, maximum: maximum, clientCertificates: .optional,
            applicationProtocols: applicationProtocols)
        self.listener = listener
        endpoint = listener.endpoint
        let connections = self.connections
        let stopped = self.stopped
        OSThread.start(name: "h2-test-server") {
            while !stopped.get() {
                guard let (socket, peer) = listener.accept(timeout: 30) else { continue }
                let handOver = SocketHandOver(socket)
                OSThread.start(name: "h2-test-connection") {
                    let record = Self.serve(handOver.socket, peer: peer, context: context)
                    connections.append(record)
                }
            }
        }
    }

    /// Stops accepting (connections being served finish on their own).
    func stop() {
        stopped.set(true)
        listener.wake()
    }

    /// Waits until `count` connections have finished (`timeout` only guards against a hang).
    func finishedConnections(_ count: Int, timeout: Double = 20) -> [Connection] {
        connections.wait(for: count, timeout: timeout)
    }

    private static func serve(_ socket: Socket, peer: String, context: TLSContext) -> Connection {
        var record = Connection()
        let tls: TLSSession
        do {
            tls = try TLSSession.accept(socket, context: context, peer: peer, timeout: 10, drainTimeout: 1)
        } catch {
            record.handshakeError = error as? LegacyAPNsError
            return record
        }
        record.applicationProtocol = tls.applicationProtocol
        let authorization: ProviderAuthorization
        if let certificate = tls.peerCertificate {
            record.peerTopics = certificate.topics.map(\.name)
            authorization = .certificate(topics: certificate.topics.map(\.name))
        } else {
            authorization = .token(.accepted(topics: nil))
        }
        let responder = Responder(authorization: authorization)
        do {
            let session = try HTTP2Session(role: .server, delegate: responder)
            responder.session = session
            let driver = HTTP2TLSDriver(tls: tls, session: session)
            // Only a guard against a hang: a loaded machine (the whole suite beside other builds) has
            // taken over 20 s for a test that keeps one connection through three token rotations.
            try driver.run(timeout: 60)
        } catch {
            record.sessionError = error as? LegacyAPNsError
        }
        tls.closeGently(drainTimeout: 1)
        record.requests = responder.accepted
        record.responses = responder.responses
        return record
    }

    /// Collects each request and answers it when it ends.
    private final class Responder: HTTP2SessionDelegate {
        let authorization: ProviderAuthorization
        weak var session: HTTP2Session?
        var heads: [Int32: ProviderRequestHead] = [:]
        var bodies: [Int32: [UInt8]] = [:]
        var accepted: [ProviderRequest] = []
        var responses: [ProviderResponse] = []
        var generator = SplitMix64(seed: 1)
        var headers = HTTP2HeaderList()

        init(authorization: ProviderAuthorization) { self.authorization = authorization }

        func didBeginHeaders(stream: Int32) { heads[stream] = ProviderRequestHead() }

        func didReceiveHeader(stream: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
            heads[stream]?.add(name: name, value: value)
        }

        func didEndHeaders(stream: Int32, endStream: Bool) { if endStream { answer(stream) } }

        func didReceiveData(stream: Int32, bytes: UnsafeRawBufferPointer) {
            bodies[stream, default: []].append(contentsOf: bytes)
        }

        func didEndData(stream: Int32) { answer(stream) }

        func didCloseStream(stream: Int32, errorCode: HTTP2ErrorCode) {
            heads[stream] = nil
            bodies[stream] = nil
        }

        private func answer(_ stream: Int32) {
            guard let head = heads[stream], let session else { return }
            var response: ProviderResponse
            switch ProviderRequestValidator.validate(head, body: bodies[stream] ?? [], authorization: authorization) {
            case .accepted(let request):
                accepted.append(request)
                response = .success(apnsID: request.apnsID)
            case .rejected(let rejection):
                response = rejection
            }
            if response.apnsID == nil { response.apnsID = .random(using: &generator) }
            responses.append(response)
            headers.removeAll()
            response.writeHeaders(into: &headers)
            try? session.submitResponse(stream: stream, headers: headers, body: response.bodyBytes)
        }
    }
}

/// Finished connections, handed from server threads to the test; waiting is on a condition
/// variable, woken by every append.
private final class ConnectionLog: @unchecked Sendable {
    // @unchecked: `records` is only touched with `lock` held.
    private let lock = ConditionLock()
    private var records: [HTTP2TestServer.Connection] = []

    func append(_ record: HTTP2TestServer.Connection) {
        lock.withLock {
            records.append(record)
            lock.broadcast()
        }
    }

    func wait(for count: Int, timeout: Double) -> [HTTP2TestServer.Connection] {
        let deadline = Monotonic.now() + timeout
        return lock.withLock {
            while records.count < count {
                let remaining = deadline - Monotonic.now()
                if remaining <= 0 || !lock.wait(timeout: remaining) && Monotonic.now() >= deadline { break }
            }
            return records
        }
    }
}

/// Moves an accepted socket to the thread that serves it.
private final class SocketHandOver: @unchecked Sendable {
    // @unchecked: written once here, then used only by the one thread it is handed to.
    let socket: Socket

    init(_ socket: Socket) { self.socket = socket }
}
