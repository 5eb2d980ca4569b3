import APNsCore
import APNsRuntime
import GatewaySimulator
import TestSupport

// Not importing HTTP2Client here: both modules have a `ProviderConnection`, and this file means
// the simulator's. `SimulatedProvider+Dialer.swift` makes it the client's dialer.

/// The HTTP/2 simulator's sans-IO ``ProviderConnection`` at the far end of the HTTP/2 client's
/// `Transport`, in memory: the client's bytes go into the simulator's real nghttp2 session, its
/// answers come back, with no socket, thread or sleep in between. Faults of the simulator's own
/// (``ProviderFaults``: GOAWAY, resets, stalled streams, refused streams, 503, bad tokens) decide
/// what happens to each request; faults of the pipe (``Faults``) decide how the bytes move: partial
/// writes, writes that must wait, short reads, connections that die in the middle of a batch,
/// refused connection attempts. One seed decides both, so a run is a deterministic function of its
/// seed.
///
/// Time is ``time``: it moves only when the client waits for something that is not ready (a wait
/// passes its whole timeout at once), so the client's stream timeouts and retry delays, and the
/// simulator's delayed answers, happen in order and without real waiting.
///
/// Like the binary client's `ModelGateway`, which drives `GatewayConnection` the same way.
final class SimulatedProvider {
    /// Faults of the byte pipe, each a probability per call (from 0 to 1):
    ///
    /// | fault | per | effect |
    /// |---|---|---|
    /// | `connectFailure` | connection attempt | refused |
    /// | `partialWrite` | write | only part of the bytes taken |
    /// | `wantWrite` | write | must wait for writability first |
    /// | `shortRead` | read | only part of what is there |
    /// | `deathPerWrite` | write | the connection dies after part of the bytes went through: reset (what the simulator answered and the client has not read is lost) or closed (that is still read, then the end of the stream) |
    struct Faults {
        var connectFailure = 0.0, partialWrite = 0.0, wantWrite = 0.0, shortRead = 0.0, deathPerWrite = 0.0
    }

    let faults: Faults
    let time = SimulatedTime()
    let recorder = MemoryProviderRecorder()
    let policy: ProviderPolicy
    let authentication: ProviderConnection.Authentication
    private var random: SplitMix64
    /// Connections opened so far (each a new simulator connection).
    private(set) var connections = 0
    /// Connections that died by ``Faults/deathPerWrite``.
    private(set) var deaths = 0

    /// Token authentication with the fixture key (what `ProviderPair` uses), unless `certificate`.
    init(
        faults: Faults, simulator: ProviderFaults = ProviderFaults(), seed: UInt64,
        maximumConcurrentStreams: UInt32 = 100, limits: ProviderSimulator.Limits = .init(),
        authentication: ProviderConnection.Authentication = .token
    ) {
        self.faults = faults
        self.random = SplitMix64(seed: seed)
        self.authentication = authentication
        var simulator = simulator
        if var random = simulator.random {
            random.seed = seed
            simulator.random = random
        }
        policy = ProviderPolicy(
            environment: .development, authKeys: ProviderPair.authKeys,
            maximumConcurrentStreams: maximumConcurrentStreams,
            faults: simulator, limits: limits, clock: .manual(time.wall), recorder: recorder, recordingInterval: .zero,
            seed: seed)
    }

    /// How often the simulator accepted each position (index 0 unused), by the position in the
    /// token's last 8 bytes (``request(_:)``).
    func delivered(count: Int) -> [Int] {
        var delivered = [Int](repeating: 0, count: count + 1)
        for accepted in recorder.accepted {
            let position = Self.position(of: accepted.request.deviceToken)
            if position >= 1 && position <= count { delivered[position] += 1 }
        }
        return delivered
    }

    /// A request for `position`, its token ending in the position (``position(of:)``).
    static func request(_ position: Int) -> ProviderRequest {
        HTTP2Pair.request(position, topic: "com.example.legacy")
    }

    /// The position a ``request(_:)`` carries in its token's last 8 bytes.
    static func position(of token: DeviceToken) -> Int {
        token.withUnsafeBytes { Int(UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 24, as: UInt64.self))) }
    }

    func chance(_ probability: Double) -> Bool { random.chance(probability) }

    /// A number in 1...`bound` (`bound` at least 1).
    func pick(upTo bound: Int) -> Int { 1 + random.below(bound) }

    /// Opens a connection: a new simulator connection behind a new pipe.
    func connect() throws(LegacyAPNsError) -> any Transport {
        if chance(faults.connectFailure) {
            throw LegacyAPNsError(.connectionFailed, "the simulated provider refused the connection")
        }
        connections += 1
        do {
            let connection = try ProviderConnection(
                policy: policy, number: connections, authentication: authentication, now: time.seconds)
            return SimulatedProviderTransport(provider: self, connection: connection)
        } catch {
            throw LegacyAPNsError(.connectionFailed, "the simulator's connection could not start: \(error)")
        }
    }

    func noteDeath() { deaths += 1 }
}

/// The one clock of a simulated run: the client's `ProviderClock` (monotonic and wall time), the
/// simulator's wall clock (for provider tokens) and its monotonic seconds, all one number that
/// only waiting moves.
final class SimulatedTime: Sendable {
    /// The wall clock the simulator checks provider tokens against.
    let wall = ProviderSimulator.ManualClock()
    private let origin: Int64

