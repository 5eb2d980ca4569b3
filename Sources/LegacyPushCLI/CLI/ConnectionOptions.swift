package import APNsRuntime
import LegacyAPNs

/// `--sandbox`, `--gateway`/`--feedback`, `--ca-file`: where to connect and whom to trust.
enum ConnectionOptions {
    static func options(addressOption: String, defaultPort: Int) -> [OptionSpec] {
        [
            .flag("sandbox", "Use Apple's sandbox host instead of production."),
            .value(
                addressOption, "host:port",
                "Connect here instead (e.g. a local simulator: 127.0.0.1:\(defaultPort))."),
            .value(
                "ca-file", "path",
                "Trust the CA certificates in this PEM file for the server instead of the system store. The host "
                    + "name is still verified."),
        ]
    }

    /// The trust for the server certificate.
    static func trust(_ arguments: ParsedArguments) throws -> TLSConfiguration.Trust {
        guard let path = arguments.value("ca-file") else { return .systemDefault }
        let bytes = try Files.read(path, limit: 16 * 1024 * 1024)
        do {
            return try .pem(bytes)
        } catch {
            throw CLIError.usage("'\(path)' holds no PEM certificate (--ca-file wants the CA in PEM)")
        }
    }

    /// The endpoint from `--<addressOption>` or `--sandbox`, else `production`.
    static func endpoint(_ arguments: ParsedArguments, addressOption: String, production: Endpoint, sandbox: Endpoint)
        throws -> Endpoint
    {
        if let text = arguments.value(addressOption) {
            if arguments.flag("sandbox") {
                throw CLIError.usage("give either --\(addressOption) or --sandbox, not both")
            }
            do {
                return try Endpoint(parsing: text)
            } catch let error as LegacyAPNsError {
                throw CLIError.usage("--\(addressOption): \(error.reason)")
            }
        }
        return arguments.flag("sandbox") ? sandbox : production
    }
}
