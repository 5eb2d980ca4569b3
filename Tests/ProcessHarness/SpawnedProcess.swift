import Foundation

#if canImport(Glibc)
    import Glibc
#endif

// glibc's GNU extensions, which the Glibc module does not show (they need _GNU_SOURCE).
@_silgen_name("pipe2")
private func gnuPipe2(_ descriptors: UnsafeMutablePointer<Int32>, _ flags: Int32) -> Int32
@_silgen_name("posix_spawn_file_actions_addchdir_np")
private func gnuAddChdir(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ path: UnsafePointer<CChar>)
    -> Int32
@_silgen_name("posix_spawn_file_actions_addclosefrom_np")
private func gnuAddCloseFrom(_ actions: UnsafeMutablePointer<posix_spawn_file_actions_t>, _ from: Int32) -> Int32

/// A child process started the way a shell starts one, watched without Foundation's `Process`.
///
/// - Every signal has its default action and none is blocked. A child of `Process` started from a
///   test (a cooperative or Dispatch thread, which block nearly every signal) inherits that mask,
///   so a SIGINT test would not test what a user's Ctrl-C does.
/// - Only descriptors 0, 1 and 2 are inherited (others' pipes never leak into it, nor its into
///   others' children, which would hold an end open and delay everyone's end of file).
/// - Its output is read by threads of its own and its exit is collected by a `waitpid` thread of
///   its own: nothing depends on Dispatch, which a busy test process can leave undelivered.
public final class SpawnedProcess: @unchecked Sendable {
    // @unchecked: the mutable state is guarded by `lock`; `pid` is immutable.
    /// What the child reads on stdin.
    public enum Input {
        case null
        case bytes([UInt8])
    }

    /// Where the child's stdout or stderr goes.
    public enum Output {
        /// Collected (``standardOutput``, ``standardError``).
        case pipe
        case null
        /// A file opened for writing (`/dev/full`, for instance).
        case file(String)
        /// A pipe whose reading end is closed before the child starts (writes fail with EPIPE).
        case brokenPipe
    }

    /// How the child ended.
    public enum Termination: Equatable, Sendable {
        case exit(Int32)
        case signal(Int32)

        /// The exit code, or the signal's number (as Foundation's `terminationStatus`).
        public var status: Int32 {
            switch self {
            case .exit(let code): code
            case .signal(let number): number
            }
        }
    }

    /// The child could not be started.
    public struct SpawnError: Error, CustomStringConvertible {
        /// What failed.
        public var description: String
    }

    /// The child's process id.
    public let pid: pid_t
    private let shared = Shared()

    /// What the threads fill in; they hold this, not the process object, so dropping the object
    /// kills a child still running (see deinit).
    private final class Shared: @unchecked Sendable {
        // @unchecked: every property is guarded by `lock`.
        let lock = NSCondition()
        var out: [UInt8] = []
        var err: [UInt8] = []
        var termination: Termination?
        var openReaders = 0
    }

    /// Starts `executable` with `arguments` (the environment is this process's, merged with
    /// `environment`), in `directory` when given.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String] = [:], directory: String? = nil,
        stdin: Input = .null, stdout: Output = .pipe, stderr: Output = .pipe
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var all = sigset_t()
        sigfillset(&all)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        var parentEnds: [Int32] = []  // closed on failure
        var childEnds: [Int32] = []  // closed in the parent once the child has them
        defer { for end in childEnds { close(end) } }
        func pipeEnds() throws -> (read: Int32, write: Int32) {
            var ends: [Int32] = [-1, -1]
            guard gnuPipe2(&ends, O_CLOEXEC) == 0 else { throw SpawnError(description: "pipe2: \(errno)") }
            return (ends[0], ends[1])
        }
        var inputWriter: (Int32, [UInt8])?
        switch stdin {
        case .null:
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        case .bytes(let bytes):
            let ends = try pipeEnds()
            posix_spawn_file_actions_adddup2(&actions, ends.read, 0)
            childEnds.append(ends.read)
            parentEnds.append(ends.write)
            inputWriter = (ends.write, bytes)
        }
        var readers: [(Int32, Bool)] = []  // (descriptor, isStdout)
        for (target, output) in [(Int32(1), stdout), (Int32(2), stderr)] {
            switch output {
            case .pipe:
                let ends = try pipeEnds()
                posix_spawn_file_actions_adddup2(&actions, ends.write, target)
                childEnds.append(ends.write)
                parentEnds.append(ends.read)
                readers.append((ends.read, target == 1))
            case .null:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
            case .file(let path):
                posix_spawn_file_actions_addopen(&actions, target, path, O_WRONLY, 0)
            case .brokenPipe:
                let ends = try pipeEnds()
                close(ends.read)
                posix_spawn_file_actions_adddup2(&actions, ends.write, target)
                childEnds.append(ends.write)
            }
        }
        _ = gnuAddCloseFrom(&actions, 3)
        if let directory { _ = gnuAddChdir(&actions, directory) }

