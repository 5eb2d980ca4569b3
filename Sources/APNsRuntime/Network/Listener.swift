import APNsCore
import APNsCredentials

#if canImport(Glibc)
    import Glibc
#endif

/// A listening TCP socket, plus a wake-up pipe so a thread blocked in ``accept(timeout:)`` can be
/// told to stop.
package final class Listener: @unchecked Sendable {
    // @unchecked: the descriptors are set in init; `close()` is idempotent and only shrinks state.

    private let descriptor: Int32
    private let wakeRead: Int32
    private let wakeWrite: Int32
    /// The bound address (the real port when 0 was asked for).
    package let endpoint: Endpoint

    package init(host: String, port: UInt16, backlog: Int32 = 128) throws {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let info = list else {
            throw LegacyAPNsError(.connectionFailed, "cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        let descriptor = socket(
            info.pointee.ai_family,
            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else {
            throw LegacyAPNsError(.connectionFailed, "cannot create a socket: \(errnoText())")
        }
        var one: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(descriptor, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            let why = errnoText()
            Glibc.close(descriptor)
            throw LegacyAPNsError(.connectionFailed, "cannot listen on \(Endpoint(host: host, port: port)): \(why)")
        }
        guard listen(descriptor, backlog) == 0 else {
            let why = errnoText()
            Glibc.close(descriptor)
            throw LegacyAPNsError(.connectionFailed, "cannot listen on \(Endpoint(host: host, port: port)): \(why)")
        }
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard let (wakeRead, wakeWrite) = FileDescriptor.makePipe() else {
            Glibc.close(descriptor)
            throw LegacyAPNsError(.connectionFailed, "cannot create a pipe: \(errnoText())")
        }
        self.descriptor = descriptor
        self.wakeRead = wakeRead
        self.wakeWrite = wakeWrite
        self.endpoint = Endpoint(host: host, port: Self.port(of: address))
    }

    deinit {
        Glibc.close(descriptor)
        Glibc.close(wakeRead)
        Glibc.close(wakeWrite)
    }

    private static func port(of address: sockaddr_storage) -> UInt16 {
        var copy = address
        return withUnsafePointer(to: &copy) { pointer in
            if address.ss_family == sa_family_t(AF_INET6) {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    UInt16(bigEndian: $0.pointee.sin6_port)
                }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                UInt16(bigEndian: $0.pointee.sin_port)
            }
        }
    }

    /// Waits for a connection. Returns nil when woken by ``wake()`` or after `timeout` seconds.
    package func accept(timeout: Double) -> (Socket, String)? {
        var descriptors = [
            pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0),
        ]
        let result = Poll.wait(&descriptors, timeout: timeout)
        guard result > 0, descriptors[1].revents == 0, descriptors[0].revents & Int16(POLLIN) != 0 else { return nil }
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let client = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.accept(descriptor, $0, &length)
            }
        }
        guard client >= 0 else {
            // Out of descriptors (or memory): the pending connection stays queued and poll keeps
            // reporting it, so pause briefly instead of spinning.
            if [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(errno) { Monotonic.sleep(0.05) }
            return nil
        }
        _ = fcntl(client, F_SETFL, O_NONBLOCK)
        _ = fcntl(client, F_SETFD, FD_CLOEXEC)
        let socket = Socket(adopting: client)
        socket.setNoDelay()
        return (socket, Self.describe(address))
    }

    /// Wakes a thread blocked in ``accept(timeout:)``; later calls return nil at once.
    package func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    private static func string(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func describe(_ address: sockaddr_storage) -> String {
        var copy = address
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let port = Self.port(of: address)
        return withUnsafePointer(to: &copy) { pointer in
            if address.ss_family == sa_family_t(AF_INET6) {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { in6 in
                    var raw = in6.pointee.sin6_addr
                    inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
                    return "[\(Self.string(text))]:\(port)"
                }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { in4 in
                var raw = in4.pointee.sin_addr
                inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
                return "\(Self.string(text)):\(port)"
            }
        }
    }
}
