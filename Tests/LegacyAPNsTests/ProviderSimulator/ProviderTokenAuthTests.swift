import APNsCore
import APNsCredentials
import APNsRuntime
import GatewaySimulator
import TestSupport
import Testing

/// The provider-token rules of a token connection, event in, response out, with the clock moved by
/// hand (an hour passes in no time).
@Suite struct ProviderTokenAuthTests {
    @Test func theStreamLimitIsOneUntilTheFirstValidTokenAndThenMaxStreams() throws {
        let pair = try ProviderPair(maximumConcurrentStreams: 500)
        try pair.exchange()
        #expect(pair.client.remoteMaxConcurrentStreams == 1)
        #expect(try pair.send(ProviderPair.request(1))?.reason == .missingProviderToken)
        #expect(pair.client.remoteMaxConcurrentStreams == 1)
        #expect(try pair.send(ProviderPair.request(2), token: pair.token())?.status == 200)
        #expect(pair.client.remoteMaxConcurrentStreams == 500)
        #expect(pair.events.get().contains(.tokenAccepted(connection: 1, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")))
    }

    @Test func refusedTokensGetApplesReasons() throws {
        let pair = try ProviderPair()
        let good = pair.token()
        // A valid token with its signature bytes flipped, and one of a key the simulator does not know.
        var parts = good.compactSerialization.split(separator: ".").map(String.init)
        parts[2] = String(parts[2].reversed())
        let unknownKey = pair.token(ProviderPair.keyB, keyID: "QQQ999QQQQ")
        let wrongTeam = pair.token(teamID: "OTHERTEAM1")
        let cases: [(String?, ProviderReason)] = [
            (nil, .missingProviderToken),
            ("bearer", .missingProviderToken),
            ("bearer not.a.token", .invalidProviderToken),
            ("basic dXNlcjpwYXNz", .invalidProviderToken),
            ("bearer " + parts.joined(separator: "."), .invalidProviderToken),
            (unknownKey.authorizationHeaderValue, .invalidProviderToken),
            (wrongTeam.authorizationHeaderValue, .invalidProviderToken),
            (pair.token(offset: -3601).authorizationHeaderValue, .expiredProviderToken),
            (pair.token(offset: 3600).authorizationHeaderValue, .invalidProviderToken),
        ]
        for (index, (value, reason)) in cases.enumerated() {
            let extra = value.map { [("authorization", $0)] } ?? []
            let response = try pair.send(ProviderPair.request(index), extra: extra)
            #expect(response?.status == 403, "\(value ?? "none")")
            #expect(response?.reason == reason, "\(value ?? "none")")
        }
        #expect(pair.client.remoteMaxConcurrentStreams == 1)
    }

    @Test func aTokenExpiresAnHourAfterItsIssuedAt() throws {
        let pair = try ProviderPair()
        let token = pair.token()
        #expect(try pair.send(ProviderPair.request(1), token: token)?.status == 200)
        pair.clock.advance(by: .seconds(3599))
        #expect(try pair.send(ProviderPair.request(2), token: token)?.status == 200)
        pair.clock.advance(by: .seconds(2))
        let expired = try pair.send(ProviderPair.request(3), token: token)
        #expect(expired?.status == 403 && expired?.reason == .expiredProviderToken)
        // A fresh token (more than 20 minutes after the first) is accepted on the same connection.
        #expect(try pair.send(ProviderPair.request(4), token: pair.token())?.status == 200)
        #expect(pair.events.get().contains(.tokenUpdated(connection: 1, keyID: "ABC123DEFG")))
    }

    @Test func anotherKeyThanTheConnectionsFirstIsUnrelated() throws {
        let pair = try ProviderPair()
        #expect(try pair.send(ProviderPair.request(1), token: pair.token())?.status == 200)
        let other = pair.token(ProviderPair.keyB, keyID: "ZYX987WVUT")
        let response = try pair.send(ProviderPair.request(2), token: other)
        #expect(response?.status == 403 && response?.reason == .unrelatedKeyIdInToken)
        // The second key alone is fine on a connection of its own.
        let fresh = try ProviderPair()
        #expect(
            try fresh.send(ProviderPair.request(3), token: fresh.token(ProviderPair.keyB, keyID: "ZYX987WVUT"))?.status
                == 200)
    }

    @Test func aNewTokenWithinTwentyMinutesIsTooManyUpdatesAndTheOldOneStays() throws {
        let pair = try ProviderPair()
        let first = pair.token()
        #expect(try pair.send(ProviderPair.request(1), token: first)?.status == 200)
        pair.clock.advance(by: .seconds(19 * 60))
        let early = try pair.send(ProviderPair.request(2), token: pair.token())
        #expect(early?.status == 429 && early?.reason == .tooManyProviderTokenUpdates)
        #expect(try pair.send(ProviderPair.request(3), token: first)?.status == 200)
        pair.clock.advance(by: .seconds(2 * 60))
        #expect(try pair.send(ProviderPair.request(4), token: pair.token())?.status == 200)
    }

    @Test func aKeyLimitedToTheOtherEnvironmentIsBadEnvironmentKeyId() throws {
        let keys = [
            ProviderSimulator.AuthKey(
                keyID: "ABC123DEFG", teamID: ProviderPair.teamID, publicKey: ProviderPair.keyA.publicKey,
                environment: .production)
        ]
        let pair = try ProviderPair(environment: .development, authKeys: keys)
        let response = try pair.send(ProviderPair.request(1), token: pair.token())
        #expect(response?.status == 403 && response?.reason == .badEnvironmentKeyIdInToken)
    }

    @Test func teamTopicsLimitTokenAuthToTheTeamsBundleIdsAndTheirSuffixes() throws {
        let pair = try ProviderPair(teamTopics: [ProviderPair.teamID: ["com.example.legacy"]])
        let token = pair.token()
        #expect(try pair.send(ProviderPair.request(1), token: token)?.status == 200)
        let voip = ProviderPair.request(2, topic: "com.example.legacy.voip", pushType: .voip)
        #expect(try pair.send(voip, token: token)?.status == 200)
        let other = try pair.send(ProviderPair.request(3, topic: "com.other.app"), token: token)
        #expect(other?.status == 400 && other?.reason == .topicDisallowed)
        // Without an entry for the team, any topic goes.
        let open = try ProviderPair()
        #expect(try open.send(ProviderPair.request(4, topic: "com.other.app"), token: open.token())?.status == 200)
    }
}
