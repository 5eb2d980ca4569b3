import APNsCore
import APNsCredentials
internal import APNsRuntime

/// The owner of one connection slot: a single thread that runs the ``DeliveryStateMachine``
/// over the connections a ``GatewayDialer`` opens (TLS in production, an in-memory gateway in
/// tests).
///
/// It encodes frames into one reusable buffer and writes it in batches of
/// ``PushClient/Configuration/writeBatchSize`` bytes (one TLS record each, many frames per
/// syscall), and before every batch it reads whatever the gateway sent, without blocking, so an
/// error response is seen as soon as it arrives and reading never stalls writing. It detects
/// stalls (a gateway that takes no data), bounds the wait for the barrier's verdict, confirms
/// what is in flight when the input pauses, and copes with partial writes. Not `Sendable`: it
/// lives and dies on its thread.
///
/// It is generic over its machine and its input, so that the same shell (and the same transport
/// code) serves notifications (``DeliveryStateMachine`` over a ``NotificationSource``) and
/// pre-encoded frames (``FrameDeliveryStateMachine`` over a ``FrameSource``); each pairing has
/// its own `run()`, which is all that differs.
package final class GatewayConnection<Machine: SlotMachine, Input: SlotInput> where Input.Machine == Machine {
    /// How the shell writes and waits.
    package typealias Settings = GatewayConnectionSettings

    /// Seconds to wait for input per look, while watching the gateway for verdicts.
    static var inputPollInterval: Double { 0.02 }

    private let settings: Settings
    private let dialer: any GatewayDialer
    private let control: SendControl
    private let slot: Int
    /// The phase of the send this slot has acted on.
    private var phase = SendControl.Phase.running
    private let events: (@Sendable (PushEvent) -> Void)?
    private var machine: Machine
    private var input: Input
    private var transport: (any Transport)?
    private var writer: ByteWriter
    private var decoder = FrameDecoder(configuration: .provider)
    private var sourceIsFinished = false
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)

    /// Seconds between looks at the send's ``SendControl`` while waiting (a barrier's verdict, a
    /// reconnect's delay, a gateway taking no data), so an abandoned send ends within this.
    static var controlPollInterval: Double { 0.05 }

    private init(
        settings: Settings, machine: Machine, input: Input, dialer: any GatewayDialer,
        events: (@Sendable (PushEvent) -> Void)?, control: SendControl, slot: Int
    ) {
        self.control = control
        self.slot = slot
        self.settings = settings
        self.machine = machine
        self.input = input
        self.dialer = dialer
        self.events = events
        self.writer = ByteWriter(capacity: settings.writeBatchSize * 2)
    }

    deinit { readBuffer.deallocate() }

    private func publishEvents() {
        let pending = machine.takeEvents()
        guard let events, !pending.isEmpty else { return }
        for event in pending { events(event) }
    }

    private func open() {
        do {
            transport = try dialer.connect()
            decoder = FrameDecoder(configuration: .provider)
            writer.clear()
            machine.connected()
        } catch {
            machine.connectFailed(error)
        }
    }

    private func closeTransport() {
        if let transport {
            dialer.retire(transport)
            transport.close()
        }
        transport = nil
        writer.clear()
    }

    /// The end of `run()`: the taken but unwritten notifications are accounted for.
    private func finish() -> SendReport {
        publishEvents()
        dialer.stop()
        if machine.report.failure != nil {
            input.stop()
            control.settle()
        }
        control.publish(slot: slot, inFlight: 0)
        return machine.report
    }

    // MARK: - Input

    /// Whether taken notifications are ready to write. When none are, the machine has been told
    /// why: the input finished, or it stalled and a barrier is due, or a verdict or the end of the
    /// connection arrived while waiting.
    private func inputReady() -> Bool {
        if input.hasTaken { return true }
        if take(timeout: 0) { return true }
        if sourceIsFinished { return false }
        // The input is slow: let the gateway see what is buffered, and keep watching for its
        // verdicts while waiting. After a short idle period, confirm what is in flight.
        pump(flushAll: true)
        let stalledSince = Monotonic.now()
        while machine.isWriting, control.phase == .running {
            if take(timeout: Self.inputPollInterval) { return true }
            if sourceIsFinished { return false }
            guard readAvailable() else { return false }
            if Monotonic.now() - stalledSince >= settings.idleConfirmationDelay, machine.inputStalled() {
                return false
            }
        }
        return false
    }

    /// Refills the taken notifications; false when nothing came (and tells the machine if nothing
    /// will).
    private func take(timeout: Double) -> Bool {
        switch input.take(timeout: timeout) {
        case .taken:
            return true
        case .finished:
            sourceIsFinished = true
            machine.inputFinished()
            return false
        case .empty:
            return false
        }
    }

    // MARK: - Transport work

    /// Writes buffered frames: all of them (`flushAll`), or until less than one batch is left.
    /// Reads what the gateway sent first, every time. Waits only when the gateway takes no more,
    /// and then wakes for its answers as well.
    private func pump(flushAll: Bool) {
        guard let transport else {
            writer.clear()
            return
        }
        while true {
            guard readAvailable() else { return }
            dialer.connectionInUse(transport)
            if writer.isEmpty || (!flushAll && writer.count < settings.writeBatchSize) { return }
            let result = writer.withUnsafeReadableBytes { bytes in
                transport.write(UnsafeRawBufferPointer(rebasing: bytes.prefix(settings.writeBatchSize)))
            }
            switch result {
            case .done(let count):
                writer.removeFirst(count)
            case .wantWrite, .wantRead:
                let wanted: Readiness = result == .wantWrite ? [.readable, .writable] : .readable
                if !wait(on: transport, for: wanted, timeout: settings.stallTimeout) {
                    if control.phase == .abandoned { return }
                    connectionEnded(
                        LegacyAPNsError(
                            .timedOut, "\(transport.peer) accepted no data for \(formatSeconds(settings.stallTimeout))"
                        ))
                    return
                }
            case .closed:
                // The error response may already be in the receive buffer: read before giving up.
                if readAvailable() {
                    connectionEnded(LegacyAPNsError(.connectionFailed, "\(transport.peer) closed the connection"))
                }
                return
            case .failed(let error):
                if readAvailable() { connectionEnded(error) }
                return
            }
        }
    }

    /// Reads and handles everything the gateway has sent so far without blocking. Returns false
    /// when the connection is finished with (a verdict arrived, or it ended).
    private func readAvailable() -> Bool {
        guard let transport else { return false }
        while true {
            switch transport.read(into: readBuffer) {
            case .done(let count):
                decoder.append(UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]))
                do {
                    while let frame = try decoder.next() {
                        guard case .errorResponse(let response) = frame else { continue }
                        // Errors mean reconnects: from now on keep the next connection ready.
                        if response.identifier != machine.pendingBarrier { dialer.expectReconnects() }
                        machine.received(response)
                        writer.clear()  // the gateway discards whatever follows anyway
                        return false
                    }
                } catch {
                    connectionEnded(
                        LegacyAPNsError(
                            .connectionFailed, "\(transport.peer) sent bytes that are not an error response (\(error))",
                            underlying: error),
                        byGateway: false)
                    return false
                }
            case .wantRead, .wantWrite:
                return true
            case .closed:
                connectionEnded(
                    LegacyAPNsError(
                        .connectionFailed, "\(transport.peer) closed the connection without an error response"))
                return false
            case .failed(let error):
                connectionEnded(error)
                return false
            }
        }
    }

    /// Waits for the verdict on the barrier (or the end of the connection).
    private func awaitVerdict() {
        let deadline = Monotonic.now() + settings.verdictTimeout
        while let transport, readAvailable() {
            let remaining = deadline - Monotonic.now()
            if remaining <= 0 || !wait(on: transport, for: .readable, timeout: remaining) {
                // An abandoned send is stopped by the loop, with this verdict still awaited.
                if control.phase != .abandoned { machine.verdictTimedOut() }
                return
            }
        }
    }

    /// Waits up to `timeout` for `readiness`, looking at the send's control every
    /// ``controlPollInterval``; false on a time-out or an abandoned send. A transport that says
    /// false before its slice is over has answered for the whole wait (it cannot become ready:
    /// an in-memory gateway that stays silent says so at once).
    private func wait(on transport: any Transport, for readiness: Readiness, timeout: Double) -> Bool {
        let deadline = Monotonic.now() + timeout
        while true {
            if control.phase == .abandoned { return false }
            let now = Monotonic.now()
            let slice = Swift.min(deadline - now, Self.controlPollInterval)
            if slice <= 0 { return false }
            if transport.wait(for: readiness, timeout: slice) { return true }
            if Monotonic.now() - now < slice / 2 { return false }
        }
    }

    /// Runs until every notification this slot took has a verdict: the one loop of both pairings
    /// (notifications and ``DeliveryStateMachine``; pre-encoded frames and
    /// ``FrameDeliveryStateMachine``). What differs, how a new notification or a resend becomes
    /// bytes, is the input's (``SlotInput``), specialised by the compiler per pairing.
    package func run() -> SendReport {
        while true {
            followControl()
            let step = machine.nextStep()
            publishEvents()
            switch step {
            case .connect(let delay):
                sleepBeforeConnecting(delay.inSeconds)
                if control.phase == .abandoned {
                    machine.connectFailed(LegacyAPNsError(.cancelled, "the send was abandoned"))
                } else {
                    open()
                }
            case .writeNew:
                input.prepareToTake(for: machine)
                guard inputReady() else { continue }
                input.writeNew(machine: &machine, into: &writer, settings: settings)
                if writer.count >= settings.writeBatchSize { pump(flushAll: false) }
            case .resend(let identifier, let item):
                Input.writeAgain(item, identifier: identifier, into: &writer, settings: settings)
                if writer.count >= settings.writeBatchSize { pump(flushAll: false) }
            case .writeBarrier(let identifier):
                ConfirmationBarrier.encode(identifier: identifier, into: &writer)
                pump(flushAll: true)
            case .awaitVerdict:
                pump(flushAll: true)
                awaitVerdict()
            case .close:
                closeTransport()
                machine.closed(.unexpected(reason: "closed"))
            case .finished:
                // Taken but never written (the slot stopped early): accounted, not lost.
                input.abandonRest(machine: &machine)
                return finish()
            }
        }
    }

    /// Sleeps `seconds` before a reconnect, ending early for an abandoned send.
    private func sleepBeforeConnecting(_ seconds: Double) {
        let deadline = Monotonic.now() + seconds
        while control.phase != .abandoned {
            let remaining = deadline - Monotonic.now()
            if remaining <= 0 { return }
            Monotonic.sleep(Swift.min(remaining, Self.controlPollInterval))
        }
    }

    /// Acts on the send's phase before the next action: a settling send takes and resends nothing
    /// more, an abandoned one stops at once (what is in flight becomes unconfirmed). Publishes the
    /// slot's notifications in flight.
    private func followControl() {
        let current = control.phase
        if current != phase {
            switch current {
            case .running:
                break
            case .settling:
                machine.settle()
            case .abandoned:
                if phase == .running { machine.settle() }
                closeTransport()
                machine.stop(LegacyAPNsError(.cancelled, "the send was abandoned with notifications in flight"))
            }
            phase = current
        }
        control.publish(slot: slot, inFlight: machine.inFlightCount)
    }

    /// The connection ended without a verdict. A close or a reset is the gateway's doing (which
    /// the machine's refusal rule counts before the first verdict); a stall or bytes that are no
    /// error response are not.
    private func connectionEnded(_ error: LegacyAPNsError, byGateway: Bool = true) {
        closeTransport()
        if error.stopsSending {
            machine.closed(.certificateRejected(error))
        } else if byGateway, error.code == .connectionFailed {
            machine.closed(.endedByGateway(reason: error.reason))
        } else {
            machine.closed(.unexpected(reason: error.reason))
        }
    }
}

