import APNsCore
import APNsRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// The smallest connection shell: one ``HTTP2Session`` over one ``TLSSession``, on the calling
/// thread. Writes everything the session has in one buffer, reads what arrives, until a condition
/// holds, the connection ends, or a deadline passes (a failure guard, not a clock to wait on:
/// every wait is a `poll(2)` that returns as soon as the socket is ready).
final class HTTP2TLSDriver {
    let tls: TLSSession
    let session: HTTP2Session
    private var output = ByteWriter(capacity: 64 * 1024)
    private let input = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)

    init(tls: TLSSession, session: HTTP2Session) {
        self.tls = tls
        self.session = session
    }

    deinit { input.deallocate() }

    /// Runs until `done()` holds (true), or the connection is over (false).
    ///
    /// - Throws: the session's protocol error (after sending its GOAWAY), a TLS failure, or
    ///   `timedOut` after `timeout` seconds.
    @discardableResult
    func run(timeout: Double, until done: () -> Bool = { false }) throws -> Bool {
        let deadline = Monotonic.now() + timeout
        while true {
            try flush(deadline: deadline)
            if done() { return true }
            guard session.wantsRead || session.wantsWrite else { return false }
            guard try readSome(deadline: deadline) else { return false }
        }
    }

    /// Writes all the session's pending output.
    func flush(deadline: Double) throws {
        while session.wantsWrite {
            output.clear()
            try session.send(into: &output)
            if output.isEmpty { return }
            var offset = 0
            while offset < output.count {
                let result = output.withUnsafeReadableBytes {
                    tls.write(UnsafeRawBufferPointer(rebasing: $0[offset...]))
                }
                switch result {
                case .done(let count): offset += count
                case .wantWrite: try wait(.writable, until: deadline)
                case .wantRead: try wait(.readable, until: deadline)
                case .closed: throw LegacyAPNsError(.connectionFailed, "\(tls.peer) closed while we were writing")
                case .failed(let error): throw error
                }
            }
        }
    }

    /// Reads once (waiting for the socket when nothing is buffered) and feeds the session.
    /// Returns false when the peer closed.
    private func readSome(deadline: Double) throws -> Bool {
        while true {
            switch tls.read(into: input) {
            case .done(let count):
                do {
                    try session.receive(UnsafeRawBufferPointer(rebasing: input[0..<count]))
                } catch {
                    try? flush(deadline: deadline)  // nghttp2's GOAWAY, then give up
                    throw error
                }
                return true
            case .wantRead: try wait(.readable, until: deadline)
            case .wantWrite: try wait(.writable, until: deadline)
            case .closed: return false
            case .failed(let error): throw error
            }
        }
    }

    private func wait(_ events: Readiness, until deadline: Double) throws {
        let remaining = deadline - Monotonic.now()
        guard remaining > 0, tls.wait(for: events, timeout: remaining) else {
            throw LegacyAPNsError(.timedOut, "no progress with \(tls.peer) in time")
        }
    }
}
