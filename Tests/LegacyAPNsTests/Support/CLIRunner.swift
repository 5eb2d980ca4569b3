import CommandLineKit
import Foundation
import ProcessHarness
import TestSupport
import Testing

@testable import LegacyPushCLI

/// Runs `legacy-push` in-process (parsing and commands, output captured) or as the built binary.
enum CLIRunner {
    struct Result: Sendable {
        var status: Int32
        var stdout: [UInt8]
        var stderr: String

        var output: String { String(decoding: stdout, as: UTF8.self) }
        var outputLines: [String] { output.split(separator: "\n").map(String.init) }
        var errorLines: [String] { stderr.split(separator: "\n").map(String.init) }
    }

    /// Runs the command in this process with a memory console.
    static func run(_ arguments: [String]) async -> Result {
        let console = Console(sink: .memory)
        let status = await LegacyPush.main(arguments, console: console)
        return Result(status: status, stdout: console.capturedOutput, stderr: console.capturedError)
    }

    /// The built `legacy-push` binary, next to the test bundle.
    static var binary: URL {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("legacy-push")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(
            ".build/debug/legacy-push")
    }

    /// Runs the built binary as a child process, feeding `stdin`, and waits for it.
    static func runBinary(
        _ arguments: [String], stdin: [UInt8] = [], environment: [String: String] = [:], directory: URL? = nil
    ) throws -> Result {
        try runProcess(binary, arguments, stdin: stdin, environment: environment, directory: directory)
    }

    /// Runs any program, feeding `stdin` and collecting both outputs without risk of a full pipe.
    static func runProcess(
        _ executable: URL, _ arguments: [String], stdin: [UInt8] = [], environment: [String: String] = [:],
        directory: URL? = nil
    ) throws -> Result {
        let child = try SpawnedProcess(
            executable.path, arguments, environment: environment, directory: directory?.path, stdin: .bytes(stdin))
        // The bound only keeps a hung child from hanging the suite; tests finish in seconds.
        guard let termination = child.waitForExit(timeout: 300) else {
            let states = ChildProcess.threadStates(child.pid)
            child.send(SIGKILL)
            return Result(
                status: -1, stdout: child.standardOutput,
                stderr: String(decoding: child.standardError, as: UTF8.self) + "\n(killed after 300 s:\n\(states))")
        }
        return Result(
            status: termination.status, stdout: child.standardOutput,
            stderr: String(decoding: child.standardError, as: UTF8.self))
    }
}

/// A value behind a lock, for handing results out of threads in tests.
final class Locked<Value: Sendable>: @unchecked Sendable {
    // @unchecked: every access goes through `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func get() -> Value { lock.withLock { value } }
    func set(_ newValue: Value) { lock.withLock { value = newValue } }
    func update<R>(_ body: (inout Value) -> R) -> R { lock.withLock { body(&value) } }
}
