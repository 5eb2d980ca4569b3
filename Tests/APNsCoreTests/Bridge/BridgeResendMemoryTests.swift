import APNsCore
import Testing

@Suite struct BridgeResendMemoryTests {
    static func key(_ identifier: UInt32, content: UInt128 = 1) -> BridgeResendKey {
        BridgeResendKey(identifier: identifier, digest: content)
    }

    @Test func aRememberedVerdictAnswersOneResendOnly() {
        var memory = BridgeResendMemory()
        memory.remember(Self.key(5), verdict: .accepted, now: .zero)
        #expect(memory.recall(Self.key(5), waiter: 1, now: .seconds(1)) == .settled(.accepted))
        // One-shot: the same content sent again later is a new notification.
        #expect(memory.recall(Self.key(5), waiter: 2, now: .seconds(2)) == .unknown)
        #expect(memory.hits == 1)
    }

    @Test func theContentIsPartOfTheKey() {
        var memory = BridgeResendMemory()
        memory.remember(Self.key(5, content: 1), verdict: .accepted, now: .zero)
        // Same identifier, other content (senders reuse identifiers): not a resend.
        #expect(memory.recall(Self.key(5, content: 2), waiter: 1, now: .zero) == .unknown)
    }

    @Test func verdictsThatDecideNothingAreNotRemembered() {
        var memory = BridgeResendMemory()
        memory.remember(Self.key(1), verdict: .unavailable(reason: "lost"), now: .zero)
        #expect(memory.count == 0)
        memory.remember(Self.key(2), verdict: .rejected(.invalidToken, reason: "bad"), now: .zero)
        #expect(memory.recall(Self.key(2), waiter: 1, now: .zero) == .settled(.rejected(.invalidToken, reason: "bad")))
    }

    @Test func aPendingEntryHandsItsVerdictToTheResendsWaitingForIt() {
        var memory = BridgeResendMemory()
        memory.rememberPending(Self.key(9))
        #expect(memory.recall(Self.key(9), waiter: 42, now: .zero) == .pending)
        let resolution = memory.resolve(Self.key(9), verdict: .accepted, now: .zero)
        #expect(resolution == BridgeResendMemory.Resolution(waiters: [42], verdict: .accepted))
        #expect(memory.count == 0)
    }

    @Test func aPendingEntryWithoutWaitersIsKeptForTheResend() {
        var memory = BridgeResendMemory()
        memory.rememberPending(Self.key(9))
        #expect(memory.resolve(Self.key(9), verdict: .unregistered(seconds: 3), now: .zero).waiters.isEmpty)
        #expect(memory.recall(Self.key(9), waiter: 1, now: .zero) == .settled(.unregistered(seconds: 3)))
    }

    @Test func aPendingEntryThatGetsNoVerdictSendsItsWaitersUpstream() {
        var memory = BridgeResendMemory()
        memory.rememberPending(Self.key(9))
        _ = memory.recall(Self.key(9), waiter: 7, now: .zero)
        let resolution = memory.resolve(Self.key(9), verdict: .unavailable(reason: "lost"), now: .zero)
        #expect(resolution == BridgeResendMemory.Resolution(waiters: [7], verdict: nil))
        #expect(memory.count == 0)
    }

    @Test func theMemoryIsBoundedInNumberAndAge() {
        var configuration = BridgeResendMemory.Configuration()
        configuration.capacity = 3
        configuration.lifetime = .seconds(10)
        var memory = BridgeResendMemory(configuration: configuration)
        for identifier in UInt32(1)...5 { memory.remember(Self.key(identifier), verdict: .accepted, now: .zero) }
        #expect(memory.count == 3)
        #expect(memory.recall(Self.key(1), waiter: 0, now: .zero) == .unknown)
        #expect(memory.recall(Self.key(5), waiter: 0, now: .zero) == .settled(.accepted))
        #expect(memory.recall(Self.key(4), waiter: 0, now: .seconds(11)) == .unknown)  // too old
        // Pending entries are never evicted: a resend may still be waiting for them.
        memory.rememberPending(Self.key(100))
        for identifier in UInt32(10)...20 {
            memory.remember(Self.key(identifier), verdict: .accepted, now: .seconds(20))
        }
        #expect(memory.recall(Self.key(100), waiter: 1, now: .seconds(20)) == .pending)
    }
}

/// The status table of HTTP2-PROTOCOL.md, row by row.
@Suite struct BridgeVerdictMappingTests {
    static func rejection(_ status: Int, _ reason: ProviderReason?, timestamp: UInt64? = nil) -> ProviderRejection {
        ProviderRejection(
            position: 1, token: try! DeviceToken(bytes: [UInt8](repeating: 1, count: 32)), status: status,
            reason: reason, timestamp: timestamp, apnsID: APNsID(rawValue: 1))
    }

    @Test(arguments: [
        (400, ProviderReason.badDeviceToken, StatusCode.invalidToken),
        (400, .deviceTokenNotForTopic, .invalidToken),
        (413, .payloadTooLarge, .invalidPayloadSize),
        (400, .payloadEmpty, .missingPayload),
        (400, .missingTopic, .missingTopic),
        (400, .badTopic, .invalidTopicSize),
        (400, .topicDisallowed, .invalidTopicSize),
        (400, .badPriority, .processingError),
        (400, .badExpirationDate, .processingError),
        (429, .tooManyRequests, .processingError),
        (405, .methodNotAllowed, .processingError),
    ])
    func rejectionsBecomeTheirBinaryStatus(status: Int, reason: ProviderReason, expected: StatusCode) {
        guard case .rejected(let binary, let text) = BridgeVerdict(rejection: Self.rejection(status, reason)) else {
            Issue.record("expected a rejection for \(status) \(reason.rawValue)")
            return
        }
        #expect(binary == expected)
        #expect(text.contains(reason.rawValue))
    }

    @Test(arguments: [
        (403, ProviderReason.invalidProviderToken), (403, .badCertificate), (403, .expiredProviderToken),
        (500, .internalServerError), (503, .serviceUnavailable), (503, .shutdown), (502, nil),
    ])
    func theUpstreamsTroubleIsStatusTen(status: Int, reason: ProviderReason?) {
        guard case .unavailable = BridgeVerdict(rejection: Self.rejection(status, reason)) else {
            Issue.record("expected unavailable for \(status)")
            return
        }
    }

    @Test(arguments: [ProviderReason.unregistered, .expiredToken])
    func goneIsNotAnErrorButFeedbackInSeconds(reason: ProviderReason) {
        #expect(
            BridgeVerdict(rejection: Self.rejection(410, reason, timestamp: 1_700_000_123_999))
                == .unregistered(seconds: 1_700_000_123))
    }
}
