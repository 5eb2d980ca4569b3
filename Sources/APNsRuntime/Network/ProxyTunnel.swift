import APNsCore
import APNsCredentials

/// An HTTP proxy's tunnel (`CONNECT host:port HTTP/1.1`, RFC 9110 §9.3.6): the dialer's step
/// between the TCP connection and TLS when a provider network reaches the internet only through a
/// proxy. ``TLSSession/connect(to:context:timeout:resuming:through:)`` connects to the proxy, asks it
/// for a tunnel to the real server here, and runs TLS inside it, verifying the real server's name
/// as always (the proxy sees only the host and port it is asked for, then encrypted bytes).
package struct ProxyTunnel: Hashable, Sendable, CustomStringConvertible {
    /// The proxy's address.
    package var endpoint: Endpoint
    /// `user:password` for `Proxy-Authorization: Basic`, if the proxy wants it.
    package var credentials: String?

    package init(endpoint: Endpoint, credentials: String? = nil) {
        self.endpoint = endpoint
        self.credentials = credentials
    }

    /// "the proxy HOST:PORT", for messages (never the credentials).
    package var description: String { "the proxy \(endpoint)" }

    /// The `CONNECT` request for `target`.
    package func request(to target: Endpoint) -> [UInt8] {
        let authority = target.host.contains(":") ? "[\(target.host)]:\(target.port)" : "\(target.host):\(target.port)"
        var text = "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n"
        if let credentials {
            text += "Proxy-Authorization: Basic \(Self.base64(Array(credentials.utf8)))\r\n"
        }
        return Array((text + "\r\n").utf8)
    }

    /// Standard base64 with padding (RFC 4648 §4), from the base64url encoder.
    static func base64(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        Base64URL.encode(bytes, into: &output)
        for index in output.indices {
            if output[index] == UInt8(ascii: "-") { output[index] = UInt8(ascii: "+") }
            if output[index] == UInt8(ascii: "_") { output[index] = UInt8(ascii: "/") }
        }
        while output.count % 4 != 0 { output.append(UInt8(ascii: "=")) }
        return String(decoding: output, as: UTF8.self)
    }

    /// Connects to the proxy and opens a tunnel to `target` within `timeout` seconds: the socket,
    /// ready for TLS to `target`. A refusal (407, 403, 502, ...) is one error naming the proxy and
    /// its status line: ``LegacyAPNsError/Code-swift.struct/protocolRefused`` for a 4xx (asking
    /// again cannot help), ``LegacyAPNsError/Code-swift.struct/connectionFailed`` otherwise (the
    /// proxy could not reach the server: that may heal).
    package func connect(to target: Endpoint, timeout: Double) throws -> Socket {
        let deadline = Monotonic.now() + timeout
        let socket: Socket
        do {
            socket = try Socket.connect(host: endpoint.host, port: endpoint.port, timeout: timeout)
        } catch let error as LegacyAPNsError {
            throw LegacyAPNsError(.connectionFailed, "\(self): \(error.reason)", underlying: error)
        }
        let transport = TCPTransport(socket, peer: description)
        if let failure = transport.writeAll(request(to: target), timeout: Swift.max(0.001, deadline - Monotonic.now()))
        {
            throw LegacyAPNsError(.connectionFailed, "\(self): \(failure.reason)", underlying: failure)
        }
        // Byte by byte up to the end of the head: TLS's first bytes may follow it at once, and must
        // stay in the socket for OpenSSL (the proxy sends nothing more before our ClientHello, but a
        // read of more than the head could swallow bytes that are not ours).
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let remaining = deadline - Monotonic.now()
            let result = withUnsafeMutableBytes(of: &byte) {
                transport.read(into: $0, waitingUpTo: Swift.max(0, remaining))
            }
            switch result {
            case .done:
                head.append(byte)
            case .wantRead, .wantWrite:
                throw LegacyAPNsError(
                    .timedOut, "\(self) did not answer CONNECT \(target) within \(formatSeconds(timeout))")
            case .closed:
                throw LegacyAPNsError(.connectionFailed, "\(self) closed the connection instead of answering CONNECT")
            case .failed(let error):
                throw LegacyAPNsError(.connectionFailed, "\(self): \(error.reason)", underlying: error)
            }
            let parsed = head.withUnsafeBytes { bytes in
                Result { () throws(HTTPHead.Failure) in try HTTPHead.parse(bytes, maximumSize: 16 * 1024) }
            }
            guard case .success(let complete) = parsed else {
                throw LegacyAPNsError(.malformedResponse, "\(self) answered CONNECT with something that is not HTTP")
            }
            guard let (answer, _) = complete else { continue }
            let (version, status, phrase) = answer.start
            guard version.hasPrefix("HTTP/1."), let code = Int(status) else {
                throw LegacyAPNsError(.malformedResponse, "\(self) answered CONNECT with something that is not HTTP")
            }
            guard (200..<300).contains(code) else {
                let line = "\(version) \(status)\(phrase.isEmpty ? "" : " ")\(phrase)"
                throw LegacyAPNsError(
                    (400..<500).contains(code) ? .protocolRefused : .connectionFailed,
                    "\(self) refused the tunnel to \(target): \(line)")
            }
            return socket
        }
    }
}
