import APNsCore
import APNsCredentials
internal import APNsRuntime

/// Prepares a connection slot's next TLS connection on a helper thread while the current one
/// works, so that reconnecting after an error response does not stall the slot for a handshake.
///
/// The slot asks for a spare once the current connection's session is resumable (at once with
/// TLS 1.2, once the ticket has arrived with TLS 1.3), and takes it when it needs to reconnect. A
/// spare is checked before use (a gateway may have closed it meanwhile) and dropped when older than
/// ``maximumAge``. Slots use spares only once errors have made them reconnect, so an error-free send
/// opens no extra connection.
final class SpareConnector: @unchecked Sendable {
    // @unchecked: every field is guarded by `lock`; a TLSSession and a TLSTicket are handed between
    // the slot's thread and the helper thread under it, never used by both at once.

    /// Spares older than this are closed instead of used.
    static let maximumAge = 20.0

    private let lock = ConditionLock()
    private let endpoint: Endpoint
    private let context: TLSContext
    private let timeout: Double
    private var request: TLSTicket??
    private var ready: (session: TLSSession, since: Double)?
    private var helperStarted = false
    private var helperRunning = false
    private var busy = false
    private var stopped = false

    init(endpoint: Endpoint, context: TLSContext, timeout: Double) {
        self.endpoint = endpoint
        self.context = context
        self.timeout = timeout
    }

    /// Asks for a spare resuming `ticket`, unless one is ready or being made.
    func prepare(resuming ticket: TLSTicket?) {
        let start: Bool = lock.withLock {
            guard !stopped, ready == nil, !busy, request == nil else { return false }
            request = .some(ticket)
            lock.broadcast()
            defer {
                if !helperStarted { helperRunning = true }
                helperStarted = true
            }
            return !helperStarted
        }
        if start { OSThread.start(name: "apns-spare") { self.helperLoop() } }
    }

    /// A ready, healthy spare, or nil (then the slot connects itself).
    func take() -> TLSSession? {
        guard
            let (session, since) = lock.withLock({ () -> (TLSSession, Double)? in
                defer { ready = nil }
                return ready
            })
        else { return nil }
        guard Monotonic.now() - since < Self.maximumAge, Self.isHealthy(session) else {
            session.close()
            return nil
        }
        return session
    }

    /// Closes any spare and ends the helper thread, waiting for a connection attempt in progress
    /// (bounded by the connect timeout), so that nothing of the send runs once it has returned.
    func stop() {
        let spare: TLSSession? = lock.withLock {
            stopped = true
            lock.broadcast()
            while helperRunning { _ = lock.wait(timeout: 0.05) }
            defer { ready = nil }
            return ready?.session
        }
        spare?.close()
    }

    /// A spare must not have been closed or written to by the gateway while it waited. Reading
    /// also consumes a TLS 1.3 ticket the gateway sent after the handshake.
    private static func isHealthy(_ session: TLSSession) -> Bool {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 8)
        defer { buffer.deallocate() }
        switch session.read(into: buffer) {
        case .wantRead, .wantWrite: return true
        case .done, .closed, .failed: return false
        }
    }

    private func helperLoop() {
        defer {
            lock.withLock {
                helperRunning = false
                lock.broadcast()
            }
        }
        while true {
            let ticket: TLSTicket?? = lock.withLock {
                while request == nil, !stopped { _ = lock.wait(timeout: 1) }
                if stopped { return nil }
                busy = true
                defer { request = nil }
                return request
            }
            guard let ticket else { return }
            let session = try? TLSSession.connect(to: endpoint, context: context, timeout: timeout, resuming: ticket)
            let unwanted: TLSSession? = lock.withLock {
                busy = false
                guard let session else { return nil }
                if stopped { return session }
                ready = (session, Monotonic.now())
                return nil
            }
            unwanted?.close()
        }
    }
}
