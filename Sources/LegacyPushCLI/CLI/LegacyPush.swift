internal import APNsRuntime
import CommandLineKit
import LegacyAPNs

/// The `legacy-push` command: the table of subcommands and the one place errors become exit codes.
enum LegacyPush {
    static let version = "0.1.0"

    static var root: CommandSpec {
        CommandSpec(
            name: "legacy-push",
            abstract:
                "Send, receive, simulate and inspect Apple push: the legacy binary protocol and the HTTP/2 API.",
            discussion: """
                Apple's binary APNs interface (gateway port 2195, feedback port 2196) was retired \
                in 2021; this tool keeps its certificates, fixtures and senders testable: a \
                faithful local gateway, a sender that never loses a notification, and converters \
                for old .p12 files.

                For Apple's HTTP/2 provider API (api.push.apple.com): 'send --http2' sends with the \
                same .p12 or a .p8 key, 'serve --http2' runs a local HTTP/2 APNs, and 'bridge' lets \
                an unmodified binary sender deliver through HTTP/2.
                """,
            subcommands: commands + [helpSpec],
            examples: [
                "legacy-push demo",
                "legacy-push help send",
                "legacy-push help serve --http2",
            ],
            environment: [(BundledCertificates.environmentVariable, BundledCertificates.environmentHelp)])
    }

    /// Every subcommand except `help`.
    static var commands: [CommandSpec] {
        [
            DemoCommand.spec, SendCommand.spec, ServeCommand.spec, BridgeCommand.spec, FeedbackCommand.spec,
            ConvertCommand.spec,
            InspectCommand.spec, FrameCommand.spec, ChannelsCommand.spec,
        ]
    }

    /// Names people carry over from a sibling subcommand, and what this subcommand calls the same
    /// thing: `[subcommand: [typed: meant]]`.
    static let aliases: [String: [String: String]] = [
        "feedback": ["gateway": "feedback", "feedback-port": "feedback", "port": "feedback"],
        "send": ["feedback": "gateway", "port": "gateway", "host": "gateway"],
        "serve": ["gateway": "port", "gateway-port": "port", "feedback": "feedback-port"],
    ]

    static var helpSpec: CommandSpec {
        CommandSpec(
            name: "help",
            abstract: "Show help for a subcommand.",
            arguments: [
                ArgumentSpec(
                    name: "subcommand", help: "The subcommand, e.g. 'send', 'frame decode' or 'serve --http2'.",
                    isOptional: true)
            ],
            run: nil)
    }

    /// Runs one command line and returns the exit status; never throws, never crashes on input.
    static func main(_ arguments: [String], console: Console) async -> Int32 {
        let status: ExitStatus
        do {
            status = try await dispatch(arguments, console: console)
        } catch let error as CLIError {
            console.error(error.message)
            status = error.status
        } catch let error as LegacyAPNsError {
            console.error(error.reason)
            status = exitStatus(for: error)
        } catch let error as FrameDecodingError {
            console.error(error.description)
            status = .usage
        } catch {
            console.error("\(error)")
            status = .usage
        }
        if let failure = console.outputFailure {
            // Results that were not written are results lost: never exit 0 then.
            if !console.outputFailureReported { console.error("cannot write the results to stdout: \(failure)") }
            return status == .success ? ExitStatus.usage.code : status.code
        }
        return status.code
    }

    /// The exit status of `docs/cli-contract.md` for an error, from its one classification.
    static func exitStatus(for error: LegacyAPNsError) -> ExitStatus {
        switch error.category {
        case .connection: .connection
        case .input, .configuration: .usage
        case .cancelled: .interrupted
        }
    }

    private static func dispatch(_ arguments: [String], console: Console) async throws -> ExitStatus {
        let root = self.root
        if arguments.first == "help" {
            var command = root
            var path = root.name
            for word in arguments.dropFirst() {
                if word == "-h" || word == "--help" {
                    // `help --help`, and `help send --help`: help about what was named so far.
                    if path == root.name { (command, path) = (helpSpec, "\(root.name) help") }
                    break
                }
                if word == "--version" {
                    console.print("legacy-push \(version)")
                    return .success
                }
                if let variant = command.variants.first(where: { "--" + $0.flag == word }) {
                    // `help serve --http2`: the variant's own help, as `serve --http2 --help`.
                    command = variant.spec
                    path += " " + word
                    continue
                }
                guard let sub = command.subcommands.first(where: { $0.name == word }) else {
                    if word.hasPrefix("-") {
                        throw CLIError.usage(
                            "unknown option '\(word)' for '\(root.name) help' (try 'legacy-push help help')")
                    }
                    if command.subcommands.isEmpty {
                        throw CLIError.usage("'\(path)' has no subcommand '\(word)'")
                    }
                    throw ArgumentParser.unknownSubcommand(word, of: command, path: path)
                }
                command = sub
                path += " " + word
            }
            console.print(HelpFormatter.render(command, path: path), terminator: false)
            return .success
        }
        switch try ArgumentParser.parse(arguments, command: root, aliases: aliases) {
        case .version:
            console.print("legacy-push \(version)")
            return .success
        case .help(let command, let path):
            console.print(HelpFormatter.render(command, path: path), terminator: false)
            return .success
        case .run(let command, let parsed):
            guard let run = command.run else {
                console.print(HelpFormatter.render(command, path: parsed.commandPath), terminator: false)
                return .success
            }
            return try await run(parsed, console)
        }
    }
}

extension Console {
    func print(_ text: String, terminator: Bool) {
        if terminator { print(text) } else { write(Array(text.utf8)) }
    }
}

/// The `legacy-push` command line as a library: the executable's `main.swift` only calls
/// ``main(_:)``, and tests drive the same code in-process.
public enum CommandLineTool {
    /// Runs one command line (`arguments[0]` is the program name), prints to stdout and stderr,
    /// and exits the process with the status of `docs/cli-contract.md`.
    public static func main(_ arguments: [String]) async -> Never {
        let status = await LegacyPush.main(Array(arguments.dropFirst()), console: Console())
        // Everything was written (the console writes with write(2) and has flushed). `_exit`
        // skips the atexit handlers: OpenSSL's and the runtime's teardown must not race a thread
        // that is still unwinding (a connection thread handing over its report, say).
        Host.exit(status)
    }
}
