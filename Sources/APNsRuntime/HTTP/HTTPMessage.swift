import APNsCore

/// A request the runtime's ``HTTPServer`` read: `GET` or `DELETE`, no body.
package struct HTTPRequest: Sendable {
    /// `GET` or `DELETE`.
    package var method: String
    /// The path of the target, without its query (`/metrics`).
    package var path: String
    /// What followed `?` in the target (empty when nothing did), undecoded.
    package var query: String
    /// The header fields, names lowercased.
    package var fields: [(name: String, value: String)]
    /// "address:port" of the client.
    package var client: String

    /// The first value of field `name` (lowercase), if present.
    package func field(_ name: String) -> String? {
        fields.first { $0.name == name }?.value
    }
}

/// What a handler of the runtime's ``HTTPServer`` answers.
package struct HTTPResponse: Sendable {
    /// The body: bytes known at once, or a stream the handler writes as it goes.
    package enum Body: Sendable {
        /// The whole body (sent with its `Content-Length`; the connection may serve another request).
        case bytes([UInt8])
        /// A body produced over time, for server-sent events: the closure runs on the connection's
        /// thread and writes through the ``HTTPStreamWriter`` until it returns, or until the writer
        /// says the client left or the server stops; then the connection closes (no length is sent).
        case stream(@Sendable (HTTPStreamWriter) -> Void)
    }

    /// The status code (200, 404, 503, ...).
    package var status: Int
    /// Header fields besides those the server writes (`Content-Length`, `Connection`, `Date`-less).
    package var fields: [(name: String, value: String)]
    /// The body.
    package var body: Body

    /// A response with a complete body of `contentType`.
    package init(status: Int, contentType: String, body: [UInt8], fields: [(name: String, value: String)] = []) {
        self.status = status
        self.fields = [("Content-Type", contentType)] + fields
        self.body = .bytes(body)
    }

    /// A plain-text response (a line of text and a line break).
    package static func text(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "text/plain; charset=utf-8", body: Array((text + "\n").utf8))
    }

    /// A streaming response of `contentType` (`text/event-stream` for server-sent events), not cached.
    package static func stream(
        contentType: String, _ produce: @escaping @Sendable (HTTPStreamWriter) -> Void
    ) -> HTTPResponse {
        var response = HTTPResponse(status: 200, contentType: contentType, body: [])
        response.fields.append(("Cache-Control", "no-cache"))
        response.body = .stream(produce)
        return response
    }

    /// The reason phrase of the status codes the server and its handlers use.
    package static func reason(for status: Int) -> String {
        switch status {
        case 200: "OK"
        case 204: "No Content"
        case 400: "Bad Request"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 413: "Content Too Large"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: "Status \(status)"
        }
    }
}

/// Writes a streaming response (``HTTPResponse/Body/stream(_:)``) on the connection's thread.
package final class HTTPStreamWriter {
    private let transport: TCPTransport
    private let timeout: Double
    private let isStopping: @Sendable () -> Bool
    private var ended = false

    init(transport: TCPTransport, timeout: Double, isStopping: @escaping @Sendable () -> Bool) {
        self.transport = transport
        self.timeout = timeout
        self.isStopping = isStopping
    }

    /// Whether to go on: the server is not stopping and the client has not left (as far as known).
    package var isOpen: Bool { !ended && !isStopping() }

    /// Writes `bytes` (waiting for the client as needed, each wait bounded by the server's write
    /// timeout). False when the client left, stalled or the server stops: return then.
    @discardableResult
    package func write(_ bytes: [UInt8]) -> Bool {
        guard isOpen else { return false }
        if transport.writeAll(bytes, timeout: timeout) != nil { ended = true }
        return !ended
    }

    /// Waits up to `timeout` seconds between writes, returning early (false) when the client
    /// closes or the server stops; true when the time passed and the stream may go on.
    package func pause(_ timeout: Double) -> Bool {
        let deadline = Monotonic.now() + timeout
        var scratch = [UInt8](repeating: 0, count: 512)
        while isOpen {
            let remaining = deadline - Monotonic.now()
            guard remaining > 0 else { return true }
            guard transport.wait(for: .readable, timeout: Swift.min(remaining, HTTPServer.stopCheckInterval)) else {
                continue
            }
            // Whatever a client sends on a stream is ignored; its close ends the stream.
            switch scratch.withUnsafeMutableBytes({ transport.read(into: $0) }) {
            case .closed, .failed: ended = true
            case .done, .wantRead, .wantWrite: continue
            }
        }
        return false
    }
}

extension HTTPRequest {
    /// The query's `name=value` pairs in order, percent-decoded (`+` is a space, as forms send
    /// it); a pair that does not decode to UTF-8 is left out.
    package var queryItems: [(name: String, value: String)] {
        query.split(separator: "&").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.formDecoded(parts[0]),
                let value = Self.formDecoded(parts.count > 1 ? parts[1] : "")
            else { return nil }
            return (name, value)
        }
    }

    /// The first value of query parameter `name`, if present.
    package func queryItem(_ name: String) -> String? {
        queryItems.first { $0.name == name }?.value
    }

    private static func formDecoded(_ text: Substring) -> String? {
        let utf8 = Array(text.utf8)
        var decoded: [UInt8] = []
        decoded.reserveCapacity(utf8.count)
        var index = 0
        while index < utf8.count {
            switch utf8[index] {
            case UInt8(ascii: "+"):
                decoded.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard index + 2 < utf8.count, let high = JSONScanner.hexValue(utf8[index + 1]),
                    let low = JSONScanner.hexValue(utf8[index + 2])
                else { return nil }
                decoded.append(high << 4 | low)
                index += 2
            case let byte:
                decoded.append(byte)
            }
            index += 1
        }
        return String(validating: decoded, as: UTF8.self)
    }
}
