import APNsCore
import APNsRuntime
import LegacyAPNs
import TestSupport

/// A gateway in memory that speaks bytes, for driving the real ``GatewayConnection`` through its
/// transport seam: it decodes what the shell writes with the real ``FrameDecoder``, processes
/// frames in order, and answers as Apple's gateway did (an error response, then nothing; a
/// shutdown; a silent close), with random faults from a seed. Nothing in it sleeps or uses a
/// socket, so a run is deterministic: the same seed, the same conversation.
///
/// Faults on top of the gateway's own behaviour: error responses that arrive some reads late or
/// never (the connection closes instead, as when a reset eats them), partial writes, writes that
/// must wait, connections that stall (the shell's stall detection gives up on them), barriers that
/// are never answered (its verdict timeout), and refused connection attempts.
final class ModelGateway: GatewayDialer {
    struct Faults {
        var silentClosePerFrame = 0.0
        var shutdownPerFrame = 0.0
        var processingErrorPerFrame = 0.0
        /// An error response lost: the connection closes without it.
        var lostResponse = 0.0
        var connectFailure = 0.0
        /// Error responses become readable after up to this many reads by the client.
        var maximumResponseDelay = 0
        /// Every n-th position has a token the gateway always refuses (0: none).
        var badEvery = 0
        /// A write takes only part of the bytes.
        var partialWrite = 0.0
        /// A write must wait for the socket first.
        var wantWrite = 0.0
        /// The gateway stops taking data and never answers: the shell's stall detection.
        var stallPerWrite = 0.0
        /// The gateway reads the barrier but never answers: the shell's verdict timeout.
        var unansweredBarrier = 0.0
    }

    let faults: Faults
    private var random: SplitMix64
    /// How often each position was delivered (index 0 unused).
    private(set) var delivered: [Int]
    let badPositions: Set<Int>
    private(set) var connections = 0
    private(set) var stalls = 0

    init(count: Int, faults: Faults, seed: UInt64) {
        self.faults = faults
        self.random = SplitMix64(seed: seed)
        self.delivered = [Int](repeating: 0, count: count + 1)
        self.badPositions =
            faults.badEvery > 0 ? Set(stride(from: faults.badEvery, through: count, by: faults.badEvery)) : []
    }

    var ledger: DeliveryLedger { DeliveryLedger(delivered: delivered, badPositions: badPositions) }

    func chance(_ probability: Double) -> Bool { random.chance(probability) }

    /// A number in 0..<`bound`.
    func pick(_ bound: Int) -> Int { random.below(bound) }

    func delay() -> Int {
        faults.maximumResponseDelay > 0 ? random.below(faults.maximumResponseDelay + 1) : 0
    }

    func deliver(_ position: Int) { delivered[position] += 1 }

    // MARK: GatewayDialer

    func connect() throws(LegacyAPNsError) -> any Transport {
        if chance(faults.connectFailure) { throw LegacyAPNsError(.connectionFailed, "model refused the connection") }
        connections += 1
        return ModelTransport(gateway: self)
    }

    func connectionInUse(_ transport: any Transport) {}
    func retire(_ transport: any Transport) {}
    func expectReconnects() {}
    func stop() {}

    func noteStall() { stalls += 1 }

