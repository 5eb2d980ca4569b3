import APNsCore
import Testing

/// The bridge's admission rule (``BridgeSenderState``), event by event: each frame of a read ends
/// dropped, refused, answered from memory, held for an earlier copy, or forwarded (as a possible
/// duplicate when its earlier copy was orphaned by a bridge that died).
@Suite struct BridgeAdmissionTests {
    static let token = try! DeviceToken(bytes: [UInt8](repeating: 3, count: 32))
    static let translation = BridgeTranslation(fixedTopic: "com.example.app", usesTokens: false, run: 7)

    static func frame(_ identifier: UInt32, token: DeviceToken = token) -> BridgeSenderState.Frame {
        BridgeSenderState.Frame(
            notification: PushNotification(
                token: token, payload: try! Payload(json: #"{"aps":{"alert":"hi"}}"#), identifier: identifier),
            command: .enhanced, key: BridgeResendKey(identifier: identifier, digest: UInt128(identifier) * 31))
    }

    static func translate(_ frame: BridgeSenderState.Frame) -> Result<ProviderRequest, BridgeRefusal> {
        translation.request(for: frame.notification, connection: 1, senderTopic: nil)
    }

    /// Admits `frames` with `memory` (none when nil); returns the admissions.
    static func admit(
        _ frames: [BridgeSenderState.Frame], into state: inout BridgeSenderState,
        memory: inout BridgeResendMemory, malformed: FrameDecodingError? = nil
    ) -> [BridgeSenderState.Admission] {
        var admissions: [BridgeSenderState.Admission] = []
        state.admit(
            frames, malformed: malformed, recall: { key, sequence in memory.recall(key, waiter: sequence, now: .zero) },
            translate: translate, into: &admissions)
        return admissions
    }

    @Test func unknownFramesAreForwardedInOrderWithTheirRequests() throws {
        var state = BridgeSenderState()
        var memory = BridgeResendMemory()
        let admissions = Self.admit([Self.frame(1), Self.frame(2)], into: &state, memory: &memory)
        #expect(admissions.count == 2)
        for (index, admission) in admissions.enumerated() {
            guard case .forwarded(let sequence, let request, let possibleDuplicate) = admission else {
                Issue.record("\(admission)")
                continue
            }
            #expect(sequence == UInt64(index + 1))
            #expect(request.identifier == UInt32(index + 1))
            #expect(!possibleDuplicate)
        }
        #expect(state.machine.inFlight == 2)
    }

    /// A frame the gateway would refuse is settled with the refusal at once, and the frames after
    /// it in the same read are still admitted (as upstream verdicts would have it); the next read
    /// is dropped.
    @Test func aRefusedFrameFailsTheConnectionButNotTheRestOfItsRead() throws {
        var state = BridgeSenderState()
        var memory = BridgeResendMemory()
        let short = try DeviceToken(bytes: [1, 2, 3])
        var frames = [Self.frame(1), Self.frame(2, token: short), Self.frame(3)]
        frames[1].request = Self.translate(frames[1])
        let admissions = Self.admit(frames, into: &state, memory: &memory)
        guard case .refused(2, let refusal) = admissions[1] else {
            Issue.record("\(admissions)")
            return
        }
        #expect(refusal.status == .invalidTokenSize)
        guard case .forwarded(3, _, _) = admissions[2] else {
            Issue.record("\(admissions)")
            return
        }
        #expect(!state.machine.isAdmitting)
        #expect(Self.admit([Self.frame(4)], into: &state, memory: &memory) == [.dropped])
        // Once 1 is delivered, the answer names 2 with its status; 3 is what the sender resends.
        _ = state.settle(sequence: 1, verdict: .accepted)
        var remembered: BridgeSenderMachine.Answer?
        let action = state.nextAction { remembered = $0 }
        guard case .answer(let answer) = action else {
            Issue.record("\(action)")
            return
        }
        #expect(remembered == answer)
        #expect(answer.response == ErrorResponse(status: .invalidTokenSize, identifier: 2))
        #expect(answer.pendingAfter.map(\.identifier) == [3])
    }

    /// A resend whose earlier copy has its verdict is answered with it, without a request; one
    /// whose earlier copy is still upstream is held, and leaves when that copy's verdict comes
    /// (settled with it) or when the copy gets none (released, to go upstream itself).
    @Test func resendsAreAnsweredFromMemoryOrHeldForTheirEarlierCopy() throws {
        var state = BridgeSenderState()
        var memory = BridgeResendMemory()
        memory.remember(Self.frame(1).key, verdict: .accepted, now: .zero)
        memory.rememberPending(Self.frame(2).key)
        memory.rememberPending(Self.frame(3).key)
        let admissions = Self.admit([Self.frame(1), Self.frame(2), Self.frame(3)], into: &state, memory: &memory)
        #expect(admissions == [.answered(sequence: 1, .accepted), .held(sequence: 2), .held(sequence: 3)])
        #expect(state.heldCount == 2)
        #expect(state.machine.delivered == 1)  // 1 was let go as delivered

        // 2's earlier copy is delivered: its verdict settles the held resend.
        let resolution = memory.resolve(Self.frame(2).key, verdict: .accepted, now: .zero)
        #expect(resolution.waiters == [2])
        _ = state.settle(sequence: 2, verdict: .accepted)
        #expect(state.heldCount == 1)
        // 3's earlier copy got no verdict: the held resend goes upstream itself, once.
        let released = state.releaseHeld(sequence: 3)
        let request = try #require(released)
        #expect(request.identifier == 3)
        #expect(state.releaseHeld(sequence: 3) == nil)
        #expect(state.heldCount == 0)
    }

    /// After a restart on the store, a resend whose earlier copy was upstream when the bridge died
    /// is sent again, as a possible duplicate; a remembered verdict still answers its resend.
    @Test func anOrphanedResendIsForwardedAsAPossibleDuplicate() throws {
        var state = BridgeSenderState()
        var memory = BridgeResendMemory()
        memory.restore(
            [
                BridgeResendMemory.Record(key: Self.frame(5).key, verdict: nil, age: .seconds(3)),
                BridgeResendMemory.Record(key: Self.frame(6).key, verdict: .accepted, age: .seconds(3)),
            ], now: .seconds(100))
        let admissions = Self.admit([Self.frame(5), Self.frame(6), Self.frame(7)], into: &state, memory: &memory)
        guard case .forwarded(1, _, true) = admissions[0], case .forwarded(3, _, false) = admissions[2] else {
            Issue.record("\(admissions)")
            return
        }
        #expect(admissions[1] == .answered(sequence: 2, .accepted))
    }

    /// The sender's confirmation barrier ends the read: it is noted, and answered in its turn.
    @Test func aConfirmationBarrierIsNotedAndAnsweredInItsTurn() throws {
        var state = BridgeSenderState()
        var memory = BridgeResendMemory()
        var decoder = FrameDecoder(
            configuration: .init(maximumPayloadSize: 5120, acceptsNotifications: true, acceptsErrorResponses: false))
        var writer = ByteWriter(capacity: 64)
        ConfirmationBarrier.encode(identifier: 0xBA55, into: &writer)
        decoder.append(writer.bytes)
        var barrier: FrameDecodingError?
        do { _ = try decoder.next() } catch { barrier = error }
        let malformed = try #require(barrier)
        #expect(malformed.isConfirmationBarrier)
        let admissions = Self.admit([Self.frame(1)], into: &state, memory: &memory, malformed: malformed)
        guard case .forwarded(1, _, _) = admissions.first else {
            Issue.record("\(admissions)")
            return
        }
        #expect(state.barrier == 0xBA55)
        _ = state.settle(sequence: 1, verdict: .accepted)
        guard case .answer(let answer) = state.nextAction(remember: { _ in }) else {
            Issue.record("no answer")
            return
        }
        #expect(answer.response?.identifier == 0xBA55)
        #expect(answer.response?.status == ConfirmationBarrier.expectedStatus)
    }
}
