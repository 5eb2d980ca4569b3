import APNsCore
import APNsCredentials
internal import APNsRuntime
import Synchronization

/// Where the simulator records accepted notifications.
///
/// The simulator calls, from its event loops:
/// - ``record(_:connection:)`` once per read (a batch of frames), never per frame, so recording
///   costs one lock per batch;
/// - ``flush()`` at most ``GatewaySimulator/Configuration/recorderFlushInterval`` (100 ms) after a
///   batch was recorded, and once more when the simulator stops;
/// - ``connectionClosed(_:)`` once when a connection ends, **before** the client can learn of it:
///   before the error response (or the silent close) that ends it, and before the simulator closes
///   its side after the client hung up. A client that saw its notifications confirmed therefore
///   finds them recorded, even if the simulator is killed right after.
///
/// A recorder that buffers writes at these calls (``JSONLinesRecorder`` does) costs nothing per
/// frame and loses nothing a client was told about.
public protocol NotificationRecorder: Sendable {
    /// Records accepted frames (always notification frames) from one connection, in order.
    func record(_ frames: [Frame], connection: Int)
    /// Writes out anything buffered.
    func flush()
    /// The connection is ending: write out what was recorded for it (by default, ``flush()``).
    func connectionClosed(_ connection: Int)
}

extension NotificationRecorder {
    /// Writes out everything buffered: the records of `connection` among them.
    public func connectionClosed(_ connection: Int) { flush() }
}

/// Keeps accepted notifications in memory, for tests and embedding programs.
public final class MemoryRecorder: NotificationRecorder {
    private let frames = Mutex<[(connection: Int, frame: Frame)]>([])

    /// Creates an empty recorder.
    public init() {}

    /// Records accepted frames.
    public func record(_ frames: [Frame], connection: Int) {
        self.frames.withLock { $0.append(contentsOf: frames.map { (connection, $0) }) }
    }

    /// Nothing to write out: everything is in memory.
    public func flush() {}

    /// Nothing to write out: everything is in memory.
    public func connectionClosed(_ connection: Int) {}

    /// Every accepted notification so far, in the order the simulator accepted them.
    public var notifications: [PushNotification] {
        frames.withLock { list in
            list.compactMap { entry in
                if case .notification(let notification, _) = entry.frame { return notification }
                return nil
            }
        }
    }

    /// Every accepted frame with the connection number it came on.
    public var recorded: [(connection: Int, frame: Frame)] { frames.withLock { $0 } }

    /// How many notifications were accepted.
    public var count: Int { frames.withLock { $0.count } }
}

/// Appends accepted notifications to a file descriptor as JSON Lines, in the shape of
/// `legacy-push frame decode --json`, buffered into large writes (no per-frame syscalls, no fsync).
///
/// Records are written when 256 KiB are buffered, when the simulator flushes (within 100 ms of
/// being accepted) and when a connection ends (before its client learns of the verdict), so a file
/// being tailed fills while serving, and killing the process loses only what no client was told
/// about yet.
public final class JSONLinesRecorder: NotificationRecorder {
    private struct State {
        var buffer: [UInt8] = []
    }

    private let descriptor: Int32
    private let state = Mutex(State())
    private let flushThreshold = 256 * 1024

    /// Records to `descriptor`, which stays owned by the caller (it is not closed).
    public init(fileDescriptor descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Records accepted frames.
    public func record(_ frames: [Frame], connection: Int) {
        state.withLock { state in
            for frame in frames {
                frame.appendJSON(to: &state.buffer)
                state.buffer.append(0x0A)
            }
            // Written under the lock, so lines from different connections never interleave.
            if state.buffer.count >= flushThreshold {
                write(state.buffer)
                state.buffer.removeAll(keepingCapacity: true)
            }
        }
    }

    /// Writes out what is buffered.
    public func flush() {
        state.withLock { state in
            if !state.buffer.isEmpty { write(state.buffer) }
            state.buffer.removeAll(keepingCapacity: true)
        }
    }

    private func write(_ bytes: [UInt8]) {
        FileDescriptor.writeAll(bytes, to: descriptor)
    }
}
