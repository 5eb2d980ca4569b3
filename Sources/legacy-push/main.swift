import LegacyAPNs

#if canImport(Glibc)
    import Glibc
#endif

let console = Console()
let status = await LegacyPush.main(Array(CommandLine.arguments.dropFirst()), console: console)
exit(status)
