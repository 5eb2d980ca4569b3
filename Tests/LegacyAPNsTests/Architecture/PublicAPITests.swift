import Foundation
import Testing

/// ARCHITECTURE.md: no C pointer leaves its module, and no public declaration takes or returns a
/// raw pointer (public signatures take arrays or byte collections; the pointer-based code under
/// them is `package`). Checked over the sources of every module but the internal runtime.
@Suite struct PublicAPITests {
    /// The signature of every public declaration (up to its body), with its file and line.
    static func publicSignatures() throws -> [(place: String, signature: String)] {
        var found: [(String, String)] = []
        for file in try PlatformSeamTests.swiftFiles() where !file.path.hasPrefix("APNsRuntime/") {
            let lines = file.text.split(separator: "\n", omittingEmptySubsequences: false)
            for (index, line) in lines.enumerated() {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                guard !trimmed.hasPrefix("//"), trimmed.split(separator: " ").contains("public") else { continue }
                var signature = trimmed
                var next = index + 1
                // A signature over several lines: until its parentheses close.
                func isOpen(_ text: String) -> Bool {
                    text.filter { $0 == "(" }.count > text.filter { $0 == ")" }.count
                }
                while isOpen(signature), next < lines.count, next - index < 12 {
                    signature += " " + lines[next].trimmingCharacters(in: .whitespaces)
                    next += 1
                }
                let head = signature.split(separator: "{", maxSplits: 1).first.map(String.init) ?? signature
                found.append(("\(file.path):\(index + 1)", head))
            }
        }
        return found
    }

    @Test func noPublicDeclarationTakesOrReturnsARawPointer() throws {
        let signatures = try Self.publicSignatures()
        #expect(signatures.count > 500)
        let pointers = signatures.filter { $0.signature.contains("Unsafe") || $0.signature.contains("OpaquePointer") }
        #expect(pointers.map { "\($0.place): \($0.signature)" } == [])
    }
}
