internal import APNsRuntime
import LegacyAPNs

/// `--sandbox`, `--gateway`/`--feedback`, `--ca-file`: where to connect and whom to trust.
enum ConnectionOptions {
    /// `--sandbox`.
    static let sandbox = Flag("sandbox", help: "Use Apple's sandbox host instead of production.")
    /// `--ca-file`.
    static let caFile = Option<String>.text(
        "ca-file", "path",
        help: "Trust the CA certificates in this PEM file for the server instead of the system store. The host "
            + "name is still verified.")

    /// `--gateway` or `--feedback`.
    static func address(_ name: String, defaultPort: Int) -> Option<Endpoint> {
        .endpoint(name, help: "Connect here instead (e.g. a local simulator: 127.0.0.1:\(defaultPort)).")
    }

    static func options(addressOption: String, defaultPort: Int) -> [OptionSpec] {
        [sandbox.spec, address(addressOption, defaultPort: defaultPort).spec, caFile.spec]
    }

    /// The trust for the server certificate.
    static func trust(_ arguments: ParsedArguments) throws -> TLSConfiguration.Trust {
        guard let path = try arguments.value(caFile) else { return .systemDefault }
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
        if let endpoint = try arguments.value(address(addressOption, defaultPort: 0)) {
            if arguments.isSet(self.sandbox) {
                throw CLIError.usage("give either --\(addressOption) or --sandbox, not both")
            }
            return endpoint
        }
        return arguments.isSet(self.sandbox) ? sandbox : production
    }
}
