import APNsCore
import APNsCredentials

#if canImport(Glibc)
    import Glibc
#endif

/// A non-blocking TCP socket descriptor, owned: closing it is this type's job.
package final class Socket {
    package private(set) var descriptor: Int32

    package init(adopting descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit { close() }

    package func close() {
        if descriptor >= 0 {
            _ = Glibc.close(descriptor)
            descriptor = -1
        }
    }

    /// Stops sending (sends FIN) but keeps reading.
    package func shutdownWrite() {
        if descriptor >= 0 { _ = Glibc.shutdown(descriptor, Int32(SHUT_WR)) }
    }

    /// Connects to `host:port` within `timeout` seconds, trying every address the name resolves to.
    package static func connect(host: String, port: UInt16, timeout: Double) throws -> Socket {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            let why = String(cString: gai_strerror(status))
            throw LegacyAPNsError(.connectionFailed, "cannot resolve \(host): \(why)")
        }
        defer { freeaddrinfo(list) }
        var lastError = "no address"
        var node: UnsafeMutablePointer<addrinfo>? = first
        let deadline = Monotonic.now() + timeout
        while let info = node {
            node = info.pointee.ai_next
            let descriptor = Glibc.socket(
                info.pointee.ai_family,
                Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                0)
            guard descriptor >= 0 else {
                lastError = errnoText()
                continue
            }
            let socket = Socket(adopting: descriptor)
            if Glibc.connect(descriptor, info.pointee.ai_addr, info.pointee.ai_addrlen) != 0 {
                guard errno == EINPROGRESS else {
                    lastError = errnoText()
                    continue
                }
                let remaining = deadline - Monotonic.now()
                guard remaining > 0, socket.wait(for: .writable, timeout: remaining) else {
                    lastError = "timed out after \(formatSeconds(timeout))"
                    continue
                }
                var code: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &code, &length)
                guard code == 0 else {
                    lastError = String(cString: strerror(code))
                    continue
                }
            }
            socket.setNoDelay()
            return socket
        }
        throw LegacyAPNsError(.connectionFailed, "cannot connect to \(host):\(port): \(lastError)")
    }

    package func setNoDelay() {
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Waits until the socket is ready for `events` or `timeout` seconds pass. Returns true when
    /// ready (or hung up / in error, which the next read or write reports). This is the one
    /// place a connection waits: every transport loop comes here (event loops owning many
    /// sockets wait in ``Poller``).
    package func wait(for events: Readiness, timeout: Double) -> Bool {
        var descriptor = pollfd(fd: self.descriptor, events: Poll.events(events), revents: 0)
        return Poll.wait(&descriptor, timeout: timeout) > 0 && descriptor.revents != 0
    }

    /// Waits like ``wait(for:timeout:)``, and also returns (true) when `wake` is signalled.
    package func wait(for events: Readiness, timeout: Double, wake: WakeSignal) -> Bool {
        var descriptors = [
            pollfd(fd: descriptor, events: Poll.events(events), revents: 0),
            pollfd(fd: wake.readDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        let result = Poll.wait(&descriptors, timeout: timeout)
        if descriptors[1].revents != 0 { wake.clear() }
        return result > 0
    }

    /// Reads and throws away raw bytes until the peer closes or `timeout` seconds pass (after a
    /// TLS shutdown, so that closing does not reset the connection under unread data).
    package func drain(for timeout: Double) {
        let deadline = Monotonic.now() + timeout
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let remaining = deadline - Monotonic.now()
            guard remaining > 0, wait(for: .readable, timeout: remaining) else { return }
            let count = scratch.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 { continue }
            if count < 0, errno == EINTR || errno == EAGAIN { continue }
            return
        }
    }

    /// Reads and throws away the raw bytes that have arrived, without waiting (the non-blocking
    /// form of ``drain(for:)``, for event loops). False once the peer has closed or the socket failed.
    package func discardAvailable() -> Bool {
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = scratch.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 { continue }
            if count < 0, errno == EINTR { continue }
            return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
        }
    }
}

extension Socket {
    /// Closes with a TCP reset instead of a FIN (SO_LINGER 0): the peer's next read fails with
    /// ECONNRESET and whatever it had not read is lost, as when a server crashes mid-flight.
    package func abort() {
        guard descriptor >= 0 else { return }
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close()
    }
}
