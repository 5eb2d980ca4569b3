import APNsCore
import Testing

/// ``FrameDeliveryStateMachine`` is ``DeliveryStateMachine`` for pre-encoded frames: driven in
/// lockstep through the same random script of connects, writes, error responses of every kind,
/// silent closes, unanswered barriers and stops, both answer the same actions, publish the same
/// events and end with the same report; and the frames written are the encoder's, byte for byte.
@Suite struct FrameDeliveryStateMachineTests {
    static func notification(_ position: Int) -> PushNotification {
        DeliveryStateMachineTests.notification(UInt64(position), identifier: position % 3 == 0 ? nil : UInt32(position))
    }

    /// The records of notifications 1...count, one after the other, and where each starts.
    static func records(_ count: Int, format: FrameFormat) -> (bytes: UnsafeMutableRawBufferPointer, starts: [Int]) {
        let notifications = (1...count).map(notification)
        let total = notifications.reduce(0) { $0 + FrameRecord.size(of: $1, format: format) }
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: total, alignment: 16)
        var starts: [Int] = []
        var offset = 0
        for notification in notifications {
            starts.append(offset)
            offset += FrameRecord.write(notification, format: format, to: bytes.baseAddress! + offset)
        }
        return (bytes, starts + [total])
    }

    @Test(arguments: [FrameFormat.enhanced, .itemized])
    func theSameScriptGivesTheSameActionsEventsFramesAndReport(_ format: FrameFormat) {
        let count = 3_000
        let (bytes, starts) = Self.records(count, format: format)
        defer { bytes.deallocate() }
        var (totalSent, rejected, unconfirmed) = (0, 0, 0)
        for seed in UInt64(1)...30 {
            var random = SplitMix64(seed: seed)
            func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }
            let configuration = DeliveryStateMachine.Configuration(
                cacheCapacity: Int(1 + random.next() % 300), maximumAttempts: Int(1 + random.next() % 4),
                reconnect: ReconnectPolicy(initialDelay: .zero, maximumConsecutiveFailures: 50))
            var plain = DeliveryStateMachine(configuration: configuration, connection: 3)
            var frames = FrameDeliveryStateMachine(configuration: configuration, connection: 3)
            var next = 1  // the next position to take from the input
            var written: [UInt32] = []  // wire identifiers written on the current connection
            var steps = 0
            loop: while steps < 20_000 {
                steps += 1
                let action = plain.nextAction()
                let frameAction = frames.nextAction()
                var plainBytes = ByteWriter()
                var frameBytes = ByteWriter()
                switch (action, frameAction) {
                case (.finished, .finished):
                    break loop
                case (.connect(let delay), .connect(let frameDelay)):
                    #expect(delay == frameDelay)
                    written = []
                    if chance(10) {
                        let error = LegacyAPNsError(.connectionFailed, "refused")
                        plain.connectFailed(error)
                        frames.connectFailed(error)
                    } else {
                        plain.connected()
                        frames.connected()
                    }
                case (.writeNew, .writeNew):
                    if next > count || chance(2) {
                        plain.inputFinished()
                        frames.inputFinished()
                        next = count + 1
                        break
                    }
                    let end = starts[Swift.min(count, next + Int(random.next() % 50))]
                    let run = UnsafeRawBufferPointer(rebasing: bytes[starts[next - 1]..<end])
                    let limit = Int(1 + random.next() % 2_000)
                    let (taken, size) = frames.writeNew(
                        records: run, firstPosition: UInt64(next), into: &frameBytes, until: limit)
                    #expect(taken >= 1)
                    #expect(size == starts[next - 1 + taken] - starts[next - 1])
                    for offset in 0..<taken {
                        if offset > 0 { #expect(plain.nextAction() == .writeNew) }
                        let position = next + offset
                        let identifier = plain.wroteNew(Self.notification(position), position: UInt64(position))
                        FrameEncoder.encodeValidated(
                            Self.notification(position), as: format, identifier: identifier, into: &plainBytes)
                        written.append(identifier)
                    }
                    next += taken
                case (.resend(let identifier, let notification), .resend(let frameIdentifier, let record)):
                    #expect(identifier == frameIdentifier)
                    #expect(record.notification == notification)
                    FrameEncoder.encodeValidated(notification, as: format, identifier: identifier, into: &plainBytes)
                    frameBytes.writeWithUnsafeMutableBytes(byteCount: record.frameSize) {
                        record.copyFrame(identifier: frameIdentifier, to: $0.baseAddress!)
                    }
                    written.append(identifier)
                case (.writeBarrier(let barrier), .writeBarrier(let frameBarrier)):
                    #expect(barrier == frameBarrier)
                case (.awaitVerdict, .awaitVerdict):
                    let response: ErrorResponse? =
                        if chance(15) {
                            nil
                        } else if let barrier = plain.pendingBarrier, chance(70) {
                            ErrorResponse(status: .shutdown, identifier: barrier)
                        } else if !written.isEmpty {
                            ErrorResponse(
                                status: [.invalidToken, .processingError, .shutdown, .noErrors][Int(random.next() % 4)],
                                identifier: written[Int(random.next() % UInt64(written.count))])
                        } else {
                            nil
                        }
                    if let response {
                        plain.received(response)
                        frames.received(response)
                    } else if chance(50) {
                        plain.verdictTimedOut()
                        frames.verdictTimedOut()
                    } else {
                        plain.closed(.endedByGateway(reason: "gone"))
                        frames.closed(.endedByGateway(reason: "gone"))
                    }
                case (.close, .close):
                    plain.closed(.unexpected(reason: "closed"))
                    frames.closed(.unexpected(reason: "closed"))
                default:
                    Issue.record("seed \(seed): \(action) against \(frameAction)")
                    break loop
                }
                #expect(plainBytes.bytes == frameBytes.bytes, "seed \(seed)")
                // Now and then, something happens while writing.
                if plain.isWriting, !written.isEmpty, chance(3) {
                    let response = ErrorResponse(
                        status: chance(50) ? .invalidToken : .processingError,
                        identifier: written[Int(random.next() % UInt64(written.count))])
                    plain.received(response)
                    frames.received(response)
                } else if plain.isWriting, chance(1) {
                    plain.closed(.unexpected(reason: "reset"))
                    frames.closed(.unexpected(reason: "reset"))
                }
                #expect(plain.takeEvents() == frames.takeEvents(), "seed \(seed)")
                #expect(plain.inFlightCount == frames.inFlightCount)
                #expect(plain.resendQueueCount == frames.resendQueueCount)
            }
            #expect(plain.report == frames.report, "seed \(seed)")
            let report = frames.report
            #expect(report.sent == report.accepted + report.rejected.count + report.unconfirmed.count)
            #expect(frames.oldestPending == nil)
            totalSent += report.sent
            rejected += report.rejected.count
            unconfirmed += report.unconfirmed.count
        }
        // The scripts covered the ground: much was sent, some rejected, some left unconfirmed.
        #expect(totalSent > 3 * count)
        #expect(rejected > 0)
        #expect(unconfirmed > 0)
    }

    @Test func aRunStopsAtTheWindowAndAtTheByteLimit() {
        let (bytes, starts) = Self.records(10, format: .enhanced)
        defer { bytes.deallocate() }
        var machine = FrameDeliveryStateMachine(configuration: .init(cacheCapacity: 4))
        guard case .connect = machine.nextAction() else {
            Issue.record("no connect")
            return
        }
        machine.connected()
        guard case .writeNew = machine.nextAction() else {
            Issue.record("no writeNew")
            return
        }
        var writer = ByteWriter()
        let frame = starts[1] - starts[0] - FrameRecord.headerSize
        // The byte limit: the run stops once the writer holds at least `limit` bytes.
        var (count, size) = machine.writeNew(
            records: UnsafeRawBufferPointer(bytes), firstPosition: 1, into: &writer, until: frame + 1)
        #expect(count == 2)
        #expect(size == starts[2])
        #expect(writer.count == 2 * frame)
        #expect(machine.oldestPending == 1)
        // The window (4): two more, whatever the limit.
        guard case .writeNew = machine.nextAction() else {
            Issue.record("no writeNew")
            return
        }
        (count, size) = machine.writeNew(
            records: UnsafeRawBufferPointer(rebasing: bytes[starts[2]...]), firstPosition: 3, into: &writer,
            until: .max)
        #expect(count == 2)
        #expect(machine.inFlightCount == 4)
        guard case .writeBarrier(let barrier) = machine.nextAction() else {
            Issue.record("no barrier")
            return
        }
        #expect(barrier == 4 &+ DeliveryStateMachine.barrierIdentifierOffset)
        machine.received(ErrorResponse(status: .shutdown, identifier: barrier))
        #expect(machine.report.accepted == 4)
        #expect(machine.oldestPending == nil)
    }
}
