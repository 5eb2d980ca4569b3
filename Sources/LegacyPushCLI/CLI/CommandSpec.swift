internal import APNsRuntime

/// The declarative description of one subcommand. The same table drives parsing and `--help`,
/// so the two cannot drift apart.
struct CommandSpec: Sendable {
    var name: String
    /// One line for OVERVIEW and for the parent's SUBCOMMANDS list.
    var abstract: String
    /// More paragraphs after OVERVIEW.
    var discussion: String = ""
    var arguments: [ArgumentSpec] = []
    var options: [OptionSpec] = []
    var subcommands: [CommandSpec] = []
    /// Runs the command; nil for a command that only groups subcommands.
    var run: (@Sendable (ParsedArguments, Console) async throws -> ExitStatus)?
    /// Lines shown under EXAMPLES.
    var examples: [String] = []
    /// Environment variables the command reads, with what they do (shown under ENVIRONMENT).
    var environment: [(String, String)] = []
    /// Other commands under the same name, chosen by a flag (`serve --http2`): when the flag is on
    /// the command line, the variant's table parses it (and renders its help).
    var variants: [CommandVariant] = []
}

/// A command that shares its parent's name and is chosen by one of its flags.
struct CommandVariant: Sendable {
    /// The flag (without `--`) that selects the variant; the variant's options must declare it.
    var flag: String
    var spec: CommandSpec
}

/// A positional argument.
struct ArgumentSpec: Sendable {
    var name: String
    var help: String
    var isOptional: Bool = false
}

/// A `--name` option: a flag, or one that takes a value.
struct OptionSpec: Sendable {
    enum Kind: Sendable {
        case flag
        case value(String)
        case repeatedValue(String)
    }

    var name: String
    var kind: Kind
    var help: String
    /// Shown as "(default: ...)".
    var defaultValue: String? = nil
    /// Shown without brackets in USAGE.
    var isRequired = false

    static func flag(_ name: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .flag, help: help)
    }

    static func value(_ name: String, _ valueName: String, _ help: String, default defaultValue: String? = nil)
        -> OptionSpec
    {
        OptionSpec(name: name, kind: .value(valueName), help: help, defaultValue: defaultValue)
    }

    static func repeated(_ name: String, _ valueName: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .repeatedValue(valueName), help: help)
    }

    var takesValue: Bool {
        if case .flag = kind { return false }
        return true
    }

    var isRepeatable: Bool {
        if case .repeatedValue = kind { return true }
        return false
    }

    var valueName: String? {
        switch kind {
        case .flag: nil
        case .value(let name), .repeatedValue(let name): name
        }
    }
}

/// How a command ended, as the process exit status of `docs/cli-contract.md`.
struct ExitStatus: Hashable, Sendable {
    var code: Int32

    /// Success.
    static let success = ExitStatus(code: 0)
    /// The work ran, but something was refused (rejected notifications, an expired certificate).
    static let refused = ExitStatus(code: 1)
    /// Usage or input error.
    static let usage = ExitStatus(code: 2)
    /// Connection or TLS failure that retries could not overcome.
    static let connection = ExitStatus(code: 3)
    /// Interrupted by SIGINT or SIGTERM (128 + SIGINT, as shells report it).
    static let interrupted = ExitStatus(code: 130)
}

/// An error the CLI reports as one `legacy-push: error:` line with a given exit status.
struct CLIError: Error, Sendable {
    var status: ExitStatus
    var message: String

    static func usage(_ message: String) -> CLIError { CLIError(status: .usage, message: message) }
    static func connection(_ message: String) -> CLIError { CLIError(status: .connection, message: message) }
}
