/// A host and port.
public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
    /// A host name or an IP address.
    public var host: String
    /// The TCP port.
    public var port: UInt16

    /// Creates an endpoint.
    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` (IPv6 literals in brackets: `[::1]:2195`).
    public init(parsing text: String) throws {
        let bad = LegacyAPNsError(.invalidValue, "expected HOST:PORT, got '\(text)'")
        var hostPart: Substring
        var portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw bad }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw bad }
            portPart = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw bad }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        }
        guard !hostPart.isEmpty, let port = UInt16(portPart), port > 0 else { throw bad }
        self.init(host: String(hostPart), port: port)
    }

    /// `host:port`, with IPv6 literals in brackets.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
