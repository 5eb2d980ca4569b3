/// What the bridge decides about each frame one read of a legacy sender brings, and everything a
/// sender connection keeps between reads: the ``BridgeSenderMachine`` (the binary protocol's
/// promises), the resends held for an earlier copy's verdict, and the confirmation barrier that
/// ended the input. Pure: no sockets, no clocks, no threads, no locks; the bridge's sender session
/// keeps one of these under one lock, and the resend memory is reached through the `recall`
/// closure the shell passes (under the memory's own lock, taken after the session's).
///
/// For each frame, in the order the sender wrote them, one ``Admission``:
///
/// ```
///   frame ──not taken (a failure is known, or stopping)──────────────▶ dropped
///     │
///     ├──the gateway would refuse it (translation)───────────────────▶ refused  (settled now)
///     ├──its earlier copy has a verdict (memory: settled)────────────▶ answered (settled now)
///     ├──its earlier copy is still upstream (memory: pending)────────▶ held     (until that verdict)
///     ├──its earlier copy's owner died, may have sent it (orphaned)──▶ forwarded, possible duplicate
///     └──otherwise───────────────────────────────────────────────────▶ forwarded
/// ```
///
/// Refused and answered frames are settled after every frame of the read is admitted, as their
/// verdicts from upstream would be: a resend answered with a rejection does not stop the frames
/// after it from being admitted. A held resend leaves through ``settle(sequence:verdict:)`` (its
/// earlier copy's verdict reached it) or ``releaseHeld(sequence:)`` (that copy got none: it goes
/// upstream itself while the sender is still to be answered).
public struct BridgeSenderState: Sendable {
    /// One decoded frame of a read.
    public struct Frame: Sendable {
        /// The notification.
        public var notification: PushNotification
        /// The command it came in.
        public var command: Command
        /// How a resend of it is recognised.
        public var key: BridgeResendKey
        /// Its translation, when the shell made it beforehand (outside any lock); nil to have
        /// `translate` make it where it is needed.
        public var request: Result<ProviderRequest, BridgeRefusal>?

        /// Creates a frame.
        public init(
            notification: PushNotification, command: Command, key: BridgeResendKey,
            request: Result<ProviderRequest, BridgeRefusal>? = nil
        ) {
            self.notification = notification
            self.command = command
            self.key = key
            self.request = request
        }
    }

    /// What became of one frame.
    public enum Admission: Hashable, Sendable {
        /// Not taken: a failure is known or the bridge is stopping (Apple's gateway dropped such
        /// frames; the sender sends them again).
        case dropped
        /// Refused before any round trip (already settled with the refusal's verdict).
        case refused(sequence: UInt64, BridgeRefusal)
        /// A resend answered from its earlier copy's verdict (already settled with it).
        case answered(sequence: UInt64, BridgeVerdict)
        /// A resend held until its earlier copy, still upstream, has its verdict.
        case held(sequence: UInt64)
        /// To send upstream. `possibleDuplicate`: an earlier copy may have been delivered by a
        /// bridge that is gone (its claim was orphaned), so this one may arrive twice.
        case forwarded(sequence: UInt64, ProviderRequest, possibleDuplicate: Bool)
    }

    /// The promises to the sender.
    public private(set) var machine: BridgeSenderMachine
    /// Resends waiting for their earlier copy's verdict, by sequence.
    private var held: [UInt64: ProviderRequest] = [:]
    /// The identifier of the confirmation barrier that ended the input, if one did.
    public private(set) var barrier: UInt32?

    /// The state of a new connection.
    public init(configuration: BridgeSenderMachine.Configuration = .init()) {
        self.machine = BridgeSenderMachine(configuration: configuration)
    }

    /// Resends held for an earlier copy's verdict.
    public var heldCount: Int { held.count }

