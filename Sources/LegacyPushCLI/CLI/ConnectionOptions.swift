internal import APNsRuntime
import CommandLineKit
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
    static func address(_ name: String, defaultPort: UInt16) -> Option<Endpoint> {
        .endpoint(
            name, help: "Connect here instead (e.g. a local simulator: 127.0.0.1:\(defaultPort)).",
            examplePort: defaultPort)
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
}
