import Foundation
import TestSupport

/// A fresh temporary directory for one test, removed with everything in it when released.
final class ScratchDirectory {
    let path: String

    init() throws {
        var template = Array("\(NSTemporaryDirectory())/legacyapns-test-XXXXXX".utf8CString)
        guard let created = mkdtemp(&template) else {
            throw CocoaError(.fileWriteUnknown)
        }
        path = String(cString: created)
    }

    /// A path inside the directory.
    func file(_ name: String) -> String {
        path + "/" + name
    }

    /// Writes `bytes` to a file in the directory and returns its path.
    @discardableResult
    func write(_ bytes: [UInt8], named name: String) throws -> String {
        let path = file(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A file's bytes, or nil when it does not exist.
    func read(_ name: String) -> [UInt8]? {
        FileManager.default.contents(atPath: file(name)).map(Array.init)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}
