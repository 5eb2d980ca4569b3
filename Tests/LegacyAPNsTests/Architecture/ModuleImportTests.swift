import Foundation
import Testing

/// ARCHITECTURE.md's table "What may import what", checked over the sources: the modules each
/// module's Swift files import (any form: `import`, `internal import`, `@_exported import`), against
/// what the table says it never imports. Package.swift lets a target import only what it lists; this
/// keeps Package.swift's lists and the table from drifting apart.
@Suite struct ModuleImportTests {
    /// The modules the code lines of `module`'s Swift files import.
    static func imports(of module: String) throws -> Set<String> {
        var found = Set<String>()
        for file in try PlatformSeamTests.swiftFiles() where file.path.hasPrefix(module + "/") {
            for line in PlatformSeamTests.codeLines(file.text) {
                let words = line.split(separator: " ")
                guard let index = words.firstIndex(of: "import"), index + 1 < words.count,
                    words[..<index].allSatisfy({ ["@_exported", "internal", "package", "public"].contains($0) })
                else { continue }
                found.insert(String(words[index + 1]))
            }
        }
        return found
    }

    static let clients: Set<String> = ["LegacyAPNs", "FeedbackClient", "HTTP2Client"]
    static let servers: Set<String> = ["GatewaySimulator", "LegacyBridge"]

    /// Each module and what the table says it never imports.
    static let forbidden: [(String, Set<String>)] = [
        ("APNsCore", clients.union(servers).union(["APNsCredentials", "APNsRuntime", "Foundation", "Glibc"])),
        ("APNsInbox", clients.union(servers).union(["APNsMetrics", "Foundation"])),
        ("APNsMetrics", clients.union(servers).union(["APNsInbox", "Foundation"])),
        ("LegacyAPNs", servers.union(["FeedbackClient", "HTTP2Client", "APNsInbox"])),
        ("FeedbackClient", servers.union(["LegacyAPNs", "HTTP2Client", "APNsInbox"])),
        ("HTTP2Client", servers.union(["LegacyAPNs", "FeedbackClient", "APNsInbox"])),
        ("GatewaySimulator", clients.union(["LegacyBridge"])),
        ("LegacyBridge", Set(["LegacyAPNs", "FeedbackClient", "GatewaySimulator"])),
        ("APNsInput", servers.union(["FeedbackClient", "HTTP2Client", "APNsInbox", "LegacyPushCLI", "Glibc"])),
        ("CommandLineKit", clients.union(servers).union(["APNsInput", "APNsInbox", "APNsMetrics", "Glibc"])),
    ]

    @Test(arguments: forbidden.map(\.0))
    func aModuleNeverImportsWhatTheTableForbids(module: String) throws {
        let never = try #require(Self.forbidden.first { $0.0 == module }?.1)
        let imported = try Self.imports(of: module)
        #expect(!imported.isEmpty, "\(module) has no imports: wrong folder?")
        #expect(imported.intersection(never).isEmpty, "\(module) imports \(imported.intersection(never).sorted())")
    }

    @Test func theInboxIsImportedByTheSimulatorsTheBridgeAndTheCommandLineAlone() throws {
        #expect(try Self.imports(of: "APNsInbox") == ["APNsCore", "APNsRuntime", "Synchronization"])
        #expect(try Self.imports(of: "GatewaySimulator").contains("APNsInbox"))
        #expect(try Self.imports(of: "LegacyBridge").contains("APNsInbox"))
    }
}