// MARK: - Slots

/// A slot sending notifications taken from a ``NotificationSource``.
package typealias NotificationConnection = GatewayConnection<DeliveryStateMachine, NotificationInput>
/// A slot sending pre-encoded frames taken from a ``FrameSource``.
package typealias FrameConnection = GatewayConnection<FrameDeliveryStateMachine, FrameInput>

extension GatewayConnection {
    /// A slot sending what it takes from `source`: notifications (``NotificationSource``, the
    /// ``DeliveryStateMachine``) or pre-encoded frames (``FrameSource``, the
    /// ``FrameDeliveryStateMachine``; their format is the batches').
    package convenience init<Source: SlotSource>(
        slot: Int, settings: Settings, delivery: DeliveryStateMachine.Configuration, source: Source,
        dialer: any GatewayDialer, events: (@Sendable (PushEvent) -> Void)?, control: SendControl? = nil
    ) where Source.Input == Input {
        self.init(
            settings: settings, machine: Machine(configuration: delivery, connection: slot),
            input: Input(source: source), dialer: dialer, events: events,
            control: control ?? SendControl(slots: slot + 1), slot: slot)
    }
}

/// How the shell writes and waits.
package struct GatewayConnectionSettings: Sendable {
    var format: FrameFormat
    var encoder: FrameEncoder
    /// Seconds to wait for the answer to the confirmation barrier.
    var verdictTimeout: Double
    /// Seconds the input may pause with notifications in flight before they are confirmed.
    var idleConfirmationDelay: Double
    var writeBatchSize: Int
    /// Seconds a gateway may accept no data before the connection counts as dead.
    var stallTimeout: Double

    package init(
        format: FrameFormat, encoder: FrameEncoder, verdictTimeout: Double, idleConfirmationDelay: Double,
        writeBatchSize: Int, stallTimeout: Double
    ) {
        self.format = format
        self.encoder = encoder
        self.verdictTimeout = verdictTimeout
        self.idleConfirmationDelay = idleConfirmationDelay
        self.writeBatchSize = Swift.max(64, writeBatchSize)
        self.stallTimeout = stallTimeout
    }
}
