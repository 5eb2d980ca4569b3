import CommandLineKit
import LegacyAPNs

extension Option where Value == Endpoint {
    /// `HOST:PORT` (IPv6 literals in brackets), through the one parser: a URL, a port over
    /// 65535 or a missing port is a usage error saying why (`examplePort` is the one suggested).
    static func endpoint(_ name: String, help: String, examplePort: UInt16) -> Option {
        Option(name, "host:port", help: help) { text in
            do {
                return try Endpoint(parsing: text, naming: "--" + name, examplePort: examplePort)
            } catch let error as LegacyAPNsError {
                throw CLIError.usage(error.reason)
            }
        }
    }
}
