/// The result of parsing one command line against a ``CommandSpec``, with typed accessors that
/// turn bad values into usage errors naming the option.
package struct ParsedArguments: Sendable {
    package var commandPath: String
    package var values: [String: [String]] = [:]
    package var flags: Set<String> = []
    package var positionals: [String] = []

    package init(
        commandPath: String, values: [String: [String]] = [:], flags: Set<String> = [], positionals: [String] = []
    ) {
        self.commandPath = commandPath
        self.values = values
        self.flags = flags
        self.positionals = positionals
    }

    /// Whether a flag was given.
    package func flag(_ name: String) -> Bool { flags.contains(name) }

    // MARK: Typed options

    /// Whether the flag was given.
    package func isSet(_ flag: Flag) -> Bool { flags.contains(flag.name) }

    /// Whether the option was given (its default does not count).
    package func has<Value>(_ option: Option<Value>) -> Bool { values[option.name] != nil }

    /// The option's value: as given, else its default, else nil.
    package func value<Value>(_ option: Option<Value>) throws -> Value? {
        guard let text = values[option.name]?.last else { return option.defaultValue }
        return try option.parse(text)
    }

    /// The option's value, given or defaulted; missing is a usage error naming it.
    package func required<Value>(_ option: Option<Value>) throws -> Value {
        guard let value = try value(option) else { throw CLIError.usage("missing --\(option.name)") }
        return value
    }

    /// Every value of a repeatable option, in order.
    package func values<Value>(_ option: RepeatedOption<Value>) throws -> [Value] {
        try (values[option.name] ?? []).map(option.parse)
    }

    /// Whether the repeatable option was given at all.
    package func has<Value>(_ option: RepeatedOption<Value>) -> Bool { values[option.name] != nil }

    /// The names of the given ones among `names` (for "cannot be combined" checks).
    package func given(_ names: [String]) -> [String] { names.filter { has($0) } }

    /// Whether an option was given at all.
    package func has(_ name: String) -> Bool { flags.contains(name) || values[name] != nil }

    /// The value of a single-valued option.
    package func value(_ name: String) -> String? { values[name]?.last }

    package static func parseInteger<Integer: FixedWidthInteger>(
        _ text: String, option: String, as type: Integer.Type, in range: ClosedRange<Integer>?
    ) throws -> Integer {
        let bounds = range ?? Integer.min...Integer.max
        guard let value = Integer(text) else {
            let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
            if !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) {
                throw CLIError.usage(
                    "\(option) must be between \(bounds.lowerBound) and \(bounds.upperBound), got \(text)")
            }
            throw CLIError.usage("\(option) expects a whole number, got '\(text)'")
        }
        guard bounds.contains(value) else {
            throw CLIError.usage("\(option) must be between \(bounds.lowerBound) and \(bounds.upperBound), got \(text)")
        }
        return value
    }
}
