import APNsCore
import Testing

@Suite struct ProviderReasonTests {
    /// Apple's HNR table, row by row.
    static let table: [(String, Int)] = [
        ("BadCollapseId", 400), ("BadDeviceToken", 400), ("BadExpirationDate", 400), ("BadMessageId", 400),
        ("BadPriority", 400), ("BadTopic", 400), ("DeviceTokenNotForTopic", 400), ("DuplicateHeaders", 400),
        ("IdleTimeout", 400), ("InvalidPushType", 400), ("MissingDeviceToken", 400), ("MissingTopic", 400),
        ("PayloadEmpty", 400), ("TopicDisallowed", 400),
        ("BadCertificate", 403), ("BadCertificateEnvironment", 403), ("ExpiredProviderToken", 403),
        ("Forbidden", 403), ("InvalidProviderToken", 403), ("MissingProviderToken", 403),
        ("UnrelatedKeyIdInToken", 403), ("BadEnvironmentKeyIdInToken", 403), ("BadEnvironmentKeyInToken", 403),
        ("BadPath", 404), ("MethodNotAllowed", 405), ("ExpiredToken", 410), ("Unregistered", 410),
        ("PayloadTooLarge", 413), ("TooManyProviderTokenUpdates", 429), ("TooManyRequests", 429),
        ("InternalServerError", 500), ("ServiceUnavailable", 503), ("Shutdown", 503),
    ]

    @Test(arguments: table)
    func everyReasonKnowsItsStatus(raw: String, status: Int) {
        let reason = ProviderReason(rawValue: raw)
        #expect(reason.status == status)
        #expect(reason.isKnown)
        #expect(ProviderReason.allKnown.contains(reason))
        #expect(ProviderResponse(rejecting: reason).status == status)
    }

    @Test func theStaticListIsTheTable() {
        #expect(ProviderReason.allKnown.map(\.rawValue) == Self.table.map(\.0))
    }

    @Test(arguments: ["", "badDeviceToken", "SomethingNew", "Bad Device Token"])
    func unknownReasonsSurviveWithoutAStatus(raw: String) {
        let reason = ProviderReason(rawValue: raw)
        #expect(reason.rawValue == raw)
        #expect(reason.status == nil && !reason.isKnown)
        #expect(ProviderResponse(rejecting: reason).status == 400)
    }
}
