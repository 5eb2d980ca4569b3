import Foundation

/// The checked-in test fixtures, located from this source file, so tests work from any working
/// directory.
package enum Fixtures {
    /// `<package root>/Fixtures`.
    package static let root: String = {
        // #filePath is <root>/Tests/TestSupport/Fixtures.swift.
        var components = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false)
        components.removeLast(3)
        return components.joined(separator: "/") + "/Fixtures"
    }()

    /// The path of a file in `Fixtures/certs`.
    package static func certs(_ name: String) -> String {
        root + "/certs/" + name
    }

    /// The path of a file in `Fixtures/feedback`.
    package static func feedback(_ name: String) -> String {
        root + "/feedback/" + name
    }

    /// A file's bytes; a missing fixture stops the test run with its path.
    package static func bytes(_ path: String) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            fatalError("missing fixture file \(path)")
        }
        return Array(data)
    }
}
