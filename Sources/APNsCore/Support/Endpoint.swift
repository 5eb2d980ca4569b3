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
    ///
    /// A mistake is an ``LegacyAPNsError/Code-swift.struct/invalidValue`` error whose reason
    /// begins with `name` (an option such as `--gateway`) and says what to change: a URL ("takes
    /// HOST:PORT, not a URL: drop 'https://'"), a port over 65535, or no port at all ("needs a
    /// port: HOST:PORT, e.g. host:2195", with `examplePort`). There is no default port.
    public init(parsing text: String, naming name: String = "the address", examplePort: UInt16 = 443) throws {
        func bad(_ predicate: String) -> LegacyAPNsError { LegacyAPNsError(.invalidValue, name + predicate) }
        if let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") {
            throw bad(" takes HOST:PORT, not a URL: drop '\(text[..<colon])://'")
        }
        var hostPart: Substring
        var portPart: Substring?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                throw bad(": '\(text)' has no ']' closing its IPv6 address")
            }
            hostPart = text[text.startIndex...close]
            let rest = text[text.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw bad(": expected ':PORT' after '\(hostPart)', got '\(rest)'") }
                portPart = rest.dropFirst()
            }
        } else if let colon = text.lastIndex(of: ":") {
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
        } else {
            hostPart = text[...]
        }
        guard !hostPart.isEmpty, hostPart != "[]" else {
            throw bad(" needs a host: HOST:PORT, e.g. 127.0.0.1:\(examplePort)")
        }
        guard let portPart, !portPart.isEmpty else {
            throw bad(" needs a port: HOST:PORT, e.g. \(hostPart):\(examplePort)")
        }
        guard portPart.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw bad(": port '\(portPart)' is not a number from 1 to 65535")
        }
        guard let port = UInt16(portPart) else { throw bad(": port \(portPart) is over 65535") }
        guard port > 0 else { throw bad(": port 0 is not a port (1 to 65535)") }
        if hostPart.hasPrefix("[") { hostPart = hostPart.dropFirst().dropLast() }
        self.init(host: String(hostPart), port: port)
    }

    /// `host:port`, with IPv6 literals in brackets.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
