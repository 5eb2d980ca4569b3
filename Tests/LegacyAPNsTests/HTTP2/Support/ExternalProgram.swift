import Foundation
import ProcessHarness
import Testing

/// The tools the loopback tests run (nghttp2's `nghttp` and `nghttpd`, `curl`; `h2load` for the
/// benchmarks; `haproxy` for the fleet test; `tinyproxy`, the proxy provider connections tunnel
/// through; headless `chromium`, the browser the inbox page is loaded in), found on `PATH` or in
/// the Debian locations. A missing one fails the test naming the package to install: these tests
/// are never skipped. `Scripts/setup.sh --tests` installs every one of them (SetupScriptTests
/// checks that for each case).
enum ExternalProgram: CaseIterable {
    case nghttp, nghttpd, h2load, curl, haproxy, tinyproxy, chromium

    var name: String {
        switch self {
        case .nghttp: "nghttp"
        case .nghttpd: "nghttpd"
        case .h2load: "h2load"
        case .curl: "curl"
        case .haproxy: "haproxy"
        case .tinyproxy: "tinyproxy"
        case .chromium: "chromium"
        }
    }

    /// The Debian package that installs it.
    var package: String {
        switch self {
        case .nghttp: "nghttp2-client"
        case .nghttpd: "nghttp2-server"
        case .h2load: "nghttp2-client"
        case .curl: "curl"
        case .haproxy: "haproxy"
        case .tinyproxy: "tinyproxy"
        case .chromium: "chromium"
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

/// A long-running child process (a server) whose output can be awaited, started as a shell
/// starts it (``SpawnedProcess``).
final class BackgroundProgram: Sendable {
    let spawned: SpawnedProcess

    init(_ executable: URL, _ arguments: [String]) throws {
        spawned = try SpawnedProcess(executable.path, arguments)
    }

    /// Waits for output containing `text` (`timeout` guards against a hang); false if the program
    /// exited or the time ran out first.
    func waitForOutput(containing text: String, timeout: Double = 20) -> Bool {
        spawned.wait(timeout: timeout) { out, _, _ in String(decoding: out, as: UTF8.self).contains(text) }
    }

    var standardError: String { String(decoding: spawned.standardError, as: UTF8.self) }
    var standardOutput: String { String(decoding: spawned.standardOutput, as: UTF8.self) }

    /// Kills the program and waits for it.
    func stop() {
        spawned.send(SIGKILL)
        _ = spawned.waitForExit(timeout: 20)
    }

    deinit { stop() }
}