    /// Admits the frames of one read (and the malformed frame that ended it, if one did),
    /// appending one ``Admission`` per frame to `admissions`, in order.
    ///
    /// - Parameters:
    ///   - frames: the complete frames of the read, in the order the sender wrote them.
    ///   - malformed: the frame that ended the read, if one did (a frame no bytes can make valid,
    ///     or the sender's confirmation barrier): the input ends there (``noteMalformed(_:)``).
    ///   - recall: asks the resend memory about a frame (its key, and the sequence it was given);
    ///     a shell whose memory holds nothing answers ``BridgeResendMemory/Recall/unknown``.
    ///   - translate: makes a frame's request where the shell did not (a held resend, or a frame
    ///     the shell skipped because the memory seemed to know it).
    ///   - admissions: where one ``Admission`` per frame is appended (the caller keeps its storage
    ///     from read to read).
    public mutating func admit(
        _ frames: [Frame], malformed: FrameDecodingError?,
        recall: (BridgeResendKey, UInt64) -> BridgeResendMemory.Recall,
        translate: (Frame) -> Result<ProviderRequest, BridgeRefusal>,
        into admissions: inout [Admission]
    ) {
        let first = admissions.count
        for frame in frames {
            guard
                let sequence = machine.admit(
                    identifier: frame.notification.identifier ?? 0, command: frame.command,
                    token: frame.notification.token, key: frame.key)
            else {
                admissions.append(.dropped)
                continue
            }
            // A frame the gateway would refuse is refused again, never looked up.
            if case .failure(let refusal)? = frame.request {
                admissions.append(.refused(sequence: sequence, refusal))
                continue
            }
            switch recall(frame.key, sequence) {
            case .settled(let verdict):
                admissions.append(.answered(sequence: sequence, verdict))
            case .pending:
                switch frame.request ?? translate(frame) {
                case .success(let request):
                    held[sequence] = request
                    admissions.append(.held(sequence: sequence))
                case .failure(let refusal):
                    // Cannot be sent itself should its earlier copy get no verdict: refused (that
                    // copy's resolution later finds it settled and is ignored).
                    admissions.append(.refused(sequence: sequence, refusal))
                }
            case .unknown:
                admissions.append(forwarding(frame, sequence: sequence, translate: translate, possibleDuplicate: false))
            case .orphaned:
                admissions.append(forwarding(frame, sequence: sequence, translate: translate, possibleDuplicate: true))
            }
        }
        if let malformed { noteMalformed(malformed) }
        for index in first..<admissions.count {
            switch admissions[index] {
            case .refused(let sequence, let refusal):
                _ = machine.settle(sequence: sequence, verdict: refusal.verdict)
            case .answered(let sequence, let verdict):
                _ = machine.settle(sequence: sequence, verdict: verdict)
            case .dropped, .held, .forwarded:
                break
            }
        }
    }

    private func forwarding(
        _ frame: Frame, sequence: UInt64, translate: (Frame) -> Result<ProviderRequest, BridgeRefusal>,
        possibleDuplicate: Bool
    ) -> Admission {
        switch frame.request ?? translate(frame) {
        case .success(let request):
            return .forwarded(sequence: sequence, request, possibleDuplicate: possibleDuplicate)
        case .failure(let refusal):
            return .refused(sequence: sequence, refusal)
        }
    }

    /// A frame no bytes can make valid, or the sender's confirmation barrier: the input ends
    /// there, and the machine answers it in its turn.
    public mutating func noteMalformed(_ malformed: FrameDecodingError) {
        if malformed.isConfirmationBarrier { barrier = malformed.identifier }
        machine.malformed(
            malformed.errorResponse, command: malformed.command, reason: "byte \(malformed.offset): \(malformed.reason)"
        )
    }

    /// The verdict for the notification with `sequence` (a held resend is let go: its earlier
    /// copy's verdict is its own).
    public mutating func settle(sequence: UInt64, verdict: BridgeVerdict) -> BridgeSenderMachine.Aftermath {
        held[sequence] = nil
        return machine.settle(sequence: sequence, verdict: verdict)
    }

    /// A held resend whose earlier copy got no verdict: its request, to send upstream while the
    /// sender is still to be answered (``BridgeSenderMachine/willAnswer``); nil when it is not
    /// held (any more). Once the sender was answered, or left, the caller settles it unavailable
    /// instead: its next copy is the one to deliver, and this one too would be a second delivery.
    public mutating func releaseHeld(sequence: UInt64) -> ProviderRequest? {
        held.removeValue(forKey: sequence)
    }

    /// What to do now (``BridgeSenderMachine/nextAction()``); an answer's window (what the sender
    /// will send again) is remembered through `remember` before it is returned, so that no
    /// verdict for those notifications can slip past.
    public mutating func nextAction(remember: (BridgeSenderMachine.Answer) -> Void) -> BridgeSenderMachine.Action {
        let action = machine.nextAction()
        if case .answer(let answer) = action { remember(answer) }
        return action
    }

    /// The bridge is stopping (``BridgeSenderMachine/stop()``).
    public mutating func stop() { machine.stop() }

    /// The drain time is over (``BridgeSenderMachine/abandon(reason:)``).
    public mutating func abandon(reason: String) -> [BridgeSenderMachine.Aftermath] {
        machine.abandon(reason: reason)
    }

    /// The sender left (``BridgeSenderMachine/senderGone()``).
    public mutating func senderGone() -> [BridgeSenderMachine.Item] { machine.senderGone() }
}
