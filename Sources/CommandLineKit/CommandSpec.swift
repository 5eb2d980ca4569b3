/// The declarative description of one subcommand. The same table drives parsing and `--help`,
/// so the two cannot drift apart.
package struct CommandSpec: Sendable {
    package var name: String
    /// One line for OVERVIEW and for the parent's SUBCOMMANDS list.
    package var abstract: String
    /// More paragraphs after OVERVIEW.
    package var discussion: String = ""
    package var arguments: [ArgumentSpec] = []
    package var options: [OptionSpec] = []
    package var subcommands: [CommandSpec] = []
    /// Runs the command; nil for a command that only groups subcommands.
    package var run: (@Sendable (ParsedArguments, Console) async throws -> ExitStatus)?
    /// Lines shown under EXAMPLES.
    package var examples: [String] = []
    /// Environment variables the command reads, with what they do (shown under ENVIRONMENT).
    package var environment: [(String, String)] = []
    /// Other commands under the same name, chosen by a flag (`serve --http2`): when the flag is on
    /// the command line, the variant's table parses it (and renders its help).
    package var variants: [CommandVariant] = []

    package init(
        name: String, abstract: String, discussion: String = "", arguments: [ArgumentSpec] = [],
        options: [OptionSpec] = [], subcommands: [CommandSpec] = [],
        run: (@Sendable (ParsedArguments, Console) async throws -> ExitStatus)? = nil, examples: [String] = [],
        environment: [(String, String)] = [], variants: [CommandVariant] = []
    ) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.arguments = arguments
        self.options = options
        self.subcommands = subcommands
        self.run = run
        self.examples = examples
        self.environment = environment
        self.variants = variants
    }
}

/// A command that shares its parent's name and is chosen by one of its flags.
package struct CommandVariant: Sendable {
    /// The flag (without `--`) that selects the variant; the variant's options must declare it.
    package var flag: String
    package var spec: CommandSpec

    package init(flag: String, spec: CommandSpec) {
        self.flag = flag
        self.spec = spec
    }
}

/// A positional argument.
package struct ArgumentSpec: Sendable {
    package var name: String
    package var help: String
    package var isOptional: Bool = false

    package init(name: String, help: String, isOptional: Bool = false) {
        self.name = name
        self.help = help
        self.isOptional = isOptional
    }
}

/// A `--name` option: a flag, or one that takes a value.
package struct OptionSpec: Sendable {
    package enum Kind: Sendable {
        case flag
        case value(String)
        case repeatedValue(String)
    }

    package var name: String
    package var kind: Kind
    package var help: String
    /// Shown as "(default: ...)".
    package var defaultValue: String? = nil
    /// Shown without brackets in USAGE.
    package var isRequired = false

    package init(name: String, kind: Kind, help: String, defaultValue: String? = nil, isRequired: Bool = false) {
        self.name = name
        self.kind = kind
        self.help = help
        self.defaultValue = defaultValue
        self.isRequired = isRequired
    }

    package static func flag(_ name: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .flag, help: help)
    }

    package static func value(_ name: String, _ valueName: String, _ help: String, default defaultValue: String? = nil)
        -> OptionSpec
    {
        OptionSpec(name: name, kind: .value(valueName), help: help, defaultValue: defaultValue)
    }

    package static func repeated(_ name: String, _ valueName: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, kind: .repeatedValue(valueName), help: help)
    }

    package var takesValue: Bool {
        if case .flag = kind { return false }
        return true
    }

    package var isRepeatable: Bool {
        if case .repeatedValue = kind { return true }
        return false
    }

    package var valueName: String? {
        switch kind {
        case .flag: nil
        case .value(let name), .repeatedValue(let name): name
        }
    }
}

/// How a command ended, as the process exit status of `docs/cli-contract.md`: its whole table,
/// so a command can only end in one of the statuses the contract gives.
package enum ExitStatus: Int32, Hashable, Sendable {
    /// Success.
    case success = 0
    /// The work ran, but something was refused (rejected notifications, an expired certificate).
    case refused = 1
    /// Usage or input error.
    case usage = 2
    /// Connection or TLS failure that retries could not overcome.
    case connection = 3
    /// Interrupted by SIGINT or SIGTERM (128 + SIGINT, as shells report it).
    case interrupted = 130

    /// The process exit status.
    package var code: Int32 { rawValue }
}

/// An error the CLI reports as one `legacy-push: error:` line with its exit status.
package enum CLIError: Error, Sendable {
    /// A usage error (an unknown option, a bad value, options that do not go together): exit 2.
    case usage(String)
    /// A failure of the peer that the command words itself (exit 3).
    case connection(String)

    /// The exit status the error ends the command with.
    package var status: ExitStatus {
        switch self {
        case .usage: .usage
        case .connection: .connection
        }
    }

    /// The error line's text.
    package var message: String {
        switch self {
        case .usage(let message), .connection(let message): message
        }
    }
}
