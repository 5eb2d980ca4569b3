import Foundation
import Testing

/// ARCHITECTURE.md's "What may import what", checked over the sources: every module imports only
/// the package modules its row names (the system's own modules, such as Synchronization and
/// Dispatch, are not counted here; Glibc is `PlatformSeamTests`' business). A module without a row
/// fails too: a new module gets its row in ARCHITECTURE.md and here. (`ModuleImportTests` checks
/// the table's "never" column.)
@Suite struct ModuleRowTests {
    /// The package modules each module may import.
    static let allowed: [String: Set<String>] = [
        "APNsCore": ["CHexDecode"],
        "APNsCredentials": ["APNsCore", "COpenSSL"],
        "APNsRuntime": ["APNsCore", "APNsCredentials", "COpenSSL", "CNGHTTP2", "CFileGuard"],
        "APNsMetrics": ["APNsCore", "APNsRuntime"],
        "LegacyAPNs": ["APNsCore", "APNsCredentials", "APNsRuntime"],
        "FeedbackClient": ["APNsCore", "APNsCredentials", "APNsRuntime"],
        "HTTP2Client": ["APNsCore", "APNsCredentials", "APNsRuntime"],
        "APNsInbox": ["APNsCore", "APNsRuntime"],
        "GatewaySimulator": ["APNsCore", "APNsCredentials", "APNsRuntime", "APNsMetrics", "APNsInbox"],
        "LegacyBridge": [
            "APNsCore", "APNsCredentials", "APNsRuntime", "APNsMetrics", "APNsInbox", "HTTP2Client", "CSQLite",
            "CLibPQ",
        ],
        "APNsInput": ["APNsCore", "APNsRuntime", "LegacyAPNs"],
        "CommandLineKit": ["APNsCore", "APNsRuntime"],
        "LegacyPushCLI": [
            "APNsCore", "APNsCredentials", "APNsRuntime", "APNsMetrics", "APNsInbox", "APNsInput", "CommandLineKit",
            "LegacyAPNs", "FeedbackClient", "GatewaySimulator", "HTTP2Client", "LegacyBridge",
        ],
        "legacy-push": ["LegacyPushCLI"],
    ]

    /// Modules of the system, not of the package.
    static let system: Set<String> = ["Synchronization", "Dispatch", "Glibc", "Darwin", "Musl", "Foundation"]

    /// The package modules each module's Swift files import.
    static func imports() throws -> [String: Set<String>] {
        var found: [String: Set<String>] = [:]
        for file in try PlatformSeamTests.swiftFiles() {
            let module = String(file.path.split(separator: "/").first ?? "")
            for line in PlatformSeamTests.codeLines(file.text) {
                let words = line.trimmingCharacters(in: .whitespaces).split(separator: " ")
                guard let index = words.firstIndex(of: "import"), index + 1 < words.count,
                    words[..<index].allSatisfy({ $0.hasPrefix("@") || ["internal", "package", "public"].contains($0) })
                else { continue }
                let imported = String(words[index + 1])
                if !system.contains(imported) { found[module, default: []].insert(imported) }
            }
        }
        return found
    }

    @Test func everyModuleImportsOnlyWhatItsRowAllows() throws {
        let imports = try Self.imports()
        #expect(imports.count >= 10)
        for (module, modules) in imports.sorted(by: { $0.key < $1.key }) {
            let allowed = try #require(Self.allowed[module], "\(module) has no row in ARCHITECTURE.md's table")
            #expect(modules.subtracting(allowed).sorted() == [], "\(module) imports what its row does not allow")
        }
    }

    /// The option parser and help know no command: no client, server or input module.
    @Test func theCommandLineKitKnowsNoCommand() throws {
        #expect(try Self.imports()["CommandLineKit"] == ["APNsCore", "APNsRuntime"])
    }

    /// The input pipeline is a library: it knows no command line, no simulator and no bridge.
    @Test func theInputModuleImportsNoShell() throws {
        let input = try Self.imports()["APNsInput"] ?? []
        #expect(input.isDisjoint(with: ["LegacyPushCLI", "GatewaySimulator", "LegacyBridge", "HTTP2Client"]))
        #expect(input.contains("APNsCore"))
    }
}
