internal import APNsRuntime
import Synchronization

/// Where the CLI's output goes: results to stdout (buffered, flushed in large writes), diagnostics
/// to stderr (unbuffered, one line at a time). Tests capture both in memory instead.
package final class Console: Sendable {
    package enum Sink: Sendable {
        case standardStreams
        case memory
    }

    private struct State {
        package var out: [UInt8] = []
        package var err: [UInt8] = []
        /// The `errno` of the first failed write to stdout.
        package var outputFailure: Int32?
        /// Whether the command already reported that failure in its own words.
        package var outputFailureReported = false
    }

    private let sink: Sink
    private let state = Mutex(State())
    /// Whether stderr is a terminal (progress lines go there only then).
    package let stderrIsTerminal: Bool
    /// Whether stdout is a terminal (a progress line is erased before results are printed only
    /// when both go to the terminal).
    package let stdoutIsTerminal: Bool
    /// Whether stdin is a terminal (passphrase prompts only then).
    package let stdinIsTerminal: Bool

    package init(sink: Sink = .standardStreams) {
        self.sink = sink
        switch sink {
        case .standardStreams:
            stderrIsTerminal = FileDescriptor.isTerminal(2)
            stdoutIsTerminal = FileDescriptor.isTerminal(1)
            stdinIsTerminal = FileDescriptor.isTerminal(0)
        case .memory:
            stderrIsTerminal = false
            stdoutIsTerminal = false
            stdinIsTerminal = false
        }
    }

    /// A memory console that claims terminals, for tests of what commands do on a terminal.
    package init(memoryWithTerminals stdin: Bool, stdout: Bool, stderr: Bool) {
        sink = .memory
        stdinIsTerminal = stdin
        stdoutIsTerminal = stdout
        stderrIsTerminal = stderr
    }

    /// Writes a line to stdout.
    package func print(_ line: String) {
        write(Array(line.utf8) + [0x0A])
    }

    /// Writes raw bytes to stdout.
    package func write(_ bytes: [UInt8]) {
        let flushNow: [UInt8]? = state.withLock { state in
            state.out.append(contentsOf: bytes)
            guard sink == .standardStreams, state.out.count >= 64 * 1024 else { return nil }
            defer { state.out.removeAll(keepingCapacity: true) }
            return state.out
        }
        if let flushNow { writeOutput(flushNow) }
    }

    /// Writes `legacy-push: error: <message>` to stderr.
    package func error(_ message: String) {
        diagnostic("legacy-push: error: \(message)")
    }

    /// Writes `legacy-push: warning: <message>` to stderr.
    package func warning(_ message: String) {
        diagnostic("legacy-push: warning: \(message)")
    }

    /// Writes a line to stderr (after flushing stdout, so interleaving stays in order).
    package func diagnostic(_ line: String) {
        writeError(Array(line.utf8) + [0x0A])
    }

    /// Writes raw bytes to stderr, unbuffered.
    package func writeError(_ bytes: [UInt8]) {
        flush()
        switch sink {
        case .standardStreams: Self.writeAll(bytes, to: 2)
        case .memory: state.withLock { $0.err.append(contentsOf: bytes) }
        }
    }

    /// Sends buffered stdout bytes.
    package func flush() {
        guard sink == .standardStreams else { return }
        let pending: [UInt8] = state.withLock { state in
            defer { state.out.removeAll(keepingCapacity: true) }
            return state.out
        }
        if !pending.isEmpty { writeOutput(pending) }
    }

    /// Why writing to stdout failed ("No space left on device"), if it did: results were lost,
    /// so the command must not exit 0 (``LegacyPush`` checks this last).
    package var outputFailure: String? {
        flush()
        return state.withLock { $0.outputFailure.map { errnoText($0) } }
    }

    /// Whether a command has reported the stdout failure itself (``LegacyPush`` then adds no line
    /// of its own, but still never exits 0).
    package var outputFailureReported: Bool {
        get { state.withLock { $0.outputFailureReported } }
        set { state.withLock { $0.outputFailureReported = newValue } }
    }

    private func writeOutput(_ bytes: [UInt8]) {
        guard let code = FileDescriptor.writeAll(bytes, to: 1) else { return }
        state.withLock { state in
            if state.outputFailure == nil { state.outputFailure = code }
        }
    }

    /// What was written to stdout (memory sink only).
    package var capturedOutput: [UInt8] { state.withLock { $0.out } }
    /// What was written to stderr (memory sink only).
    package var capturedError: String { state.withLock { String(decoding: $0.err, as: UTF8.self) } }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
        FileDescriptor.writeAll(bytes, to: descriptor)  // nowhere left to report a failure on stderr
    }
}
