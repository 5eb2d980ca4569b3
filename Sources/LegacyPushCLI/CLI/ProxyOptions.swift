internal import APNsRuntime
import CommandLineKit
import HTTP2Client

/// `--proxy http://[user:pass@]host:port` (`send --http2`, `bridge`): the HTTP proxy provider
/// connections tunnel through; without it `HTTPS_PROXY`/`https_proxy`, minus the hosts in
/// `NO_PROXY`/`no_proxy`, as curl reads them.
enum ProxyOptions {
    static let url = Option<ProviderProxy>(
        "proxy", "url",
        help: "Reach the HTTP/2 API through this HTTP proxy (CONNECT; Basic authentication with user:pass@). "
            + "Default: HTTPS_PROXY or https_proxy, unless NO_PROXY or no_proxy names the host."
    ) { text in
        do {
            return try ProviderProxy(url: text, naming: "--proxy")
        } catch let error as LegacyAPNsError {
            throw CLIError.usage(error.reason)
        }
    }

    /// The proxy for connections to `host`: `--proxy`, else the environment's, else none.
    static func resolve(_ arguments: ParsedArguments, for host: String) throws -> ProviderProxy? {
        if let given = try arguments.value(url) { return given }
        var environment: [String: String] = [:]
        for name in ["HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"] {
            if let value = Host.environment(name) { environment[name] = value }
        }
        do {
            return try ProviderProxy.fromEnvironment(environment, for: host)
        } catch let error as LegacyAPNsError {
            throw CLIError.usage(error.reason)
        }
    }
}
