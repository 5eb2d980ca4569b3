import APNsCore
import APNsCredentials

#if canImport(Glibc)
    import Glibc
#endif

/// A ``Transport`` over a plain TCP socket (no TLS): the runtime's HTTP/1.1 listener speaks it, and
/// a proxy's `CONNECT` exchange runs over it before TLS starts inside the tunnel. The waiting loops
/// are ``Transport``'s; this type only reads and writes without blocking.
package final class TCPTransport: Transport {
    package let socket: Socket
    package let peer: String

    package init(_ socket: Socket, peer: String) {
        self.socket = socket
        self.peer = peer
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        while true {
            let count = recv(socket.descriptor, buffer.baseAddress, buffer.count, 0)
            if count > 0 { return .done(count) }
            if count == 0 { return .closed }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return .wantRead }
            return .failed(LegacyAPNsError(.connectionFailed, "reading from \(peer) failed: \(errnoText())"))
        }
    }

    package func write(_ bytes: UnsafeRawBufferPointer) -> IOResult {
        while true {
            let count = send(socket.descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            if count >= 0 { return .done(count) }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { return .wantWrite }
            if errno == EPIPE || errno == ECONNRESET { return .closed }
            return .failed(LegacyAPNsError(.connectionFailed, "writing to \(peer) failed: \(errnoText())"))
        }
    }

    package func wait(for events: Readiness, timeout: Double) -> Bool {
        socket.wait(for: events, timeout: timeout)
    }

    package func wait(for events: Readiness, timeout: Double, wake: WakeSignal) -> Bool {
        socket.wait(for: events, timeout: timeout, wake: wake)
    }

    package func close() { socket.close() }

    package func closeGently(drainTimeout: Double) {
        socket.shutdownWrite()
        socket.drain(for: drainTimeout)
        socket.close()
    }
}
