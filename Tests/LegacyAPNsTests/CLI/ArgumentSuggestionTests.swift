import Testing

@testable import LegacyPushCLI

/// Issue #14: a mistyped name gets the name that was meant, wherever it was typed.
@Suite struct ArgumentSuggestionTests {
    @Test(arguments: [
        (["help", "sned"], "unknown subcommand 'sned' for 'legacy-push' (did you mean 'send'?)"),
        (["help", "frame", "decod"], "unknown subcommand 'decod' for 'legacy-push frame' (did you mean 'decode'?)"),
        (["frame", "decod"], "unknown subcommand 'decod' for 'legacy-push frame' (did you mean 'decode'?)"),
        (
            ["send", "--INPUT", "x.jsonl"],
            "unknown option '--INPUT' for 'legacy-push send' (did you mean '--input'? names are lowercase)"
        ),
        (
            ["send", "-input", "x.jsonl"],
            "unknown option '-input' for 'legacy-push send' (did you mean '--input'? options are spelled with two dashes)"
        ),
        (["send", "-x"], "unknown option '-x' for 'legacy-push send' (options are spelled --name)"),
        (
            ["feedback", "--gateway", "127.0.0.1:2195"],
            "unknown option '--gateway' for 'legacy-push feedback' (did you mean '--feedback'? --gateway is an option "
                + "of 'legacy-push send')"
        ),
        (
            ["send", "--feedback", "127.0.0.1:2196"],
            "unknown option '--feedback' for 'legacy-push send' (did you mean '--gateway'? --feedback is an option "
                + "of 'legacy-push feedback')"
        ),
        (
            ["inspect", "push.pem", "--save", "x"],
            "unknown option '--save' for 'legacy-push inspect' (--save is an option of 'legacy-push feedback'; see "
                + "'legacy-push inspect --help')"
        ),
        (
            ["frame", "encode", "--tokn", "ab"],
            "unknown option '--tokn' for 'legacy-push frame encode' (did you mean '--token'?)"
        ),
    ])
    func unknownNamesSuggestWhatWasMeant(arguments: [String], message: String) async {
        let result = await CLIRunner.run(arguments)
        #expect(result.status == 2)
        #expect(result.stderr == "legacy-push: error: \(message)\n")
        #expect(result.stdout.isEmpty)
    }

    @Test func helpHelpExplainsHelp() async {
        for arguments in [["help", "--help"], ["help", "-h"]] {
            let result = await CLIRunner.run(arguments)
            #expect(result.status == 0)
            #expect(result.output.hasPrefix("OVERVIEW: Show help for a subcommand."))
            #expect(result.output.contains("USAGE: legacy-push help [<subcommand>]"))
        }
        let nested = await CLIRunner.run(["help", "frame", "--help"])
        #expect(nested.output.contains("USAGE: legacy-push frame <subcommand>"))
    }

    @Test(arguments: [
        ["--version"], ["send", "--version"], ["frame", "decode", "--version"],
        ["feedback", "--cert", "x", "--version"],
        ["help", "--version"], ["frame", "--version"],
    ])
    func versionWorksForEverySubcommand(arguments: [String]) async {
        let result = await CLIRunner.run(arguments)
        #expect(result.status == 0)
        #expect(result.output == "legacy-push \(LegacyPush.version)\n")
        #expect(result.stderr.isEmpty)
    }

    @Test func everyHelpListsVersion() async {
        for command in ["send", "feedback", "frame decode"] {
            let result = await CLIRunner.run(["help"] + command.split(separator: " ").map(String.init))
            #expect(result.output.contains("--version"), "\(command)")
        }
    }
}
