import LegacyPushCLI

await CommandLineTool.main(CommandLine.arguments)
