internal import APNsRuntime

/// An HTTP proxy that provider connections go through: the client connects to the proxy, asks
/// it for a tunnel with `CONNECT api.push.apple.com:443 HTTP/1.1` (with `Proxy-Authorization:
/// Basic` when a user is given), and runs TLS (ALPN `h2`) to the real server inside the tunnel,
/// verifying the server's certificate against the real host name as always.
///
/// A proxy that refuses the tunnel fails the connection with one error naming the proxy and its
/// status line: 407 (authentication required or wrong) and 403 (a port or host it does not allow)
/// as ``LegacyAPNsError/Code-swift.struct/protocolRefused``, which stops a send at once; 502 and
/// other failures as ``LegacyAPNsError/Code-swift.struct/connectionFailed``, which is retried.
///
/// ```swift
/// configuration.proxy = try ProviderProxy(url: "http://user:secret@proxy.internal:3128")
/// // or as curl would: HTTPS_PROXY / https_proxy, minus NO_PROXY / no_proxy
/// configuration.proxy = try ProviderProxy.fromEnvironment(environment, for: configuration.server.endpoint.host)
/// ```
public struct ProviderProxy: Hashable, Sendable, CustomStringConvertible {
    /// The proxy's address.
    public var endpoint: Endpoint
    /// The user for Basic proxy authentication, if any.
    public var username: String?
    /// The password for Basic proxy authentication (with ``username``).
    public var password: String?

    /// Creates a proxy address, with credentials if it needs them.
    public init(endpoint: Endpoint, username: String? = nil, password: String? = nil) {
        self.endpoint = endpoint
        self.username = username
        self.password = password
    }

    /// Parses `http://[user:password@]host:port` (user and password percent-encoded, as in any URL;
    /// a trailing `/` is allowed). A mistake is an ``LegacyAPNsError/Code-swift.struct/invalidValue``
    /// error whose reason begins with `name` and says what to change.
    public init(url: String, naming name: String = "the proxy") throws {
        func bad(_ text: String) -> LegacyAPNsError { LegacyAPNsError(.invalidValue, "\(name) \(text)") }
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else {
            throw bad("takes a URL, http://[user:password@]host:port, not '\(url)'")
        }
        let scheme = url[..<colon].lowercased()
        guard scheme == "http" else {
            throw bad("must be an http:// URL (the tunnel itself carries TLS), not \(scheme)://")
        }
        var rest = url[colon...].dropFirst(3)
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/"), !rest.contains("?"), !rest.contains("#") else {
            throw bad("takes no path: http://[user:password@]host:port")
        }
        var username: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let parts = userInfo.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard let user = Self.percentDecoded(parts[0]),
                let secret = Self.percentDecoded(parts.dropFirst().first ?? "")
            else { throw bad("has a broken %-escape in its user or password") }
            username = user
            password = secret
        }
        let endpoint = try Endpoint(parsing: String(rest), naming: name, examplePort: 3128)
        self.init(endpoint: endpoint, username: username, password: password)
    }

    /// The proxy the environment names for connections to `host`, as curl reads it: `HTTPS_PROXY`
    /// (or `https_proxy`), unless `NO_PROXY` (or `no_proxy`) lists the host: comma-separated names,
    /// each matching the host itself and its subdomains (a leading `.` is optional), or `*` for
    /// every host. Nil when no proxy applies. The library never reads the environment itself: pass
    /// it (`ProcessInfo.processInfo.environment`).
    public static func fromEnvironment(_ environment: [String: String], for host: String) throws -> ProviderProxy? {
        let setting = [environment["HTTPS_PROXY"], environment["https_proxy"]].compactMap { $0 }.first { !$0.isEmpty }
        guard let setting else { return nil }
        let exclusions = environment["NO_PROXY"] ?? environment["no_proxy"] ?? ""
        if excludes(exclusions, host: host) { return nil }
        return try ProviderProxy(url: setting, naming: "HTTPS_PROXY")
    }

    /// Whether a `NO_PROXY` list names `host`.
    static func excludes(_ list: String, host: String) -> Bool {
        let host = host.lowercased()
        for item in list.split(separator: ",") {
            var entry = String(item).trimmingCharacters(in: " \t").lowercased()
            if entry == "*" { return true }
            if entry.hasPrefix("[") || entry.filter({ $0 == ":" }).count > 1 {
                // An IPv6 literal, possibly bracketed.
                entry = entry.trimmingCharacters(in: "[]")
            } else if let colon = entry.lastIndex(of: ":") {
                entry = String(entry[..<colon])  // host:port: the port does not matter here
            }
            if entry.hasPrefix(".") { entry.removeFirst() }
            guard !entry.isEmpty else { continue }
            if host == entry || host.hasSuffix("." + entry) { return true }
        }
        return false
    }

    /// `http://host:port`, never the credentials.
    public var description: String { "http://\(endpoint)" }

    /// The runtime's tunnel for this proxy.
    var tunnel: ProxyTunnel {
        ProxyTunnel(endpoint: endpoint, credentials: username.map { "\($0):\(password ?? "")" })
    }

    private static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next(), let low = iterator.next(),
                let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
            else { return nil }
            bytes.append(value)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var text = self[...]
        while let first = text.first, set.contains(first) { text.removeFirst() }
        while let last = text.last, set.contains(last) { text.removeLast() }
        return String(text)
    }
}
