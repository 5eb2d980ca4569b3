/// Renders `--help` in swift-argument-parser's layout: OVERVIEW, USAGE, ARGUMENTS, OPTIONS,
/// ENVIRONMENT, SUBCOMMANDS, EXAMPLES.
package enum HelpFormatter {
    package static let columnWidth = 26
    package static let lineWidth = 80

    package static func render(_ command: CommandSpec, path: String) -> String {
        var out = "OVERVIEW: \(command.abstract)\n"
        if !command.discussion.isEmpty {
            out += "\n" + wrap(command.discussion, indent: 0) + "\n"
        }
        out += "\nUSAGE: \(usage(command, path: path))\n"

        if !command.arguments.isEmpty {
            out += "\nARGUMENTS:\n"
            for argument in command.arguments {
                out += row("<\(argument.name)>", argument.help)
            }
        }

        out += "\nOPTIONS:\n"
        for option in command.options {
            var label = "--\(option.name)"
            if let valueName = option.valueName { label += " <\(valueName)>" }
            var help = option.help
            if let defaultValue = option.defaultValue { help += " (default: \(defaultValue))" }
            out += row(label, help)
        }
        out += row("--version", "Show the version.")
        out += row("-h, --help", "Show help information.")

        if !command.environment.isEmpty {
            out += "\nENVIRONMENT:\n"
            for (name, help) in command.environment { out += row(name, help) }
        }

        if !command.subcommands.isEmpty {
            out += "\nSUBCOMMANDS:\n"
            for sub in command.subcommands { out += row(sub.name, sub.abstract) }
            out +=
                "\n  See '\(path.split(separator: " ").first ?? "legacy-push") help <subcommand>' for detailed help.\n"
        }
        if !command.examples.isEmpty {
            out += "\nEXAMPLES:\n"
            for example in command.examples { out += "  \(example)\n" }
        }
        return out
    }

    package static func usage(_ command: CommandSpec, path: String) -> String {
        if !command.subcommands.isEmpty { return "\(path) <subcommand>" }
        var parts = [path]
        let given = Set(path.split(separator: " ").filter { $0.hasPrefix("--") }.map { $0.dropFirst(2) })
        // The flag that chose a variant (`serve --http2`) is in the path already.
        for option in command.options where !given.contains(Substring(option.name)) {
            var part = "--\(option.name)"
            if let valueName = option.valueName { part += " <\(valueName)>" }
            if option.isRepeatable { part += " ..." }
            parts.append(option.isRequired ? part : "[\(part)]")
        }
        for argument in command.arguments {
            parts.append(argument.isOptional ? "[<\(argument.name)>]" : "<\(argument.name)>")
        }
        // Keep each bracketed part on one line: wrap on the spaces between parts only.
        let glue: Character = "\u{00A0}"
        let glued = parts.map {
            $0.split(separator: " ", omittingEmptySubsequences: false).joined(separator: String(glue))
        }
        return wrap(glued.joined(separator: " "), indent: 7, firstLineUsed: 7)
            .split(separator: glue, omittingEmptySubsequences: false).joined(separator: " ")
    }

    package static func row(_ label: String, _ help: String) -> String {
        let indent = String(repeating: " ", count: columnWidth)
        let wrapped = wrap(help, indent: columnWidth)
        let padded = "  " + label
        if padded.count < columnWidth - 1 {
            let body = String(wrapped.dropFirst(columnWidth))
            return padded + String(repeating: " ", count: columnWidth - padded.count) + body + "\n"
        }
        return padded + "\n" + indent + String(wrapped.dropFirst(columnWidth)) + "\n"
    }

    /// Word-wraps `text` to the line width, indenting continuation lines by `indent`.
    package static func wrap(_ text: String, indent: Int, firstLineUsed: Int? = nil) -> String {
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = ""
            var used = lines.isEmpty ? (firstLineUsed ?? indent) : indent
            for word in paragraph.split(separator: " ") {
                if !line.isEmpty, used + line.count + 1 + word.count > lineWidth {
                    lines.append(line)
                    line = ""
                    used = indent
                }
                line += line.isEmpty ? String(word) : " " + word
            }
            lines.append(line)
        }
        let pad = String(repeating: " ", count: indent)
        return lines.enumerated().map { index, line in
            index == 0 && firstLineUsed != nil ? line : pad + line
        }.joined(separator: "\n")
    }
}
