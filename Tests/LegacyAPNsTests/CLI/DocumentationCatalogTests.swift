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
        #expect(modules.count == 7)
        let readme = try String(contentsOf: Self.root.appending(path: "README.md"), encoding: .utf8)
        let paragraph = try #require(readme.range(of: "The API documentation of every public module"))
        let sentence = readme[paragraph.lowerBound...].prefix { $0 != "." }
        for module in modules { #expect(sentence.contains("`\(module)`"), "README omits \(module)") }
        #expect(sentence.contains("the \(["", "one", "two", "three", "four", "five", "six", "seven"][modules.count])"))
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
}
