import Foundation
import TestSupport
import Testing

/// A `legacy-push` child process whose output lines can be awaited (for `serve` and polling).
final class ChildProcess: @unchecked Sendable {
    // @unchecked: the buffers are guarded by `lock`; `process` is only used from the test.
    let process = Process()
    private let lock = NSCondition()
    private var outLines: [String] = []
    private var errText = ""
    private var partial = Data()

    init(_ arguments: [String], environment: [String: String] = [:], directory: String? = nil) throws {
        process.executableURL = CLIRunner.binary
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        out.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            self?.appendOut(data)
        }
        err.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else { return }
            lock.withLock { errText += String(decoding: data, as: UTF8.self) }
        }
        try process.run()
    }

    private func appendOut(_ data: Data) {
        lock.withLock {
            partial.append(data)
            while let newline = partial.firstIndex(of: 0x0A) {
                outLines.append(String(decoding: partial[partial.startIndex..<newline], as: UTF8.self))
                partial.removeSubrange(partial.startIndex...newline)
            }
            lock.broadcast()
        }
    }

    /// Waits (up to `timeout` seconds) for a stdout line satisfying `predicate` and returns it.
    func waitForLine(timeout: Double = 20, where predicate: (String) -> Bool) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        return lock.withLock {
            while true {
                if let line = outLines.first(where: predicate) { return line }
                if !process.isRunning && partial.isEmpty { return nil }
                if !lock.wait(until: min(deadline, Date().addingTimeInterval(0.1))), Date() >= deadline { return nil }
            }
        }
    }

    /// Waits (up to `timeout` seconds) until stderr satisfies `predicate`; returns whether it did.
    func waitForStderr(timeout: Double = 20, where predicate: (String) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if lock.withLock({ predicate(errText) }) { return true }
            if !process.isRunning { return lock.withLock { predicate(errText) } }
            usleep(10_000)
        }
        return false
    }

    var lines: [String] { lock.withLock { outLines } }
    var stderr: String { lock.withLock { errText } }

    /// Sends SIGINT and waits for the exit status.
    func interruptAndWait(timeout: Double = 20) -> Int32? {
        process.interrupt()
        return waitForExit(timeout: timeout)
    }

    func waitForExit(timeout: Double = 20) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline {
            // Foundation learns of the exit through Dispatch, which a busy test process (many
            // children, many pipes) can leave undelivered: ask the kernel too, without reaping.
            if let status = Self.exitStatusWithoutReaping(process.processIdentifier) {
                usleep(50_000)  // let the pipe handlers drain
                return status
            }
            usleep(10_000)
        }
        if process.isRunning {
            process.terminate()
            return nil
        }
        usleep(50_000)  // let the pipe handlers drain
        return process.terminationStatus
    }

    /// The exit status of child `pid` if it has exited (the signal's number if one ended it, as
    /// Foundation's `terminationStatus`), left for Foundation to reap (`WNOWAIT`).
    static func exitStatusWithoutReaping(_ pid: Int32) -> Int32? {
        var info = siginfo_t()
        guard waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0,
            info._sifields._sigchld.si_pid == pid
        else { return nil }
        return info._sifields._sigchld.si_status
    }

    deinit {
        if process.isRunning { process.terminate() }
    }
}