        let environmentLines = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0)=\($1)" }
        var child: pid_t = 0
        let result = Self.withCStrings([executable] + arguments) { argv in
            Self.withCStrings(environmentLines) { envp in
                posix_spawn(&child, executable, &actions, &attributes, argv, envp)
            }
        }
        guard result == 0 else {
            for end in parentEnds { close(end) }
            throw SpawnError(description: "cannot start \(executable): \(String(cString: strerror(result)))")
        }
        pid = child
        let shared = self.shared
        shared.openReaders = readers.count
        for (descriptor, isStdout) in readers {
            Thread { Self.read(descriptor, isStdout: isStdout, into: shared) }.start()
        }
        if let (descriptor, bytes) = inputWriter {
            signal(SIGPIPE, SIG_IGN)  // a child that exits without reading: EPIPE, not death
            Thread {
                var offset = 0
                while offset < bytes.count {
                    let count = bytes.withUnsafeBytes {
                        write(descriptor, $0.baseAddress! + offset, bytes.count - offset)
                    }
                    if count < 0, errno == EINTR { continue }
                    if count <= 0 { break }
                    offset += count
                }
                close(descriptor)
            }.start()
        }
        let spawned = child
        Thread { Self.reap(spawned, into: shared) }.start()
    }

    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R)
        -> R
    {
        let pointers = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    private static func read(_ descriptor: Int32, isStdout: Bool, into shared: Shared) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            shared.lock.withLock {
                if isStdout { shared.out += buffer[0..<count] } else { shared.err += buffer[0..<count] }
                shared.lock.broadcast()
            }
        }
        close(descriptor)
        shared.lock.withLock {
            shared.openReaders -= 1
            shared.lock.broadcast()
        }
    }

    private static func reap(_ pid: pid_t, into shared: Shared) {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { break }
        }
        let ended: Termination = (status & 0x7f) == 0 ? .exit((status >> 8) & 0xff) : .signal(status & 0x7f)
        shared.lock.withLock {
            shared.termination = ended
            shared.lock.broadcast()
        }
    }

    /// What the child wrote to stdout (with `.pipe`) so far.
    public var standardOutput: [UInt8] { shared.lock.withLock { shared.out } }
    /// What the child wrote to stderr (with `.pipe`) so far.
    public var standardError: [UInt8] { shared.lock.withLock { shared.err } }
    /// Whether the child has not been reaped yet.
    public var isRunning: Bool { shared.lock.withLock { shared.termination == nil } }

    /// Sends `signal` (nothing once the child has been reaped, so never to a reused pid).
    public func send(_ signal: Int32) {
        shared.lock.withLock {
            if shared.termination == nil { _ = kill(pid, signal) }
        }
    }

    /// Waits up to `timeout` seconds until `condition` (stdout, stderr, whether it ended) holds,
    /// waking on every chunk of output and on the exit. Returns whether it held.
    public func wait(timeout: Double, until condition: ([UInt8], [UInt8], Bool) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        let shared = self.shared
        return shared.lock.withLock {
            while true {
                if condition(shared.out, shared.err, shared.termination != nil) { return true }
                if shared.termination != nil && shared.openReaders == 0 { return false }
                if !shared.lock.wait(until: deadline) {
                    return condition(shared.out, shared.err, shared.termination != nil)
                }
            }
        }
    }

    /// Waits up to `timeout` seconds for the exit and then (a moment more) for the end of its
    /// output; nil if it is still running.
    public func waitForExit(timeout: Double) -> Termination? {
        let deadline = Date().addingTimeInterval(timeout)
        let shared = self.shared
        return shared.lock.withLock {
            while shared.termination == nil {
                if !shared.lock.wait(until: deadline) { break }
            }
            guard let termination = shared.termination else { return nil }
            // A grandchild may hold the pipes open; the output of the child itself is in by now.
            let drain = Date().addingTimeInterval(2)
            while shared.openReaders > 0, shared.lock.wait(until: drain) {}
            return termination
        }
    }

    /// A child nobody holds any more is killed (the reaper thread collects it).
    deinit {
        send(SIGKILL)
    }
}
