import APNsCore
import APNsRuntime
import Synchronization
import Testing

/// The runtime's small HTTP/1.1 server over real loopback sockets: what it serves, and that no
/// client can hold it (connections, request size, time per request).
@Suite struct HTTPServerTests {
    /// A server answering `/hello` with "hi", `/stream` with three server-sent events, 404 otherwise.
    static func withServer<Result>(
        limits: HTTPServer.Limits = HTTPServer.Limits(), _ body: (Endpoint) throws -> Result
    ) throws -> Result {
        let server = try HTTPServer(host: "127.0.0.1", port: 0, limits: limits) { request in
            switch request.path {
            case "/hello":
                return .text(200, "hi \(request.method) \(request.query)")
            case "/stream":
                return .stream(contentType: "text/event-stream") { writer in
                    for index in 1...3 {
                        guard writer.write(Array("data: {\"n\":\(index)}\n\n".utf8)) else { return }
                    }
                }
            default:
                return .text(404, "not found")
            }
        }
        server.start()
        defer { server.stop() }
        return try body(server.endpoint)
    }

    /// A raw client: writes `request`, reads until the server closes (or `until` bytes arrived).
    static func exchange(_ endpoint: Endpoint, _ request: String, until count: Int? = nil) throws -> String {
        let socket = try Socket.connect(host: endpoint.host, port: endpoint.port, timeout: 5)
        let transport = TCPTransport(socket, peer: "\(endpoint)")
        defer { transport.close() }
        #expect(transport.writeAll(Array(request.utf8), timeout: 5) == nil)
        return read(transport, until: count)
    }

