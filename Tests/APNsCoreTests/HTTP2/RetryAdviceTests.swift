import APNsCore
import Testing

@Suite struct RetryAdviceTests {
    static let byReason: [(ProviderReason, RetryAdvice)] = [
        (.badCollapseId, .doNotRetry), (.badDeviceToken, .doNotRetry), (.badExpirationDate, .doNotRetry),
        (.badMessageId, .doNotRetry), (.badPriority, .doNotRetry), (.badTopic, .doNotRetry),
        (.deviceTokenNotForTopic, .doNotRetry), (.duplicateHeaders, .doNotRetry),
        (.idleTimeout, .retryOnNewConnection), (.invalidPushType, .doNotRetry), (.missingDeviceToken, .doNotRetry),
        (.missingTopic, .doNotRetry), (.payloadEmpty, .doNotRetry), (.topicDisallowed, .doNotRetry),
        (.badCertificate, .stopSending), (.badCertificateEnvironment, .stopSending),
        (.expiredProviderToken, .refreshTokenAndRetryOnce), (.forbidden, .doNotRetry),
        (.invalidProviderToken, .stopSending), (.missingProviderToken, .stopSending),
        (.unrelatedKeyIdInToken, .stopSending), (.badEnvironmentKeyIdInToken, .stopSending),
        (.badEnvironmentKeyInToken, .stopSending), (.badPath, .doNotRetry), (.methodNotAllowed, .doNotRetry),
        (.expiredToken, .discardDeviceToken), (.unregistered, .discardDeviceToken), (.payloadTooLarge, .doNotRetry),
        (.tooManyProviderTokenUpdates, .retryWithBackoff), (.tooManyRequests, .retryAfterDelay),
        (.internalServerError, .retryWithBackoff), (.serviceUnavailable, .retryWithBackoff),
        (.shutdown, .retryWithBackoff),
    ]

    @Test(arguments: byReason)
    func everyKnownReasonHasItsAdvice(reason: ProviderReason, advice: RetryAdvice) {
        #expect(ProviderResponse(rejecting: reason).retryAdvice == advice)
    }

    @Test func theTableCoversEveryKnownReason() {
        #expect(Self.byReason.map(\.0) == ProviderReason.allKnown)
    }

    @Test(
        arguments: [
            (200, nil, RetryAdvice.delivered),
            (400, nil, .doNotRetry), (403, ProviderReason(rawValue: "NewAuthThing"), .doNotRetry),
            (410, nil, .discardDeviceToken), (410, ProviderReason(rawValue: "Gone"), .discardDeviceToken),
            (429, ProviderReason(rawValue: "SlowDown"), .retryAfterDelay), (500, nil, .retryWithBackoff),
            (502, ProviderReason(rawValue: "BadGateway"), .retryWithBackoff), (418, nil, .doNotRetry),
        ] as [(Int, ProviderReason?, RetryAdvice)])
    func unknownReasonsFallBackToTheirStatus(status: Int, reason: ProviderReason?, advice: RetryAdvice) {
        #expect(RetryAdvice(status: status, reason: reason) == advice)
    }

    @Test func onlyRetriableAdviceAllowsRetry() {
        let retriable: [RetryAdvice] = [
            .retryAfterDelay, .retryWithBackoff, .retryOnNewConnection, .refreshTokenAndRetryOnce,
        ]
        let final: [RetryAdvice] = [.delivered, .doNotRetry, .discardDeviceToken, .stopSending]
        #expect(retriable.map(\.allowsRetry) == [true, true, true, true])
        #expect(final.map(\.allowsRetry) == [false, false, false, false])
    }

    @Test(
        arguments: [
            (HTTP2ErrorCode.noError, ProviderReason.shutdown, RetryAdvice.retryOnNewConnection),
            (.internalError, .shutdown, .retryWithBackoff), (.noError, .serviceUnavailable, .retryWithBackoff),
            (.noError, .badCertificateEnvironment, .stopSending), (.noError, .badCertificate, .stopSending),
            (.noError, .invalidProviderToken, .stopSending), (.noError, .missingProviderToken, .stopSending),
            (.noError, .expiredProviderToken, .refreshTokenAndRetryOnce),
            (.noError, .idleTimeout, .retryOnNewConnection),
            (.noError, .tooManyProviderTokenUpdates, .retryWithBackoff),
            (.protocolError, .badDeviceToken, .retryOnNewConnection),
            (.enhanceYourCalm, .tooManyRequests, .retryWithBackoff),
        ] as [(HTTP2ErrorCode, ProviderReason, RetryAdvice)])
    func goawayReasonsSayWhatToDoWithTheConnection(code: HTTP2ErrorCode, reason: ProviderReason, advice: RetryAdvice) {
        #expect(RetryAdvice(goawayErrorCode: code, reason: reason) == advice)
    }

    @Test func goawayWithoutAReasonGoesByItsErrorCode() {
        #expect(RetryAdvice(goawayErrorCode: .noError, reason: nil) == .retryOnNewConnection)
        #expect(RetryAdvice(goawayErrorCode: .protocolError, reason: nil) == .retryWithBackoff)
        #expect(
            RetryAdvice(goawayErrorCode: .noError, reason: ProviderReason(rawValue: "Mystery")) == .retryOnNewConnection
        )
        #expect(
            RetryAdvice(goawayErrorCode: .internalError, reason: ProviderReason(rawValue: "Mystery"))
                == .retryWithBackoff)
    }
}

@Suite struct ProviderGoawayTests {
    static func goaway(_ last: Int32, _ code: HTTP2ErrorCode, _ debug: String) -> ProviderGoaway {
        Array(debug.utf8).withUnsafeBytes { ProviderGoaway(lastStreamID: last, errorCode: code, debugData: $0) }
    }

    @Test func shutdownDebugDataNamesTheReasonAndTheLastStream() {
        let goaway = Self.goaway(7, .noError, #"{"reason":"Shutdown"}"#)
        #expect(goaway.reason == .shutdown && goaway.debugText == nil)
        #expect(goaway.wasProcessed(stream: 7) && !goaway.wasProcessed(stream: 9))
        #expect(goaway.advice == .retryOnNewConnection)  // graceful: a new connection at once
        #expect(goaway.description == "GOAWAY NO_ERROR after stream 7: Shutdown")
    }

    @Test func textDebugDataIsKeptForMessages() {
        let goaway = Self.goaway(1, .protocolError, "Maximum active streams violated for this endpoint.")
        #expect(goaway.reason == nil)
        #expect(goaway.debugText == "Maximum active streams violated for this endpoint.")
        #expect(goaway.advice == .retryWithBackoff)
        #expect(
            goaway.description
                == "GOAWAY PROTOCOL_ERROR after stream 1: Maximum active streams violated for this endpoint.")
        #expect(Self.goaway(0, HTTP2ErrorCode(rawValue: 0x42), "").description == "GOAWAY 0x42 after stream 0")
    }
}
