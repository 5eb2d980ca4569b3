import APNsCore
import APNsRuntime
import GatewaySimulator
import HTTP2Client
import LegacyAPNs
import LegacyBridge
import TestSupport
import Testing

/// One bridge for many apps: routes by sender certificate, each with its own `.p8` key and team,
/// against a simulator that knows both keys and limits each team to its topics; a reload while a
/// sender is mid-send.
@Suite(.serialized) struct BridgeRoutesTests {
    static let secondTeam = "TEAM2ZZZZZ"
    static let weather = "com.example.weather"
    static let universal = TestGateway.clientIdentity
    static let development = try! ClientIdentity(
        pkcs12: Fixtures.bytes(Fixtures.certs("development.p12")), passphrase: "secret")
    static let production = try! ClientIdentity(
        pkcs12: Fixtures.bytes(Fixtures.certs("production.p12")), passphrase: "secret")

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String($0, radix: 16).leftPadded }.joined() }

    /// Route 1: the universal certificate, key ABC123DEFG of team DEF123GHIJ. Route 2 (when
    /// `second`): the development certificate, key ZYX987WVUT of the second team, topic weather.
    static func routesJSON(first: Bool = true, second: Bool) -> String {
        var routes: [String] = []
        if first {
            routes.append(
                """
                {"senderFingerprint": "\(hex(universal.certificate.sha256Fingerprint))",
                 "authKey": "\(Fixtures.certs("AuthKey_ABC123DEFG.p8"))", "keyId": "ABC123DEFG", "teamId": "DEF123GHIJ"}
                """)
        }
        if second {
            routes.append(
                """
                {"senderFingerprint": "\(hex(development.certificate.sha256Fingerprint))",
                 "authKey": "\(Fixtures.certs("AuthKey_ZYX987WVUT.p8"))", "keyId": "ZYX987WVUT",
                 "teamId": "\(secondTeam)", "apnsTopic": "\(weather)"}
                """)
        }
        return "{\"routes\": [\(routes.joined(separator: ","))]}"
    }

    static func routes(first: Bool = true, second: Bool) throws -> BridgeRoutes {
        try BridgeRoutes(
            json: Array(routesJSON(first: first, second: second).utf8), source: "routes.json",
            readFile: { Fixtures.bytes($0) })
    }

    /// Each team may push only to its own topic: a route using the wrong key is refused upstream.
    static func twoTeams(_ configuration: inout ProviderSimulator.Configuration) {
        configuration.authKeys = [
            .init(keyID: "ABC123DEFG", teamID: ProviderPair.teamID, publicKey: ProviderPair.keyA.publicKey),
            .init(keyID: "ZYX987WVUT", teamID: secondTeam, publicKey: ProviderPair.keyB.publicKey),
        ]
        configuration.teamTopics = [ProviderPair.teamID: ["com.example.legacy"], secondTeam: [weather]]
    }

    func client(_ fixture: BridgeFixture, _ identity: ClientIdentity, failures: Int = 4) throws -> PushClient {
        try PushClient(
            configuration: BridgeFixture.clientConfiguration(
                gateway: fixture.endpoints.gateway, identity: identity, failures: failures))
    }

    func topics(_ fixture: BridgeFixture) -> [String: Int] {
        var counts: [String: Int] = [:]
        for accepted in fixture.upstream!.recorder.accepted { counts[accepted.request.topic ?? "", default: 0] += 1 }
        return counts
    }

    @Test func eachSenderDeliversWithItsRoutesKeyAndAnUnmatchedSenderIsRefused() async throws {
        let routes = try Self.routes(second: true)
        try await withBridge(configureUpstream: Self.twoTeams, configure: { $0.routes = routes }) { fixture in
            let first = try await client(fixture, Self.universal).send(BridgeLoopbackTests.notifications(1...300))
            let second = try await client(fixture, Self.development).send(
                BridgeLoopbackTests.notifications(301...500))
            #expect(first.failure == nil && first.accepted == 300)
            #expect(second.failure == nil && second.accepted == 200)
            #expect(topics(fixture) == ["com.example.legacy": 300, Self.weather: 200])
            #expect(fixture.deliveries().count == 500 && fixture.deliveries().values.allSatisfy { $0 == 1 })

            let refused = try await client(fixture, Self.production, failures: 1).send(
                BridgeLoopbackTests.notifications(501...510))
            #expect(refused.accepted == 0)
            #expect(fixture.deliveries().count == 500)
            func reasons() -> [String] {
                fixture.events.get().compactMap { event -> String? in
                    if case .senderRefused(_, let reason) = event { return reason }
                    return nil
                }
            }
            let expected = "no route matches its certificate (subject"
            // The bridge closes the connection, then logs why: the sender may hear the close first.
            #expect(
                await eventually {
                    reasons().contains {
                        $0.hasPrefix(expected) && $0.contains(Self.hex(Self.production.certificate.sha256Fingerprint))
                    }
                }, "\(reasons())")
        }
    }

    @Test func aReloadWhileASenderIsMidSendLosesNothing() async throws {
        let count = 30_000
        try await withBridge(
            configureUpstream: Self.twoTeams, configure: { $0.routes = try! Self.routes(second: false) }
        ) {
            fixture in
            // Before the reload the development certificate has no route.
            let early = try await client(fixture, Self.development, failures: 1).send(
                BridgeLoopbackTests.notifications(count + 1...count + 5))
            #expect(early.accepted == 0)

            let sender = try client(fixture, Self.universal)
            let sending = Task { await sender.send(BridgeLoopbackTests.notifications(1...count)) }
            #expect(await eventually(within: .seconds(30)) { fixture.upstream!.recorder.accepted.count > 100 })
            let added = try fixture.bridge.reload(routes: Self.routes(second: true))
            #expect(added == BridgeReload(routes: 2, pools: 2, newPools: 1, retiredPools: 0))
            // A bad reload changes nothing (the library's value is checked before it is applied).
            #expect(throws: LegacyAPNsError.self) {
                try BridgeRoutes(json: Array("{\"routes\": []}".utf8), source: "x.json", readFile: { _ in [] })
            }
            // The first route removed while its sender is still sending: its session keeps its pool.
            let removed = try fixture.bridge.reload(routes: Self.routes(first: false, second: true))
            #expect(removed == BridgeReload(routes: 1, pools: 1, newPools: 0, retiredPools: 1))
            #expect(fixture.upstream!.recorder.accepted.count < count, "the reloads came after the send")

            let late = try await client(fixture, Self.development).send(
                BridgeLoopbackTests.notifications(count + 1...count + 200))
            let report = await sending.value
            #expect(report.failure == nil)
            #expect(report.accepted == count)
            #expect(report.rejected.isEmpty && report.unconfirmed.isEmpty)
            #expect(late.failure == nil && late.accepted == 200)
            let deliveries = fixture.deliveries()
            #expect(deliveries.count == count + 200)
            #expect(deliveries.values.allSatisfy { $0 == 1 }, "a notification was delivered twice")
            #expect(topics(fixture) == ["com.example.legacy": count, Self.weather: 200])
        }
    }

    /// The upstream connections of each team the simulator has seen a token for, and of those the
    /// ones still open.
    func connections(_ fixture: BridgeFixture) -> (byTeam: [String: Set<Int>], closed: Set<Int>) {
        var byTeam: [String: Set<Int>] = [:]
        var closed = Set<Int>()
        for event in fixture.upstream!.events.get() {
            switch event {
            case .tokenAccepted(let connection, _, let team): byTeam[team, default: []].insert(connection)
            case .disconnected(let connection, _, _): closed.insert(connection)
            default: break
            }
        }
        return (byTeam, closed)
    }

    func openConnections(_ fixture: BridgeFixture, team: String) -> Int {
        let (byTeam, closed) = connections(fixture)
        return byTeam[team, default: []].subtracting(closed).count
    }

    @Test func aRetiredPoolClosesOnceItsSenderHasLeftAndLosesNothing() async throws {
        let count = 2_000
        let team = ProviderPair.teamID
        try await withBridge(
            configureUpstream: Self.twoTeams, configure: { $0.routes = try! Self.routes(second: true) }
        ) { fixture in
            // The second route's sender is connected, half its notifications sent, when a reload
            // removes its route (the test holds the rest back, so the order does not depend on speed).
            let (input, feed) = AsyncStream.makeStream(of: PushNotification.self)
            let sender = try client(fixture, Self.development)
            let sending = Task { await sender.send(input) }
            for notification in BridgeLoopbackTests.notifications(1...count / 2) { feed.yield(notification) }
            #expect(await eventually(within: .seconds(30)) { topics(fixture)[Self.weather, default: 0] == count / 2 })
            let reload = try fixture.bridge.reload(routes: Self.routes(second: false))
            #expect(reload == BridgeReload(routes: 1, pools: 1, newPools: 0, retiredPools: 1))
            #expect(openConnections(fixture, team: Self.secondTeam) > 0, "the retired pool serves its sender on")

            // Its sender goes on and finishes on the retired pool: nothing lost, nothing twice.
            for notification in BridgeLoopbackTests.notifications(count / 2 + 1...count) { feed.yield(notification) }
            feed.finish()
            let report = await sending.value
            #expect(report.failure == nil && report.accepted == count, "\(report)")
            #expect(report.rejected.isEmpty && report.unconfirmed.isEmpty)
            // It has left: the retired pool closes its upstream connections (not only at the stop).
            #expect(await eventually(within: .seconds(30)) { openConnections(fixture, team: Self.secondTeam) == 0 })

            // Senders keep working: the first route's pool, and a reload bringing the second back
            // (a fresh pool for the same key).
            let first = try await client(fixture, Self.universal).send(
                BridgeLoopbackTests.notifications(count + 1...count + 300))
            #expect(first.failure == nil && first.accepted == 300)
            #expect(openConnections(fixture, team: team) > 0, "the pool still in use stays open")
            let back = try fixture.bridge.reload(routes: Self.routes(second: true))
            #expect(back == BridgeReload(routes: 2, pools: 2, newPools: 1, retiredPools: 0))
            let again = try await client(fixture, Self.development).send(
                BridgeLoopbackTests.notifications(count + 301...count + 400))
            #expect(again.failure == nil && again.accepted == 100)
            #expect(openConnections(fixture, team: Self.secondTeam) > 0)
            let deliveries = fixture.deliveries()
            #expect(deliveries.count == count + 400)
            #expect(deliveries.values.allSatisfy { $0 == 1 }, "a notification was delivered twice")
            #expect(topics(fixture) == ["com.example.legacy": 300, Self.weather: count + 100])
        }
    }

    static func certificate(_ name: String) -> Certificate {
        Certificate.certificates(pemRepresentation: Fixtures.bytes(Fixtures.certs(name)))[0]
    }

    @Test func aSenderCAIsReachedThroughTheChainAsOpenSSLVerifiesIt() throws {
        let (root, wwdr, untrustedCA) = (
            Self.certificate("ca.pem"), Self.certificate("wwdr.pem"), Self.certificate("untrusted-ca.pem")
        )
        let universal = Self.universal.certificate
        // The root issued the intermediate, which issued the sender: the root is reached through it.
        #expect(universal.chains(to: [root], through: [wwdr]))
        #expect(!universal.isIssued(by: root), "not its direct issuer")
        #expect(!universal.chains(to: [root]), "no path without the intermediate")
        #expect(universal.chains(to: [wwdr]), "the intermediate itself may be the anchor")
        #expect(universal.chains(to: [untrustedCA, root], through: [wwdr]))
        // Not its chain; a certificate that is no CA; one expired; one of another CA.
        #expect(!universal.chains(to: [untrustedCA], through: [wwdr, root]))
        #expect(!universal.chains(to: [Self.development.certificate], through: [wwdr]))
        #expect(!Self.certificate("expired.pem").chains(to: [root], through: [wwdr]))
        #expect(!Self.certificate("untrusted.pem").chains(to: [root], through: [wwdr]))
        #expect(!universal.chains(to: []))

        let credentials = ProviderCredentials.token(ProviderPair.keyA, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        let route = BridgeRoutes.Route(match: .senderCA([root]), credentials: credentials, poolKey: "a")
        let fingerprint = universal.sha256Fingerprint
        #expect(route.matches(certificate: universal, intermediates: [wwdr], topic: nil, fingerprint: fingerprint))
        #expect(!route.matches(certificate: universal, topic: nil, fingerprint: fingerprint))
    }

    /// The bridge trusts only the root a route names; the sender presents its intermediate in the
    /// handshake, and the route takes it through that intermediate (its direct issuer is not the
    /// route's CA).
    @Test func aRouteNamingTheRootTakesASenderIssuedByAnIntermediate() async throws {
        let json = """
            {"routes": [{"senderCA": "\(Fixtures.certs("untrusted-ca.pem"))", "authKey": "\(Fixtures.certs("AuthKey_ZYX987WVUT.p8"))",
                         "keyId": "ZYX987WVUT", "teamId": "\(Self.secondTeam)", "apnsTopic": "\(Self.weather)"},
                        {"senderCA": "\(Fixtures.certs("ca.pem"))", "authKey": "\(Fixtures.certs("AuthKey_ABC123DEFG.p8"))",
                         "keyId": "ABC123DEFG", "teamId": "DEF123GHIJ"}]}
            """
        let routes = try BridgeRoutes(json: Array(json.utf8), source: "routes.json", readFile: { Fixtures.bytes($0) })
        try await withBridge(
            configureUpstream: Self.twoTeams,
            configure: {
                $0.senderCAs = []
                $0.routes = routes
            }
        ) { fixture in
            let report = try await client(fixture, Self.universal).send(BridgeLoopbackTests.notifications(1...50))
            #expect(report.failure == nil && report.accepted == 50)
            #expect(topics(fixture) == ["com.example.legacy": 50], "the second route's key and topic")
            let refused = fixture.events.get().filter { if case .senderRefused = $0 { true } else { false } }
            #expect(refused.isEmpty, "\(refused)")
        }
    }

    @Test(arguments: [
        ("[]", "routes.json: not a JSON object"),
        ("{\"routes\": {}}", "routes.json: \"routes\" is not an array"),
        ("{\"routes\": []}", "routes.json: \"routes\" is empty"),
        ("{\"other\": []}", "routes.json: expected exactly one member, \"routes\", found \"other\""),
        ("{\"routes\": [{\"cert\": \"x\"}]}", "routes.json: route 1: no matcher"),
        (
            "{\"routes\": [{\"senderTopic\": \"a\", \"senderCA\": \"b\", \"cert\": \"x\"}]}",
            "routes.json: route 1: give one matcher, not senderTopic and senderCA"
        ),
        ("{\"routes\": [{\"senderTopic\": \"a\"}]}", "routes.json: route 1: no upstream credential"),
        (
            "{\"routes\": [{\"senderTopic\": \"a\", \"authKey\": \"k\", \"teamId\": \"DEF123GHIJ\"}]}",
            "routes.json: route 1: authKey needs keyId"
        ),
        (
            "{\"routes\": [{\"senderTopic\": \"a\", \"authKey\": \"k\", \"keyId\": \"short\", \"teamId\": \"DEF123GHIJ\"}]}",
            "routes.json: route 1: keyId 'short' is not 10 characters A-Z and 0-9"
        ),
        (
            "{\"routes\": [{\"senderTopic\": \"a\", \"authKey\": \"k\", \"cert\": \"c\"}]}",
            "routes.json: route 1: give authKey (token auth) or cert (certificate auth), not both"
        ),
        (
            "{\"routes\": [{\"senderFingerprint\": \"abc\", \"cert\": \"c\"}]}",
            "routes.json: route 1: senderFingerprint must be a SHA-256 fingerprint"
        ),
        (
            "{\"routes\": [{\"senderTopic\": \"a\", \"cert\": \"c\", \"colour\": \"red\"}]}",
            "routes.json: route 1: unknown field \"colour\""
        ),
        ("{\"routes\": [{\"senderTopic\": 3, \"cert\": \"c\"}]}", "routes.json: route 1: senderTopic must be a string"),
        ("{\"routes\": [{\"senderTopic\": \"a\", \"cert\": \"c\"}, 5]}", "routes.json: route 2 is not a JSON object"),
    ])
    func eachMistakeInARoutesFileIsOneErrorNamingTheRouteAndField(json: String, message: String) {
        #expect {
            try BridgeRoutes(json: Array(json.utf8), source: "routes.json", readFile: { _ in [] })
        } throws: { error in
            (error as? LegacyAPNsError)?.reason.hasPrefix(message) == true
        }
    }

    @Test func aCredentialThatCannotBeLoadedNamesTheRouteFieldAndFile() {
        let json = """
            {"routes": [{"senderTopic": "a", "authKey": "\(Fixtures.certs("AuthKey_ABC123DEFG.p8"))", "keyId": "ABC123DEFG", "teamId": "DEF123GHIJ"},
                        {"senderTopic": "b", "authKey": "\(Fixtures.certs("universal.pem"))", "keyId": "ABC123DEFG", "teamId": "DEF123GHIJ"}]}
            """
        #expect {
            try BridgeRoutes(json: Array(json.utf8), source: "routes.json", readFile: { Fixtures.bytes($0) })
        } throws: { error in
            (error as? LegacyAPNsError)?.reason.hasPrefix(
                "routes.json: route 2: authKey '\(Fixtures.certs("universal.pem"))': ") == true
        }
    }

    @Test func routesMatchByTopicFingerprintAndIssuingCAInOrder() throws {
        let wwdr = Certificate.certificates(pemRepresentation: Fixtures.bytes(Fixtures.certs("wwdr.pem")))
        let untrusted = Certificate.certificates(pemRepresentation: Fixtures.bytes(Fixtures.certs("untrusted-ca.pem")))
        let credentials = ProviderCredentials.token(ProviderPair.keyA, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
        let routes = BridgeRoutes(routes: [
            .init(
                match: .senderFingerprint(Self.development.certificate.sha256Fingerprint), credentials: credentials,
                poolKey: "a"),
            .init(match: .senderCA(untrusted), credentials: credentials, poolKey: "b"),
            .init(match: .senderCA(wwdr), credentials: credentials, poolKey: "c"),
            .init(match: .senderTopic("com.example.legacy"), credentials: credentials, poolKey: "d"),
        ])
        func index(_ identity: ClientIdentity) -> Int? {
            routes.route(
                for: identity.certificate, topic: identity.certificate.topic,
                fingerprint: identity.certificate.sha256Fingerprint)?.index
        }
        #expect(index(Self.development) == 0)
        #expect(index(Self.universal) == 2)
        let untrustedClient = try ClientIdentity(
            pkcs12: Fixtures.bytes(Fixtures.certs("untrusted.p12")), passphrase: "secret")
        #expect(index(untrustedClient) == 1)
        #expect(routes.route(for: nil, topic: "com.example.other", fingerprint: []) == nil)
    }
}

extension String {
    fileprivate var leftPadded: String { count == 1 ? "0" + self : self }
}
