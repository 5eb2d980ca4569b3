internal import APNsRuntime

/// Parses a command line against a ``CommandSpec``.
///
/// Accepts `--name value` and `--name=value`, `--` to end options, `-` as a positional (stdin),
/// and `-h`/`--help` anywhere before `--`.
enum ArgumentParser {
    enum Outcome {
        case run(CommandSpec, ParsedArguments)
        case help(CommandSpec, path: String)
    }

    static func parse(_ arguments: [String], command root: CommandSpec) throws -> Outcome {
        var command = root
        var path = root.name
        var index = 0
        // Walk into subcommands first: `legacy-push frame decode ...`.
        while !command.subcommands.isEmpty {
            guard index < arguments.count else { return .help(command, path: path) }
            let word = arguments[index]
            if word == "-h" || word == "--help" { return .help(command, path: path) }
            guard let sub = command.subcommands.first(where: { $0.name == word }) else {
                if word.hasPrefix("-") {
                    throw CLIError.usage("unknown option '\(word)' for '\(path)'")
                }
                throw CLIError.usage(
                    "unknown subcommand '\(word)' for '\(path)'\(suggestion(for: word, among: command.subcommands.map(\.name), prefix: ""))"
                )
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
            guard word.hasPrefix("--") else {
                throw CLIError.usage("unknown option '\(word)' for '\(path)' (options are spelled --name)")
            }
            var name = String(word.dropFirst(2))
            var inlineValue: String? = nil
            if let equals = name.firstIndex(of: "=") {
                inlineValue = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            guard let option = command.options.first(where: { $0.name == name }) else {
                throw CLIError.usage(
                    "unknown option '--\(name)' for '\(path)'\(suggestion(for: name, among: command.options.map(\.name), prefix: "--"))"
                )
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

    /// " (did you mean '--token'?)" when a known name is close to what was typed.
    static func suggestion(for word: String, among names: [String], prefix: String) -> String {
        let allowed = word.count <= 3 ? 1 : word.count < 9 ? 2 : 3
        let scored = names.map { ($0, editDistance(word, $0)) }.filter { $0.1 <= allowed }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return "" }
        return " (did you mean '\(prefix)\(best.0)'?)"
    }

    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
