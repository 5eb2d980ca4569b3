import Foundation
import Testing

/// The HTTP/2 tools the loopback tests run (nghttp2's `nghttp` and `nghttpd`, `curl`), found on
/// `PATH` or in the Debian locations. A missing one fails the test naming the package to install:
/// these tests are never skipped.
enum ExternalProgram {
    case nghttp, nghttpd, curl

    var name: String {
        switch self {
        case .nghttp: "nghttp"
        case .nghttpd: "nghttpd"
        case .curl: "curl"
        }
    }

    /// The Debian package that installs it.
    var package: String {
        switch self {
        case .nghttp: "nghttp2-client"
        case .nghttpd: "nghttp2-server"
        case .curl: "curl"
        }
    }

    /// The executable, or nil after recording a failure that names the package.
    func locate(sourceLocation: SourceLocation = #_sourceLocation) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let folders = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        for folder in folders {
            let candidate = folder + "/" + name
            if FileManager.default.isExecutableFile(atPath: candidate) { return URL(fileURLWithPath: candidate) }
        }
        Issue.record(
            "\(name) is not installed: install the Debian package \(package) (apt-get install \(package))",
            sourceLocation: sourceLocation)
        return nil
    }
}

/// A long-running child process (a server) whose output lines can be awaited.
final class BackgroundProgram: @unchecked Sendable {
    // @unchecked: the buffers are guarded by `lock`; `process` is only used from the test.
    let process = Process()
    private let lock = NSCondition()
    private var output = ""
    private var errors = ""

    init(_ executable: URL, _ arguments: [String]) throws {
        process.executableURL = executable
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        out.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let text = String(decoding: handle.availableData, as: UTF8.self)
            guard let self, !text.isEmpty else { return }
            lock.withLock {
                output += text
                lock.broadcast()
            }
        }
        err.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let text = String(decoding: handle.availableData, as: UTF8.self)
            guard let self, !text.isEmpty else { return }
            lock.withLock {
                errors += text
                lock.broadcast()
            }
        }
        try process.run()
    }

    /// Waits for output containing `text` (`timeout` guards against a hang); false if the program
    /// exited or the time ran out first.
    func waitForOutput(containing text: String, timeout: Double = 20) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        return lock.withLock {
            while !output.contains(text) {
                if !process.isRunning { return false }
                if !lock.wait(until: min(deadline, Date().addingTimeInterval(0.5))), Date() >= deadline { return false }
            }
            return true
        }
    }

    var standardError: String { lock.withLock { errors } }
    var standardOutput: String { lock.withLock { output } }

    /// Kills the program. SIGKILL, not `terminate()`'s SIGTERM: a child started from a test thread
    /// inherits that thread's blocked signals, and nghttpd never unblocks SIGTERM.
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    deinit { stop() }
}
