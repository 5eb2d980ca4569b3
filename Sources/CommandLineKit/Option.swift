import APNsCore

/// A command-line option that takes a value, declared once: its name, the type its value parses
/// to, its default, its range and its help. The same declaration drives parsing, validation and
/// `--help` (swift-argument-parser's idea, without property wrappers), so the help's
/// "(default: ...)" is the default that is used, and a value out of range names the range.
package struct Option<Value: Sendable>: Sendable {
    /// `--name`.
    package let name: String
    /// What the value is, in help and errors (`<seconds>`).
    package let valueName: String
    /// One line (or a few) for `--help`.
    package let help: String
    /// Used when the option is not given.
    package let defaultValue: Value?
    /// How help shows the default.
    package let defaultText: String?
    /// Shown without brackets in USAGE; missing is a usage error.
    package let isRequired: Bool
    /// Turns the text into a value or throws a ``CLIError`` naming the option and what it expects.
    package let parse: @Sendable (String) throws -> Value

    package init(
        _ name: String, _ valueName: String, help: String, default defaultValue: Value? = nil,
        defaultText: String? = nil, required: Bool = false, parse: @escaping @Sendable (String) throws -> Value
    ) {
        self.name = name
        self.valueName = valueName
        self.help = help
        self.defaultValue = defaultValue
        self.defaultText = defaultText ?? defaultValue.map { "\($0)" }
        self.isRequired = required
        self.parse = parse
    }

    /// What the parser and the help formatter see.
    package var spec: OptionSpec {
        OptionSpec(name: name, kind: .value(valueName), help: help, defaultValue: defaultText, isRequired: isRequired)
    }

    /// The same option with a default (shown in help, used when the option is not given).
    package func defaulting(_ value: Value) -> Option {
        Option(name, valueName, help: help, default: value, defaultText: nil, required: isRequired, parse: parse)
    }

    /// The same option with other help (a command may explain a shared option in its own words).
    package func help(_ text: String) -> Option {
        Option(
            name, valueName, help: text, default: defaultValue, defaultText: defaultText, required: isRequired,
            parse: parse)
    }
}

/// An option that may be given several times (`--token A --token B`).
package struct RepeatedOption<Value: Sendable>: Sendable {
    package let name: String
    package let valueName: String
    package let help: String
    package let parse: @Sendable (String) throws -> Value

    package init(_ name: String, _ valueName: String, help: String, parse: @escaping @Sendable (String) throws -> Value)
    {
        self.name = name
        self.valueName = valueName
        self.help = help
        self.parse = parse
    }

    package var spec: OptionSpec { OptionSpec(name: name, kind: .repeatedValue(valueName), help: help) }
}

/// A `--name` switch without a value.
package struct Flag: Sendable {
    package let name: String
    package let help: String

    package init(_ name: String, help: String) {
        self.name = name
        self.help = help
    }

    package var spec: OptionSpec { OptionSpec(name: name, kind: .flag, help: help) }
}

// MARK: - Value types

extension Option where Value == String {
    /// Any text (a name, a path, a JSON document).
    package static func text(_ name: String, _ valueName: String, help: String, required: Bool = false) -> Option {
        Option(name, valueName, help: help, required: required) { $0 }
    }
}

extension Option {
    /// A whole number within `range`.
    package static func integer(
        _ name: String, _ valueName: String = "n", help: String, range: ClosedRange<Value>, default: Value? = nil,
        defaultText: String? = nil
    ) -> Option where Value: FixedWidthInteger {
        Option(name, valueName, help: help, default: `default`, defaultText: defaultText) { text in
            try ParsedArguments.parseInteger(text, option: "--\(name)", as: Value.self, in: range)
        }
    }

    /// One of a fixed set of words, each standing for a value.
    package static func choice(
        _ name: String, help: String, _ choices: KeyValuePairs<String, Value>, default: Value? = nil
    ) -> Option where Value: Equatable {
        let words = choices.map(\.key)
        let table = Array(choices)
        let defaultWord = `default`.flatMap { value in table.first { $0.value == value }?.key }
        return Option(
            name, words.joined(separator: "|"), help: help, default: `default`, defaultText: defaultWord
        ) { text in
            guard let match = table.first(where: { $0.key == text }) else {
                throw CLIError.usage(
                    "--\(name) must be one of \(words.joined(separator: ", ")), got '\(text)'"
                        + (words.allSatisfy(Self.isVersionNumber)
                            ? "" : Suggestion.didYouMean(text, among: words, prefix: "")))
            }
            return match.value
        }
    }
}

extension Option {
    /// "1.2": no "did you mean" among version numbers (1.1 is a version, not a typo of 1.2).
    package static func isVersionNumber(_ word: String) -> Bool {
        word.allSatisfy { $0.isNumber || $0 == "." }
    }
}

extension Option where Value == Duration {
    /// A number of seconds, fractions allowed; zero only when `allowsZero`.
    package static func seconds(
        _ name: String, help: String, default: Duration? = nil, defaultText: String? = nil, allowsZero: Bool = false
    ) -> Option {
        Option(
            name, "seconds", help: help, default: `default`,
            defaultText: defaultText ?? `default`.map { formatSeconds($0) }
        ) { text in
            guard let value = Double(text), value.isFinite else {
                throw CLIError.usage("--\(name) expects a number of seconds, got '\(text)'")
            }
            guard allowsZero ? value >= 0 : value > 0 else {
                throw CLIError.usage("--\(name) must be greater than \(allowsZero ? "or equal to " : "")0, got \(text)")
            }
            return .seconds(fractional: value)
        }
    }

    /// "0.2", "30".
    package static func formatSeconds(_ duration: Duration) -> String {
        let seconds = duration.inSeconds
        return seconds == seconds.rounded() ? String(Int(seconds)) : String(seconds)
    }
}
