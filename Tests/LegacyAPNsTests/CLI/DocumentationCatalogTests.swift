import Foundation
import TestSupport
import Testing

/// The DocC catalogs and what README.md says about them agree with `Scripts/build-docs.sh`.
@Suite struct DocumentationCatalogTests {
    static let root = DocumentationSnippetTests.root

    /// The `modules=( ... )` list of the script.
    static var documentedModules: [String] {
        let script = (try? String(contentsOf: root.appending(path: "Scripts/build-docs.sh"), encoding: .utf8)) ?? ""
        guard let start = script.range(of: "modules=(\n"), let end = script[start.upperBound...].range(of: ")") else {
            return []
        }
        return script[start.upperBound..<end.lowerBound].split(whereSeparator: \.isWhitespace).map(String.init)
    }

    @Test func theReadmeNamesEveryModuleTheScriptDocuments() throws {
        let modules = Self.documentedModules
        #expect(modules.count == 10)
        let readme = try String(contentsOf: Self.root.appending(path: "README.md"), encoding: .utf8)
        let paragraph = try #require(readme.range(of: "The API documentation of every public module"))
        let sentence = readme[paragraph.lowerBound...].prefix { $0 != "." }
        for module in modules { #expect(sentence.contains("`\(module)`"), "README omits \(module)") }
        #expect(
            sentence.contains(
                "the \(["", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"][modules.count])"
            ))
    }

    /// Each landing page curates its module: a Topics section, and a module that re-exports the
    /// core lists the core types its users need under a group that says where they come from.
    @Test(arguments: documentedModules)
    func everyLandingPageCuratesItsTopics(module: String) throws {
        let page = try String(
            contentsOf: Self.root.appending(path: "Sources/\(module)/\(module).docc/\(module).md"), encoding: .utf8)
        let topics = try #require(page.range(of: "\n## Topics\n"), "\(module) has no Topics section")
        let groups = page[topics.upperBound...].components(separatedBy: "\n### ").dropFirst()
        #expect(groups.count >= 2)
        if !["APNsCore", "APNsCredentials"].contains(module) {
            #expect(
                groups.contains {
                    $0.split(separator: "\n").first?.contains("(from APNsCore)") == true
                },
                "\(module): no group of the APNsCore types it re-exports")
        }
    }

    /// `Scripts/docs-filter.py` (run by build-docs.sh on every re-exporting module): a page keeps
    /// the module's own symbols and the re-exported types its catalog curates, leaves out the rest
    /// (HTTP2Client's page used to list `FrameDecoder` and `BridgeSenderMachine`), and turns a kept
    /// symbol's link to a left-out type into code voice, so DocC finds no broken link.
    @Test func theFilterLeavesOutReExportedTypesNoPageCurates() throws {
        let scratch = try ScratchDirectory()
        let catalog = scratch.file("Client.docc")
        try FileManager.default.createDirectory(atPath: catalog, withIntermediateDirectories: true)
        try "# ``Client``\n\n## Topics\n\n### Core (from APNsCore)\n\n- ``DeviceToken``\n".write(
            toFile: catalog + "/Client.md", atomically: true, encoding: .utf8)
        func symbol(_ name: String, _ module: String, docs: String = "") -> [String: Any] {
            [
                "identifier": ["precise": "s:\(name)", "interfaceLanguage": "swift"], "pathComponents": [name],
                "location": ["uri": "file:///x/Sources/\(module)/\(name).swift"],
                "docComment": ["lines": [["text": docs]]],
            ]
        }
        let graph: [String: Any] = [
            "symbols": [
                symbol("ClientThing", "Client", docs: "Sends ``DeviceToken``s, decoded by ``FrameDecoder/next()``."),
                symbol("DeviceToken", "APNsCore"), symbol("FrameDecoder", "APNsCore"),
                symbol("BridgeSenderMachine", "APNsCore"),
            ],
            "relationships": [
                ["source": "s:FrameDecoder", "target": "s:DeviceToken", "kind": "memberOf"],
                ["source": "s:ClientThing", "target": "s:DeviceToken", "kind": "memberOf"],
            ],
        ]
        let path = scratch.file("Client.symbols.json")
        try JSONSerialization.data(withJSONObject: graph).write(to: URL(fileURLWithPath: path))
        let result = try CLIRunner.runProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["python3", Self.root.appending(path: "Scripts/docs-filter.py").path, path, "Client", catalog])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("2 re-exported symbols no page curates left out"), "\(result.stderr)")
        let filtered = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        let symbols = try #require(filtered["symbols"] as? [[String: Any]])
        let names = symbols.compactMap { ($0["pathComponents"] as? [String])?.first }
        #expect(Set(names) == ["ClientThing", "DeviceToken"])
        let docs = symbols.first { ($0["pathComponents"] as? [String])?.first == "ClientThing" }
            .flatMap { (($0["docComment"] as? [String: Any])?["lines"] as? [[String: Any]])?.first?["text"] as? String }
        #expect(docs == "Sends ``DeviceToken``s, decoded by `FrameDecoder/next()`.")
        #expect((filtered["relationships"] as? [[String: Any]])?.count == 1)
    }
}
