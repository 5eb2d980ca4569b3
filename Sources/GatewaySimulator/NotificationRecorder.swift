import APNsCore
import APNsCredentials
internal import APNsRuntime
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where the simulator records accepted notifications. It calls ``record(_:connection:)`` once per
/// read (a batch of frames), never per frame, so recording costs one lock per batch.
public protocol NotificationRecorder: Sendable {
    /// Records accepted frames (always notification frames) from one connection, in order.
    func record(_ frames: [Frame], connection: Int)
    /// Writes out anything buffered.
    func flush()
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
