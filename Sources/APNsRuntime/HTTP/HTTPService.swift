import APNsCore
import Synchronization

/// An ``HTTPServer`` that a long-lived object starts and stops as it is asked to (the metrics and
/// the inbox servers): binds `host:port` at ``start(_:)``, stops at ``stop()``, at most one at a time.
package final class HTTPService: Sendable {
    private let host: String
    private let port: UInt16
    private let limits: HTTPServer.Limits
    private let server = Mutex<HTTPServer?>(nil)

    /// A service for `host:port` (port 0: a free one); nothing is bound yet.
    package init(host: String, port: UInt16, limits: HTTPServer.Limits = HTTPServer.Limits()) {
        self.host = host
        self.port = port
        self.limits = limits
    }

    /// Binds and starts serving with `handler`; returns the address (the real port when 0 was
    /// asked for).
    /// - Throws: ``LegacyAPNsError`` when the address cannot be bound.
    package func start(_ handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse) throws -> Endpoint {
        let http = try HTTPServer(host: host, port: port, limits: limits, handler: handler)
        server.withLock { $0 = http }
        http.start()
        return http.endpoint
    }

    /// Stops serving (requests being answered finish first, streams end), off the caller's thread.
    package func stop() async {
        guard let http = server.withLock({ $0.take() }) else { return }
        await OSThread.run(name: "apns-http-stop") { http.stop() }
    }
}
