import APNsCore

/// Parses a command line against a ``CommandSpec``.
///
/// Accepts `--name value` and `--name=value`, `--` to end options, `-` as a positional (stdin),
/// and `-h`/`--help` and `--version` anywhere before `--`.
///
/// A name it does not know gets a suggestion where one is close: a near spelling
/// (`--tokn`), another case (`--INPUT`), one dash instead of two (`-input`), or the name another
/// subcommand uses for the same thing (`feedback --gateway`: `--feedback`).
package enum ArgumentParser {
    package enum Outcome {
        case run(CommandSpec, ParsedArguments)
        case help(CommandSpec, path: String)
        case version
    }

    /// Parses `arguments` against `root`'s table. `aliases` are names people carry over from a
    /// sibling subcommand, and what each subcommand calls the same thing (`[subcommand: [typed:
    /// meant]]`), for the suggestion of an unknown option.
    package static func parse(
        _ arguments: [String], command root: CommandSpec, aliases: [String: [String: String]] = [:]
    ) throws -> Outcome {
        var command = root
        var path = root.name
        var index = 0
        // Walk into subcommands first: `legacy-push frame decode ...`.
        while !command.subcommands.isEmpty {
            guard index < arguments.count else { return .help(command, path: path) }
            let word = arguments[index]
            if word == "-h" || word == "--help" { return .help(command, path: path) }
            if word == "--version" { return .version }
            guard let sub = command.subcommands.first(where: { $0.name == word }) else {
                if word.hasPrefix("-") {
                    throw CLIError.usage(
                        "unknown option '\(word)' for '\(path)' (give a subcommand first: '\(path) help')")
                }
                throw unknownSubcommand(word, of: command, path: path)
            }
            command = sub
            path += " " + sub.name
            index += 1
        }

        // A variant chosen by its flag (`serve --http2`) parses the rest with its own table.
        let options = arguments[index...].prefix { $0 != "--" }
        if let variant = command.variants.first(where: { options.contains("--" + $0.flag) }) {
            command = variant.spec
            path += " --" + variant.flag
        }

        var parsed = ParsedArguments(commandPath: path)
        var optionsEnded = false
        while index < arguments.count {
            let word = arguments[index]
            index += 1
            if optionsEnded || word == "-" || !word.hasPrefix("-") {
                parsed.positionals.append(word)
                continue
            }
            if word == "--" {
                optionsEnded = true
                continue
            }
            if word == "-h" || word == "--help" { return .help(command, path: path) }
            if word == "--version" { return .version }
            guard word.hasPrefix("--") else {
                let name = String(word.dropFirst().prefix { $0 != "=" })
                let hint =
                    command.options.contains { $0.name == name }
                    ? " (did you mean '--\(name)'? options are spelled with two dashes)"
                    : " (options are spelled --name)"
                throw CLIError.usage("unknown option '\(word)' for '\(path)'\(hint)")
            }
            var name = String(word.dropFirst(2))
            var inlineValue: String? = nil
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = command.options.first(where: { $0.name == name }) else {
                throw unknownOption(name, of: command, path: path, root: root, aliases: aliases)
            }
            if !option.takesValue {
                if inlineValue != nil { throw CLIError.usage("--\(name) is a flag and takes no value") }
                parsed.flags.insert(name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                guard index < arguments.count else {
                    throw CLIError.usage("--\(name) needs a value (\(option.valueName ?? "value"))")
                }
                value = arguments[index]
                index += 1
            }
            if !option.isRepeatable, parsed.values[name] != nil {
                throw CLIError.usage("--\(name) is given more than once")
            }
            parsed.values[name, default: []].append(value)
        }

        let maximum = command.arguments.count
        let minimum = command.arguments.filter { !$0.isOptional }.count
        if parsed.positionals.count > maximum {
            let extra = parsed.positionals[maximum]
            throw CLIError.usage("unexpected argument '\(extra)' for '\(path)'")
        }
        if parsed.positionals.count < minimum {
            let missing = command.arguments[parsed.positionals.count]
            throw CLIError.usage("missing <\(missing.name)> for '\(path)'")
        }
        return .run(command, parsed)
    }

    /// "unknown subcommand 'sned' for 'legacy-push' (did you mean 'send'?)".
    package static func unknownSubcommand(_ word: String, of command: CommandSpec, path: String) -> CLIError {
        CLIError.usage(
            "unknown subcommand '\(word)' for '\(path)'"
                + Suggestion.didYouMean(word, among: command.subcommands.map(\.name), prefix: ""))
    }

    /// "unknown option '--gateway' for 'legacy-push feedback' (did you mean '--feedback'? ...)":
    /// a near spelling first, then this subcommand's name for an option of a sibling, then which
    /// other subcommand has the option.
    package static func unknownOption(
        _ name: String, of command: CommandSpec, path: String, root: CommandSpec, aliases: [String: [String: String]]
    ) -> CLIError {
        let names = command.options.map(\.name)
        var hint = Suggestion.didYouMean(name, among: names, prefix: "--")
        let owners = commands(having: name, in: root, path: root.name).filter { $0 != path }
        if hint.isEmpty, let meant = aliases[command.name]?[name.lowercased()], names.contains(meant) {
            let elsewhere = owners.first.map { " --\(name) is an option of '\($0)'" } ?? ""
            hint = " (did you mean '--\(meant)'?\(elsewhere))"
        } else if hint.isEmpty, let owner = owners.first {
            hint = " (--\(name) is an option of '\(owner)'; see '\(path) --help')"
        }
        return CLIError.usage("unknown option '--\(name)' for '\(path)'\(hint)")
    }

    /// The paths of the commands under `command` that have an option called `name`.
    package static func commands(having name: String, in command: CommandSpec, path: String) -> [String] {
        var found = command.options.contains { $0.name == name } ? [path] : []
        for sub in command.subcommands {
            found += commands(having: name, in: sub, path: path + " " + sub.name)
        }
        return found
    }
}