    /// The position a test notification carries in its token's last 8 bytes.
    static func position(of notification: PushNotification) -> Int {
        notification.token.withUnsafeBytes {
            Int(UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 24, as: UInt64.self)))
        }
    }

    /// A notification for `position` (the token's last 8 bytes are the position).
    static func notification(_ position: Int) -> PushNotification {
        var bytes = [UInt8](repeating: 0x3C, count: 32)
        withUnsafeBytes(of: UInt64(position).bigEndian) { bytes.replaceSubrange(24..<32, with: $0) }
        return PushNotification(
            token: try! DeviceToken(bytes: bytes),
            payload: Payload(unvalidatedBytes: Array(#"{"aps":{"alert":"model \#(position)"}}"#.utf8)),
            identifier: UInt32(position))
    }
}

/// One connection to the ``ModelGateway``.
final class ModelTransport: Transport {
    private enum Reply {
        /// An error response, then the connection closes.
        case response(ErrorResponse)
        /// The connection closes without a word.
        case close
    }

    private enum Phase {
        /// Processing frames as they arrive.
        case serving
        /// Done processing; the reply becomes readable after `countdown` more reads.
        case replying(Reply, countdown: Int)
        /// Stopped taking data and will never answer (a stall, an unanswered barrier).
        case silent
        /// The reply was read; everything from now on is the end of the stream.
        case closed
    }

    private unowned let gateway: ModelGateway
    private var decoder = FrameDecoder(configuration: .gateway)
    private var phase = Phase.serving
    private var lastAccepted: UInt32 = 0
    private var mustWaitToWrite = false
    let peer = "model gateway"

    init(gateway: ModelGateway) { self.gateway = gateway }

    func write(_ bytes: UnsafeRawBufferPointer) -> IOResult {
        switch phase {
        case .closed: return .failed(LegacyAPNsError(.connectionFailed, "the model gateway closed the connection"))
        case .silent: return .wantWrite
        case .serving, .replying: break
        }
        if gateway.chance(gateway.faults.stallPerWrite) {
            gateway.noteStall()
            phase = .silent
            return .wantWrite
        }
        if !mustWaitToWrite, gateway.chance(gateway.faults.wantWrite) {
            mustWaitToWrite = true
            return .wantWrite
        }
        mustWaitToWrite = false
        var count = bytes.count
        if count > 1, gateway.chance(gateway.faults.partialWrite) { count = 1 + gateway.pick(count - 1) }
        if case .serving = phase {
            decoder.append(UnsafeRawBufferPointer(rebasing: bytes[0..<count]))
            process()
        }
        return .done(count)
    }

    /// Processes every complete frame, in order, until the gateway has something to say.
    private func process() {
        let faults = gateway.faults
        while case .serving = phase {
            let frame: Frame?
            do {
                frame = try decoder.next()
            } catch {
                if error.isConfirmationBarrier, gateway.chance(faults.unansweredBarrier) {
                    phase = .silent
                } else {
                    reply(.response(error.errorResponse))
                }
                return
            }
            guard case .notification(let notification, _)? = frame else { return }
            let identifier = notification.identifier ?? 0
            let position = ModelGateway.position(of: notification)
            if gateway.chance(faults.silentClosePerFrame) {
                reply(.close)
            } else if gateway.badPositions.contains(position) {
                reply(.response(ErrorResponse(status: .invalidToken, identifier: identifier)))
            } else if gateway.chance(faults.processingErrorPerFrame) {
                reply(.response(ErrorResponse(status: .processingError, identifier: identifier)))
            } else {
                gateway.deliver(position)
                lastAccepted = identifier
                if gateway.chance(faults.shutdownPerFrame) {
                    reply(.response(ErrorResponse(status: .shutdown, identifier: identifier)))
                }
            }
        }
    }

    private func reply(_ reply: Reply) {
        var reply = reply
        if case .response = reply, gateway.chance(gateway.faults.lostResponse) { reply = .close }
        phase = .replying(reply, countdown: gateway.delay())
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        switch phase {
        case .serving, .silent:
            return .wantRead
        case .closed:
            return .closed
        case .replying(let reply, let countdown):
            if countdown > 0 {
                phase = .replying(reply, countdown: countdown - 1)
                return .wantRead
            }
            phase = .closed
            guard case .response(let response) = reply else { return .closed }
            let bytes = response.bytes
            for (index, byte) in bytes.enumerated() { buffer[index] = byte }
            return .done(bytes.count)
        }
    }

    /// Never blocks: a stalled or silent gateway times out at once, anything else is ready.
    func wait(for events: Readiness, timeout: Double) -> Bool {
        if case .silent = phase { return false }
        return true
    }

    func wait(for events: Readiness, timeout: Double, wake: WakeSignal) -> Bool {
        wait(for: events, timeout: timeout)
    }

    func close() {
        phase = .closed
    }

    func closeGently(drainTimeout: Double) { close() }
}
