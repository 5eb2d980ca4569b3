import Foundation
import TestSupport
import Testing

/// Every Swift snippet of the documentation compiles as a program of another package would, with
/// only the imports the snippet shows: the DocC landing pages and articles of every module
/// (`Sources/<Module>/<Module>.docc/*.md`) and README.md. The ```swift blocks of one page are read
/// as one program, in order (an article builds on its earlier blocks), their imports first.
@Suite struct DocumentationSnippetTests {
    static let root = FrameFixtures.directory.deletingLastPathComponent().deletingLastPathComponent()

    /// README.md and every DocC page, as paths relative to the package root.
    static var pages: [String] {
        let sources = root.appending(path: "Sources")
        let modules = (try? FileManager.default.contentsOfDirectory(atPath: sources.path)) ?? []
        var pages = ["README.md"]
        for module in modules.sorted() {
            let catalog = "Sources/\(module)/\(module).docc"
            let files = (try? FileManager.default.contentsOfDirectory(atPath: root.appending(path: catalog).path)) ?? []
            pages += files.filter { $0.hasSuffix(".md") }.sorted().map { "\(catalog)/\($0)" }
        }
        return pages
    }

    /// The page's ```swift blocks as one program: its imports (each once) first, then the code.
    static func program(of page: String) throws -> (source: String, blocks: Int) {
        let text = try String(contentsOf: root.appending(path: page), encoding: .utf8)
        var imports: [String] = []
        var code: [String] = []
        var inBlock = false
        var blocks = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                inBlock = line == "```swift"
                if inBlock { blocks += 1 }
                continue
            }
            guard inBlock else { continue }
            if line.hasPrefix("import ") {
                if !imports.contains(String(line)) { imports.append(String(line)) }
            } else {
                code.append(String(line))
            }
        }
        return ((imports + [""] + code).joined(separator: "\n") + "\n", blocks)
    }

    @Test func everyModuleHasADocumentedSnippet() throws {
        let withSnippets = try Self.pages.filter { try Self.program(of: $0).blocks > 0 }
        for module in [
            "APNsCore", "APNsCredentials", "LegacyAPNs", "FeedbackClient", "GatewaySimulator",
            "HTTP2Client", "LegacyBridge", "APNsInput",
        ] {
            #expect(withSnippets.contains { $0.hasPrefix("Sources/\(module)/") }, "\(module) shows no code")
        }
    }

    @Test(arguments: pages)
    func snippetsCompileWithOnlyTheImportsTheyShow(page: String) throws {
        let (source, blocks) = try Self.program(of: page)
        guard blocks > 0 else { return }
        let name = page.split(separator: "/").last!.replacingOccurrences(of: ".md", with: "")
        let failure = try ConsumerCompiler.typecheck(source, name: name, asLibrary: source.contains("@main"))
        #expect(failure == nil, "\(page): \(failure.map(String.init(describing:)) ?? "")")
    }
}