    init() { origin = wall.now }

    /// Monotonic seconds since the run began (the simulator's `now`).
    var seconds: Double { Double(wall.now - origin) / 1000 }

    /// Since the run began.
    var elapsed: Duration { .milliseconds(wall.now - origin) }

    /// Lets `seconds` pass (at least a millisecond, so a wait always moves time).
    func pass(_ seconds: Double) {
        wall.advance(by: .milliseconds(Swift.max(1, Int64((seconds * 1000).rounded(.up)))))
    }
}

/// One connection from the HTTP/2 client to the simulator's connection, through a pipe with
/// faults. Never blocks; see ``SimulatedProvider``.
final class SimulatedProviderTransport: Transport {
    private enum Phase {
        case open
        /// Reset: nothing more is read or written.
        case reset
        /// Closed by the far end: what it sent is still read, then the end of the stream.
        case closed
    }

    private unowned let provider: SimulatedProvider
    private let connection: ProviderConnection
    private var phase = Phase.open
    /// What the simulator sent that the client has not read yet.
    private var toClient = ByteWriter(capacity: 64 * 1024)
    private var readOffset = 0
    private var mustWaitToWrite = false
    private var finished = false
    let peer = "the simulated provider"

    init(provider: SimulatedProvider, connection: ProviderConnection) {
        self.provider = provider
        self.connection = connection
    }

    /// Lets the simulator move on (its timers) and takes what it has for the client. When it is
    /// done with the connection (a reset, a cut-off, its GOAWAY and nothing left), the pipe ends.
    private func pump() {
        guard case .open = phase else { return }
        connection.tick(now: provider.time.seconds)
        if connection.resetRequested {
            die(reset: true)
            return
        }
        if readOffset == toClient.count {
            toClient.clear()
            readOffset = 0
        }
        while connection.wantsWrite {
            let before = toClient.count
            do { try connection.send(into: &toClient) } catch { break }
            if toClient.count == before { break }
        }
        if connection.isFinished || connection.cutOffReason != nil || connection.protocolError != nil {
            finish()
            phase = .closed
        }
    }

    private func die(reset: Bool) {
        finish()
        phase = reset ? .reset : .closed
        if reset {
            toClient.clear()
            readOffset = 0
        }
    }

    /// The simulator's connection is over: its accepted requests go to the recorder.
    private func finish() {
        guard !finished else { return }
        finished = true
        connection.finish()
    }

    func write(_ bytes: UnsafeRawBufferPointer) -> IOResult {
        pump()
        switch phase {
        case .reset: return .failed(LegacyAPNsError(.connectionFailed, "\(peer) reset the connection"))
        case .closed: return .failed(LegacyAPNsError(.connectionFailed, "\(peer) closed the connection"))
        case .open: break
        }
        guard bytes.count > 0 else { return .done(0) }
        let faults = provider.faults
        if !mustWaitToWrite, provider.chance(faults.wantWrite) {
            mustWaitToWrite = true
            return .wantWrite
        }
        mustWaitToWrite = false
        var count = bytes.count
        let dies = provider.chance(faults.deathPerWrite)
        if dies || (count > 1 && provider.chance(faults.partialWrite)) { count = provider.pick(upTo: count) }
        do {
            try connection.receive(UnsafeRawBufferPointer(rebasing: bytes[0..<count]), now: provider.time.seconds)
        } catch {
            // nghttp2 refused the bytes: its GOAWAY waits in the simulator's output (pump).
        }
        if dies {
            provider.noteDeath()
            pump()
            die(reset: provider.chance(0.5))
        }
        return .done(count)
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        pump()
        if case .reset = phase { return .failed(LegacyAPNsError(.connectionFailed, "\(peer) reset the connection")) }
        let available = toClient.count - readOffset
        guard available > 0 else {
            if case .closed = phase { return .closed }
            return .wantRead
        }
        var count = Swift.min(available, buffer.count)
        if count > 1, provider.chance(provider.faults.shortRead) { count = provider.pick(upTo: count) }
        toClient.withUnsafeReadableBytes { bytes in
            buffer.baseAddress!.copyMemory(from: bytes.baseAddress! + readOffset, byteCount: count)
        }
        readOffset += count
        return .done(count)
    }

    /// Whether a read or write would do something now.
    private func isReady(for events: Readiness) -> Bool {
        pump()
        if case .open = phase {} else { return true }  // the next call reports the end
        if events.contains(.readable), toClient.count > readOffset { return true }
        return events.contains(.writable)
    }

    /// Never blocks: when nothing is ready, the whole timeout passes at once (the simulator's
    /// timers run meanwhile), and then the answer is whether something became ready.
    func wait(for events: Readiness, timeout: Double) -> Bool {
        if isReady(for: events) { return true }
        provider.time.pass(timeout)
        return isReady(for: events)
    }

    func wait(for events: Readiness, timeout: Double, wake: WakeSignal) -> Bool {
        wait(for: events, timeout: timeout)
    }

    func closeGently(drainTimeout: Double) { close() }

    func close() {
        finish()
        phase = .reset
        toClient.clear()
        readOffset = 0
    }
}
