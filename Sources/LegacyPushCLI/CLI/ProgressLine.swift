internal import APNsRuntime
import CommandLineKit
import HTTP2Client
import LegacyAPNs
import Synchronization

/// The progress line of a send, redrawn in place on stderr five times a second, only when stderr
/// is a terminal (whatever stdout is, `--json` included):
///
/// ```
/// [#########.....................]  12000/40000 confirmed, 3 rejected, 25100/s, 0:02 elapsed, ETA 0:01
/// ```
/// It counts what the gateway *confirmed* (not what was handed to the client), shows the rate of
/// the last two seconds (not the average since the start), and the time left at that rate.
final class ProgressLine: Sendable {
    private struct State {
        var confirmed = 0
        var rejected = 0
        var unconfirmed = 0
        var visible = false
        var running = true
        /// The send is stopping: no rate or ETA any more, only what is still settling.
        var stopping = false
        /// (time, confirmed) samples of the last few seconds, oldest first.
        var samples: [(time: Double, confirmed: Int)] = []
    }

    private let console: Console
    private let total: Int
    private let state = Mutex(State())
    private let started = Monotonic.now()

    /// Seconds of history the current rate is measured over.
    static let rateWindow = 2.0
    /// Seconds between redraws.
    static let interval = 0.2

    init(console: Console, total: Int) {
        self.console = console
        self.total = total
    }

    /// Counts a client event.
    func observe(_ event: PushEvent) {
        state.withLock { state in
            switch event {
            case .confirmed(_, let count): state.confirmed += count
            case .rejected: state.rejected += 1
            case .unconfirmed: state.unconfirmed += 1
            case .connected, .resent, .unknownIdentifier, .reconnecting, .closed: break
            }
        }
    }

    /// Counts an HTTP/2 client event.
    func observe(_ event: ProviderEvent) {
        state.withLock { state in
            switch event {
            case .accepted: state.confirmed += 1
            case .rejected: state.rejected += 1
            case .unconfirmed: state.unconfirmed += 1
            case .connected, .connectionFailed, .connectionClosed, .sent, .retrying, .streamReset, .goaway,
                .tokenRefreshed, .streamLimit:
                break
            }
        }
    }

    func start() {
        OSThread.start(name: "progress") { [self] in
            while draw() { Monotonic.sleep(Self.interval) }
        }
    }

    /// Draws the line; false once ``finish()`` was called. The terminal write happens under the
    /// lock, so no redraw can follow the final erase.
    private func draw() -> Bool {
        state.withLock { state in
            guard state.running else { return false }
            let now = Monotonic.now()
            state.samples.append((now, state.confirmed))
            while let first = state.samples.first, now - first.time > Self.rateWindow { state.samples.removeFirst() }
            let rate: Int
            if let first = state.samples.first, now - first.time > 0.1 {
                rate = Int(Double(state.confirmed - first.confirmed) / (now - first.time))
            } else {
                rate = 0
            }
            let done = state.confirmed + state.rejected + state.unconfirmed
            let width = 30
            let filled = total > 0 ? min(width, done * width / total) : 0
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            var text = "\r[\(bar)]  \(state.confirmed)/\(total) confirmed, \(state.rejected) rejected"
            if state.unconfirmed > 0 { text += ", \(state.unconfirmed) unconfirmed" }
            if state.stopping {
                text += ", stopping, \(Self.clock(now - started)) elapsed"
            } else {
                text += ", \(rate)/s, \(Self.clock(now - started)) elapsed"
                if rate > 0, done < total { text += ", ETA \(Self.clock(Double(total - done) / Double(rate)))" }
            }
            console.writeError(Array((text + "  \u{1B}[K").utf8))
            state.visible = true
            return true
        }
    }

    /// "0:07", "1:02:03".
    static func clock(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded())
        let (hours, minutes, rest) = (whole / 3600, whole / 60 % 60, whole % 60)
        let twoDigits = { (value: Int) in value < 10 ? "0\(value)" : "\(value)" }
        return hours > 0 ? "\(hours):\(twoDigits(minutes)):\(twoDigits(rest))" : "\(minutes):\(twoDigits(rest))"
    }

    /// The send is stopping: the line drops its rate and ETA and is erased now (the stopping
    /// message follows on the same terminal).
    func stopping() {
        state.withLock { state in
            state.stopping = true
            if state.visible {
                console.writeError(Array("\r\u{1B}[K".utf8))
                state.visible = false
            }
        }
    }

    /// Erases the line (before printing something else to the same terminal).
    func clear() {
        state.withLock { state in
            if state.visible {
                console.writeError(Array("\r\u{1B}[K".utf8))
                state.visible = false
            }
        }
    }

    /// Erases the line for good.
    func finish() {
        state.withLock { state in
            state.running = false
            if state.visible { console.writeError(Array("\r\u{1B}[K".utf8)) }
        }
    }
}
