import Foundation
import ProcessHarness
import Synchronization
import TestSupport
import Testing

/// A `legacy-push` child process whose output lines can be awaited (for `serve` and polling),
/// started as a shell starts it (``SpawnedProcess``: default signals, none blocked).
final class ChildProcess: Sendable {
    let spawned: SpawnedProcess
    /// The stdout lines split so far, and where the unsplit rest begins.
    private let parsed = Mutex<(offset: Int, lines: [String])>((0, []))

    init(_ arguments: [String], environment: [String: String] = [:], directory: String? = nil) throws {
        spawned = try SpawnedProcess(
            CLIRunner.binary.path, arguments, environment: environment, directory: directory)
    }

    /// The complete lines of `out` (the part after the last newline is still being written).
    private func lines(_ out: [UInt8]) -> [String] {
        parsed.withLock { parsed in
            var start = parsed.offset
            while let newline = out[start...].firstIndex(of: 0x0A) {
                parsed.lines.append(String(decoding: out[start..<newline], as: UTF8.self))
                start = newline + 1
            }
            parsed.offset = start
            return parsed.lines
        }
    }

    /// Waits (up to `timeout` seconds) for a stdout line satisfying `predicate` and returns it.
    func waitForLine(timeout: Double = 20, where predicate: (String) -> Bool) -> String? {
        var found: String?
        _ = spawned.wait(timeout: timeout) { out, _, _ in
            found = self.lines(out).first(where: predicate)
            return found != nil
        }
        return found
    }

    /// Waits (up to `timeout` seconds) until stderr satisfies `predicate`; returns whether it did.
    func waitForStderr(timeout: Double = 20, where predicate: (String) -> Bool) -> Bool {
        spawned.wait(timeout: timeout) { _, err, _ in predicate(String(decoding: err, as: UTF8.self)) }
    }

    var lines: [String] { lines(spawned.standardOutput) }
    var stderr: String { String(decoding: spawned.standardError, as: UTF8.self) }
    var isRunning: Bool { spawned.isRunning }

    /// Sends SIGINT and waits for the exit status.
    func interruptAndWait(timeout: Double = 20) -> Int32? {
        spawned.send(SIGINT)
        return waitForExit(timeout: timeout)
    }

    /// The exit status (a signal's number if one ended it), or nil after `timeout` seconds: then
    /// the child is killed, with what it was doing recorded in the test's log first.
    func waitForExit(timeout: Double = 20) -> Int32? {
        if let termination = spawned.waitForExit(timeout: timeout) { return termination.status }
        print("child \(spawned.pid) did not exit within \(timeout) s:\n\(Self.threadStates(spawned.pid))")
        spawned.send(SIGKILL)
        _ = spawned.waitForExit(timeout: 5)
        return nil
    }

    /// Kills the child with `signal` and waits for it; returns how it ended.
    func kill(_ signal: Int32) -> SpawnedProcess.Termination? {
        spawned.send(signal)
        return spawned.waitForExit(timeout: 20)
    }

    /// Each thread of `pid` with its state and kernel wait channel, for a child that hangs.
    static func threadStates(_ pid: Int32) -> String {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.sorted().map { task in
            let base = "/proc/\(pid)/task/\(task)/"
            let name =
                (try? String(contentsOfFile: base + "comm", encoding: .utf8))?.trimmingCharacters(
                    in: .whitespacesAndNewlines) ?? "?"
            let status = (try? String(contentsOfFile: base + "status", encoding: .utf8)) ?? ""
            let state = status.split(separator: "\n").first { $0.hasPrefix("State:") } ?? ""
            let wchan = (try? String(contentsOfFile: base + "wchan", encoding: .utf8)) ?? "?"
            return "  \(task) \(name) \(state) wchan=\(wchan)"
        }.joined(separator: "\n")
    }
}
