import APNsRuntime
import FeedbackClient
import LegacyAPNs
import TestSupport

/// A one-connection TLS server that sends chosen raw bytes as a feedback service would (in
/// chunks of `chunkSize` bytes, one TLS record each, optionally `pause` seconds apart: a
/// trickling service), then closes, or stays silent and open: for the streams the simulator never
/// produces (a tuple cut short, a token length of 0, silence, a trickle).
final class RawFeedbackServer: Sendable {
    enum Ending: Sendable {
        /// close_notify and FIN after the bytes.
        case close
        /// Keep the connection open and say nothing more until ``stop()``.
        case holdOpen
    }

    let endpoint: Endpoint
    private let listener: Listener
    private let stopped = Locked(false)

    init(bytes: [UInt8], chunkSize: Int = 16 * 1024, pause: Double = 0, ending: Ending = .close) throws {
        let listener = try Listener(host: "127.0.0.1", port: 0)
        let context = try TLSContext.server(
            identity: TestGateway.serverIdentity, clientTrust: TestGateway.ca, maximum: .tls13)
        self.listener = listener
        self.endpoint = listener.endpoint
        let stopped = self.stopped
        OSThread.start(name: "raw-feedback") {
            // Waits for the client until stop(): a loaded machine may take a while to connect, and
            // a test whose client found nobody accepting would wait forever for its first tuple.
            var accepted: (Socket, String)?
            while accepted == nil, !stopped.get() { accepted = listener.accept(timeout: 1) }
            guard let (socket, client) = accepted,
                let session = try? TLSSession.accept(
                    socket, context: context, peer: client, timeout: 30, drainTimeout: 1)
            else { return }
            var offset = 0
            writing: while offset < bytes.count {
                let end = min(bytes.count, offset + chunkSize)
                var sent = offset
                while sent < end {
                    let result = bytes.withUnsafeBytes {
                        session.write(UnsafeRawBufferPointer(rebasing: $0[sent..<end]))
                    }
                    switch result {
                    case .done(let count): sent += count
                    case .wantWrite: _ = session.wait(for: .writable, timeout: 5)
                    case .wantRead: _ = session.wait(for: .readable, timeout: 5)
                    case .closed, .failed: break writing
                    }
                }
                offset = end
                if pause > 0, offset < bytes.count {
                    // Trickle: wait, but notice the client leaving (readable: its FIN) or stop().
                    let resume = Monotonic.now() + pause
                    while Monotonic.now() < resume {
                        if stopped.get() || session.wait(for: .readable, timeout: min(0.05, resume - Monotonic.now())) {
                            break writing
                        }
                    }
                }
            }
            if case .holdOpen = ending {
                // Until the client goes away (its FIN makes the socket readable) or stop().
                while !stopped.get(), !session.wait(for: .readable, timeout: 0.05) {}
            }
            session.closeGently(drainTimeout: 1)
        }
    }

    /// The service as the reader's configuration names it.
    var service: FeedbackService { .custom(host: endpoint.host, port: endpoint.port) }

    /// Ends a held-open connection, and a wait for a client that never came.
    func stop() {
        stopped.set(true)
        listener.wake()
    }
}