    static func read(_ transport: TCPTransport, until count: Int? = nil) -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while count.map({ received.count < $0 }) ?? true {
            let result = buffer.withUnsafeMutableBytes { transport.read(into: $0, waitingUpTo: 10) }
            guard case .done(let n) = result else { break }
            received.append(contentsOf: buffer[0..<n])
        }
        return String(decoding: received, as: UTF8.self)
    }

    @Test func aGetIsAnsweredWithItsLengthAndTheConnectionClosesWhenAsked() throws {
        try Self.withServer { endpoint in
            let answer = try Self.exchange(endpoint, "GET /hello?x=1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(answer.contains("Content-Length: 11\r\n"))
            #expect(answer.contains("Connection: close\r\n"))
            #expect(answer.hasSuffix("\r\n\r\nhi GET x=1\n"))
        }
    }

    @Test func keepAliveServesPipelinedRequestsInOrderOnOneConnection() throws {
        try Self.withServer { endpoint in
            let answer = try Self.exchange(
                endpoint,
                "GET /hello?1 HTTP/1.1\r\nHost: a\r\n\r\nDELETE /hello?2 HTTP/1.1\r\nHost: a\r\n\r\n"
                    + "GET /nothing HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
            let statuses = answer.unicodeScalars.split(separator: "\n").compactMap { scalars in
                let line = String(String.UnicodeScalarView(scalars))
                return line.firstRange(of: "HTTP/1.1 ").map { String(line[$0.lowerBound...].dropLast()) }
            }
            #expect(statuses == ["HTTP/1.1 200 OK", "HTTP/1.1 200 OK", "HTTP/1.1 404 Not Found"])
            #expect(answer.contains("hi GET 1\n"))
            #expect(answer.contains("hi DELETE 2\n"))
        }
    }

    @Test(arguments: [
        ("POST /hello HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 405 "),
        ("GET /hello HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", "HTTP/1.1 413 "),
        ("GET /hello HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "HTTP/1.1 413 "),
        ("GET hello HTTP/1.1\r\n\r\n", "HTTP/1.1 400 "),
        ("GET /hello HTTP/2.0\r\n\r\n", "HTTP/1.1 505 "),
        ("GET /hello HTTP/1.1\r\nno colon here\r\n\r\n", "HTTP/1.1 400 "),
    ])
    func whatIsNotServedIsRefusedAndClosed(request: String, status: String) throws {
        try Self.withServer { endpoint in
            let answer = try Self.exchange(endpoint, request)
            #expect(answer.hasPrefix(status), "\(answer)")
            #expect(answer.contains("Connection: close\r\n"))
        }
    }

    @Test func aHeadLargerThanTheLimitIs431() throws {
        var limits = HTTPServer.Limits()
        limits.maximumRequestSize = 1024
        try Self.withServer(limits: limits) { endpoint in
            let answer = try Self.exchange(
                endpoint, "GET /hello HTTP/1.1\r\nX-Padding: \(String(repeating: "a", count: 4000))\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 431 "))
        }
    }

    /// A client that trickles its request (or never finishes it) is answered 408 and closed when
    /// the request's time is up, however many bytes it sends meanwhile.
    @Test func aRequestThatDoesNotCompleteInTimeIs408() throws {
        var limits = HTTPServer.Limits()
        limits.requestTimeout = 0.3
        try Self.withServer(limits: limits) { endpoint in
            let socket = try Socket.connect(host: endpoint.host, port: endpoint.port, timeout: 5)
            let transport = TCPTransport(socket, peer: "\(endpoint)")
            defer { transport.close() }
            #expect(transport.writeAll(Array("GET /hello HTTP/1.1\r\n".utf8), timeout: 5) == nil)
            for _ in 0..<3 {
                Monotonic.sleep(0.15)
                _ = transport.writeAll(Array("X-A: b\r\n".utf8), timeout: 5)
            }
            #expect(Self.read(transport).hasPrefix("HTTP/1.1 408 "))
        }
    }

    /// At the connection limit a further client is answered 503 at once and closed; the ones
    /// being served are not disturbed, and a place frees when one leaves.
    @Test func beyondTheConnectionLimitAClientGets503() throws {
        var limits = HTTPServer.Limits()
        limits.maximumConnections = 2
        try Self.withServer(limits: limits) { endpoint in
            let held = try (0..<2).map { _ in
                TCPTransport(try Socket.connect(host: endpoint.host, port: endpoint.port, timeout: 5), peer: "held")
            }
            // Both are served (a request each proves the server took them) and stay open.
            for transport in held {
                #expect(transport.writeAll(Array("GET /hello HTTP/1.1\r\n\r\n".utf8), timeout: 5) == nil)
                #expect(Self.read(transport, until: 60).hasPrefix("HTTP/1.1 200 "))
            }
            #expect(try Self.exchange(endpoint, "GET /hello HTTP/1.1\r\n\r\n").hasPrefix("HTTP/1.1 503 "))
            held[0].close()
            var answer = ""
            for _ in 0..<50 {
                answer = try Self.exchange(endpoint, "GET /hello HTTP/1.1\r\nConnection: close\r\n\r\n")
                if answer.hasPrefix("HTTP/1.1 200 ") { break }
                Monotonic.sleep(0.02)
            }
            #expect(answer.hasPrefix("HTTP/1.1 200 "))
            held[1].close()
        }
    }

    @Test func aStreamingResponseIsWrittenAsProducedAndEndsWithTheConnection() throws {
        try Self.withServer { endpoint in
            let answer = try Self.exchange(endpoint, "GET /stream HTTP/1.1\r\nHost: a\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(answer.contains("Content-Type: text/event-stream\r\n"))
            #expect(!answer.contains("Content-Length"))
            #expect(answer.hasSuffix("\r\n\r\ndata: {\"n\":1}\n\ndata: {\"n\":2}\n\ndata: {\"n\":3}\n\n"))
        }
    }

    /// The head parser keeps the decoder contract: nil (nothing consumed) until the blank line,
    /// whole or drip-fed; the head and its length once it is there.
    @Test func theHeadParserWaitsForTheBlankLineWholeOrDripFed() throws {
        let text = Array("GET /a?b HTTP/1.1\r\nHost:  x \r\nAccept: */*\r\n\r\nNEXT".utf8)
        for end in 0..<(text.count - 4) {
            let partial = try text[0..<end].withUnsafeBytes { try HTTPHead.parse($0, maximumSize: 1024) }
            #expect(partial == nil, "parsed at \(end) bytes")
        }
        let (head, count) = try #require(try text.withUnsafeBytes { try HTTPHead.parse($0, maximumSize: 1024) })
        #expect(count == text.count - 4)
        #expect(head.start == ("GET", "/a?b", "HTTP/1.1"))
        #expect(head.field("host") == "x")
        #expect(head.field("accept") == "*/*")
        let response = Array("HTTP/1.1 407 Proxy Authentication Required\n\n".utf8)
        let (answer, _) = try #require(try response.withUnsafeBytes { try HTTPHead.parse($0, maximumSize: 1024) })
        #expect(answer.start == ("HTTP/1.1", "407", "Proxy Authentication Required"))
    }
}
