import APNsCore
import APNsCredentials
import Synchronization

/// A small HTTP/1.1 server over plain TCP for the endpoints an operator or a browser asks a
/// long-running command for (`/metrics`, `/healthz`, `/readyz`, the inbox): `GET` and `DELETE`
/// (and `POST`, where ``Limits/methods`` allows it), no request bodies, keep-alive, and streaming responses
/// (``HTTPResponse/Body/stream(_:)``, for server-sent events).
///
/// It is bounded so that nobody can hold it: at most ``Limits/maximumConnections`` connections
/// (one more is answered 503 and closed at once), a request head of at most
/// ``Limits/maximumRequestSize`` bytes (431), ``Limits/requestTimeout`` from a request's first byte
/// to its last (408: trickling bytes cannot keep a connection), ``Limits/idleTimeout`` between
/// requests, and ``Limits/writeTimeout`` for a client to take what it is sent. Each connection is
/// served by a thread of its own that waits through the runtime's ``Transport`` (``TCPTransport``
/// over ``Socket/wait(for:timeout:)``); the accept thread waits in ``Listener/accept(timeout:)``.
/// It binds what it is told; callers pass 127.0.0.1 unless the user asked otherwise.
package final class HTTPServer: Sendable {
    /// What one client may hold.
    package struct Limits: Sendable {
        /// Connections served at once.
        package var maximumConnections = 16
        /// Bytes of a request head (start line and fields).
        package var maximumRequestSize = 8 * 1024
        /// Seconds from a request's first byte (a new connection's accept) to the end of its head.
        package var requestTimeout = 10.0
        /// Seconds a kept-alive connection may wait for its next request.
        package var idleTimeout = 15.0
        /// Seconds a client may take to accept more of a response.
        package var writeTimeout = 10.0
        /// The methods served (others are answered 405); none takes a body.
        package var methods: Set<String> = ["GET", "DELETE"]

        package init() {}
    }

    /// How often waits look whether the server is stopping.
    static let stopCheckInterval = 0.2

    private let listener: Listener
    private let limits: Limits
    private let handler: @Sendable (HTTPRequest) -> HTTPResponse
    private let stopping = Atomic<Bool>(false)
    private let threads = ThreadGroup()
    /// Connections being served (at most ``Limits/maximumConnections``).
    private let connections = Mutex(0)

    /// The address it listens on (the real port when 0 was asked for).
    package var endpoint: Endpoint { listener.endpoint }

    /// Binds `host:port` (0: a free port); nothing is served until ``start()``.
    package init(
        host: String, port: UInt16, limits: Limits = Limits(),
        handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse
    ) throws {
        self.listener = try Listener(host: host, port: port, backlog: 64)
        self.limits = limits
        self.handler = handler
    }

    /// Starts the accept thread.
    package func start() {
        startThread(name: "apns-http-accept") { self.acceptLoop() }
    }

    /// Stops: no new connections; requests being answered finish, streams end, idle connections
    /// close. Blocks the calling thread (an OS thread) until every thread has ended, at most about
    /// ``Limits/writeTimeout`` and a little.
    package func stop() {
        stopping.store(true, ordering: .relaxed)
        listener.wake()
        threads.join(timeout: .seconds(limits.writeTimeout + 1))
    }

    private var isStopping: Bool { stopping.load(ordering: .relaxed) }

    private func startThread(name: String, _ body: @escaping @Sendable () -> Void) {
        threads.start(name: name, body)
    }

    private func acceptLoop() {
        while !isStopping {
            guard let (socket, client) = listener.accept(timeout: 0.5) else { continue }
            let admitted = connections.withLock { connections in
                guard connections < limits.maximumConnections else { return false }
                connections += 1
                return true
            }
            let transport = TCPTransport(socket, peer: client)
            guard admitted else {
                // One short answer, never waited for: the client learns why, nobody is held.
                let refusal = Self.head(
                    status: 503, fields: [("Content-Length", "0"), ("Retry-After", "1")], keepsAlive: false)
                _ = refusal.withUnsafeBytes { transport.write($0) }
                transport.close()
                continue
            }
            let box = TransportBox(transport)
            startThread(name: "apns-http") {
                self.serve(box.transport)
                self.connections.withLock { $0 -= 1 }
            }
        }
    }

    // MARK: - A connection

    private func serve(_ transport: TCPTransport) {
        defer { transport.close() }
        var input: [UInt8] = []
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
        defer { scratch.deallocate() }
        // The current request's deadline: from the accept (or its first byte, on a kept-alive
        // connection); while none has begun, the idle deadline.
        var requestDeadline: Double? = Monotonic.now() + limits.requestTimeout
        var idleDeadline = Monotonic.now() + limits.idleTimeout
        while !isStopping {
            let parsed: (HTTPHead, Int)?
            switch input.withUnsafeBytes({ bytes in
                Result { () throws(HTTPHead.Failure) in
                    try HTTPHead.parse(bytes, maximumSize: limits.maximumRequestSize)
                }
            }) {
            case .success(let head):
                parsed = head
            case .failure(.tooLarge):
                answer(.text(431, "the request head is larger than \(limits.maximumRequestSize) bytes"), on: transport)
                return
            case .failure(.malformed(let what)):
                answer(.text(400, "malformed request: \(what)"), on: transport)
                return
            }
            if let (head, count) = parsed {
                input.removeFirst(count)
                guard respond(to: head, on: transport) else { return }
                requestDeadline = input.isEmpty ? nil : Monotonic.now() + limits.requestTimeout
                idleDeadline = Monotonic.now() + limits.idleTimeout
                continue
            }
            let now = Monotonic.now()
            let deadline = requestDeadline ?? idleDeadline
            guard now < deadline else {
                if requestDeadline != nil, !input.isEmpty {
                    answer(
                        .text(408, "the request took longer than \(formatSeconds(limits.requestTimeout))"),
                        on: transport)
                }
                return
            }
            guard transport.wait(for: .readable, timeout: Swift.min(deadline - now, Self.stopCheckInterval)) else {
                continue
            }
            switch transport.read(into: scratch) {
            case .done(let count):
                if input.isEmpty, requestDeadline == nil { requestDeadline = Monotonic.now() + limits.requestTimeout }
                input.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<count]))
            case .wantRead, .wantWrite:
                continue
            case .closed, .failed:
                return
            }
        }
    }

    /// Answers one request; false when the connection is to close.
    private func respond(to head: HTTPHead, on transport: TCPTransport) -> Bool {
        let (method, target, version) = head.start
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            answer(.text(505, "only HTTP/1.1 is served"), on: transport)
            return false
        }
        guard limits.methods.contains(String(method)) else {
            let allowed = limits.methods.sorted().reversed().joined(separator: ", ")
            var response = HTTPResponse.text(405, "\(method.prefix(16)) is not served (\(allowed) are)")
            response.fields.append(("Allow", allowed))
            answer(response, on: transport)
            return false
        }
        if head.field("transfer-encoding") != nil || (head.field("content-length").map { $0 != "0" } ?? false) {
            answer(.text(413, "requests have no body here"), on: transport)
            return false
        }
        guard target.hasPrefix("/") else {
            answer(.text(400, "the target must be a path"), on: transport)
            return false
        }
        let path: Substring
        let query: Substring
        if let mark = target.firstIndex(of: "?") {
            path = target[..<mark]
            query = target[target.index(after: mark)...]
        } else {
            path = target[...]
            query = ""
        }
        let request = HTTPRequest(
            method: method, path: String(path), query: String(query), fields: head.fields, client: transport.peer)
        let keepsAlive = version == "HTTP/1.1" && head.field("connection")?.lowercased() != "close"
        return answer(handler(request), on: transport, keepsAlive: keepsAlive)
    }

    /// Writes `response`; false when the connection is to close (it asked to, it streamed, or the
    /// client stopped taking bytes).
    @discardableResult
    private func answer(_ response: HTTPResponse, on transport: TCPTransport, keepsAlive: Bool = false) -> Bool {
        switch response.body {
        case .bytes(let body):
            var bytes = Self.head(
                status: response.status, fields: response.fields + [("Content-Length", "\(body.count)")],
                keepsAlive: keepsAlive && !isStopping)
            bytes.append(contentsOf: body)
            guard transport.writeAll(bytes, timeout: limits.writeTimeout) == nil else { return false }
            return keepsAlive && !isStopping
        case .stream(let produce):
            let head = Self.head(status: response.status, fields: response.fields, keepsAlive: false)
            guard transport.writeAll(head, timeout: limits.writeTimeout) == nil else { return false }
            produce(HTTPStreamWriter(transport: transport, timeout: limits.writeTimeout) { [self] in isStopping })
            return false
        }
    }

    private static func head(status: Int, fields: [(name: String, value: String)], keepsAlive: Bool) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(HTTPResponse.reason(for: status))\r\n"
        for (name, value) in fields { text += "\(name): \(value)\r\n" }
        text += keepsAlive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n"
        return Array(text.utf8)
    }
}

/// Moves a transport into the thread that will own it.
private final class TransportBox: @unchecked Sendable {
    // @unchecked: handed over exactly once, from the accept thread to the connection thread.
    let transport: TCPTransport
    init(_ transport: TCPTransport) { self.transport = transport }
}
