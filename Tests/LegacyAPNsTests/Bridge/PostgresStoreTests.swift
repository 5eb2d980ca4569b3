import APNsCore
import Foundation
import LegacyAPNs
import LegacyBridge
import TestSupport
import Testing

/// The fleet's shared store (``PostgresStore``) against a real PostgreSQL server the test process
/// starts (``PostgresCluster``): two stores on one database stand for two bridges.
@Suite(.serialized) struct PostgresStoreTests {
    static func cluster() throws -> PostgresCluster { try PostgresCluster.shared.get() }

    static func token(_ index: UInt8) -> DeviceToken {
        try! DeviceToken(bytes: [UInt8](repeating: 0x22, count: 31) + [index])
    }

    static func key(_ identifier: UInt32) -> BridgeResendKey {
        BridgeResendKey(identifier: identifier, digest: (UInt128(identifier) << 90) | 0xABCD_EF01)
    }

    /// Any bridge's 410s are served by any other; each tuple to one reader at a time; what a
    /// reader could not write goes to the next; the latest time wins.
    @Test func feedbackTuplesAreSharedAndEachGoesToOneReader() throws {
        let database = try Self.cluster().database()
        let a = try PostgresStore(connection: database)
        let b = try PostgresStore(connection: database)
        #expect(a.instance != b.instance)
        try a.add([
            ("com.example.a", FeedbackRecord(timestamp: 100, token: Self.token(1))),
            ("com.example.a", FeedbackRecord(timestamp: 200, token: Self.token(2))),
            ("com.example.b", FeedbackRecord(timestamp: 300, token: Self.token(1))),
        ])
        try b.add([("com.example.a", FeedbackRecord(timestamp: 150, token: Self.token(1)))])
        #expect(try a.count() == 3)

        // B's reader takes one; A's reader gets only the other, not the one B holds.
        let first = try b.tuples(topic: "com.example.a", limit: 1)
        #expect(first == [FeedbackRecord(timestamp: 150, token: Self.token(1))])
        let second = try a.tuples(topic: "com.example.a", limit: 10)
        #expect(second == [FeedbackRecord(timestamp: 200, token: Self.token(2))])
        #expect(try a.tuples(topic: "com.example.a", limit: 10).isEmpty)
        // B wrote its tuple: forgotten. A's reader broke: given back, the next reader gets it.
        try b.forget(first, topic: "com.example.a")
        try a.giveBack(second, topic: "com.example.a")
        #expect(try b.tuples(topic: "com.example.a", limit: 10) == second)
        // A later 410 for a claimed tuple is news: served again despite the claim, and a
        // deletion of the older time leaves it.
        try a.add([("com.example.a", FeedbackRecord(timestamp: 999, token: Self.token(2)))])
        try b.forget(second, topic: "com.example.a")
        #expect(
            try a.tuples(topic: "com.example.a", limit: 10) == [FeedbackRecord(timestamp: 999, token: Self.token(2))])
        #expect(try a.count() == 2)
        #expect(
            try Self.cluster().psql(
                String(database.split(separator: "/").last!), "SELECT count(*) FROM legacy_push.feedback") == "2\n")
    }

    /// What one bridge remembered is what another finds: verdicts, pending entries of a live
    /// owner, and orphaned ones once the owner has been silent for the owner timeout.
    @Test func theResendMemoryOfOneBridgeIsFoundByAnother() throws {
        let database = try Self.cluster().database()
        let a = try PostgresStore(connection: database)
        let b = try PostgresStore(connection: database)
        try a.apply(
            [
                .stored(Self.key(1), verdict: .accepted),
                .stored(Self.key(2), verdict: .rejected(.invalidToken, reason: "BadDeviceToken \"quoted\" \\ too")),
                .stored(Self.key(3), verdict: nil),
                .stored(Self.key(4), verdict: .unregistered(seconds: 1_650_000_000)),
                .stored(Self.key(5), verdict: .accepted), .forgotten(Self.key(5)),
                .stored(Self.key(6), verdict: nil), .stored(Self.key(6), verdict: .accepted),
            ], expiring: nil)
        let keys = (1...7).map { Self.key(UInt32($0)) }
        let found = try #require(try b.lookUp(keys, lifetime: .seconds(600)))
        #expect(
            found == [
                Self.key(1): .settled(.accepted),
                Self.key(2): .settled(.rejected(.invalidToken, reason: "BadDeviceToken \"quoted\" \\ too")),
                Self.key(3): .pending, Self.key(4): .settled(.unregistered(seconds: 1_650_000_000)),
                Self.key(6): .settled(.accepted),
            ])
        // A falls silent: its pending entry is orphaned for B.
        let name = String(database.split(separator: "/").last!)
        try Self.cluster().psql(
            name, "UPDATE legacy_push.bridges SET seen = now() - interval '1 minute' WHERE name = '\(a.instance)'")
        #expect(try b.lookUp([Self.key(3)], lifetime: .seconds(600)) == [Self.key(3): .orphaned])
        // B consumed 1 (a resend answered): gone for everyone; entries past the lifetime are not found.
        try b.apply([.forgotten(Self.key(1))], expiring: nil)
        #expect(try a.lookUp([Self.key(1)], lifetime: .seconds(600)) == [:])
        #expect(try a.lookUp(keys, lifetime: .zero) == [:])
        try a.apply([], expiring: .zero)
        #expect(try Self.cluster().psql(name, "SELECT count(*) FROM legacy_push.window") == "0\n")
    }

    /// A database that cannot be reached is one error naming it (without its password); a schema
    /// newer than this release is refused.
    @Test func anUnreachableDatabaseAndANewerSchemaAreOneClearError() throws {
        let port = try freeLoopbackPort()
        #expect {
            _ = try PostgresStore(connection: "postgresql://postgres:hunter2@127.0.0.1:\(port)/none")
        } throws: { error in
            let error = error as? LegacyAPNsError
            return error?.code == .connectionFailed
                && error?.reason.contains("postgresql://postgres:***@127.0.0.1:\(port)/none") == true
                && error?.reason.contains("hunter2") == false
        }
        let database = try Self.cluster().database()
        _ = try PostgresStore(connection: database)
        try Self.cluster().psql(
            String(database.split(separator: "/").last!), "UPDATE legacy_push.schema_version SET version = 42")
        #expect {
            _ = try PostgresStore(connection: database)
        } throws: { error in
            let reason = (error as? LegacyAPNsError)?.reason ?? ""
            return reason.contains("schema version 42") && reason.contains("knows up to \(PostgresStore.schemaVersion)")
        }
    }

    @Test(arguments: [
        ("postgresql://u@h/db", true), ("postgres://h", true), ("host=127.0.0.1 port=5432 dbname=x", true),
        ("dbname=x", true), ("bridge.sqlite", false), ("/var/lib/legacy-push/bridge.sqlite", false),
        ("./a=b/store.sqlite", false),
    ])
    func aStoreIsPostgreSQLOnlyWhenItSaysSo(_ store: String, _ isPostgres: Bool) {
        #expect(PostgresStore.isConnectionString(store) == isPostgres)
    }
}

/// A bridge whose PostgreSQL server goes away in the middle of a send and comes back: nothing is
/// forwarded that could not be looked up (those frames get status 10 and are sent again), the
/// outage is logged, nothing is lost or silently duplicated, and once the server answers again
/// the bridge uses it again without a restart.
@Suite(.serialized) struct PostgresOutageTests {
    @Test func aDatabaseThatGoesAwayMidRunCostsStatusTenNotDeliveries() async throws {
        let cluster = try PostgresCluster.dedicated()
        defer { cluster.stop() }
        let store = try cluster.database()
        let count = 6_000
        var picker = SplitMix64(seed: 2806)
        var bad = Set<Int>()
        while bad.count < count / 100 { bad.insert(1 + Int(picker.next() % UInt64(count))) }
        try await withBridge(
            store: store,
            configureUpstream: { configuration in
                for index in bad {
                    configuration.faults.failingTokens[TestGateway.notification(index).token] = .badDeviceToken
                }
            }
        ) { fixture in
            var configuration = BridgeFixture.clientConfiguration(gateway: fixture.endpoints.gateway, failures: 100)
            configuration.delivery.maximumAttempts = 50
            let client = try PushClient(configuration: configuration)
            let sending = Task { await client.send((1...count).map { TestGateway.notification($0) }) }
            let upstream = try #require(fixture.upstream)
            _ = await eventually(within: .seconds(60)) { upstream.recorder.accepted.count >= count / 3 }
            try cluster.stopServer()
            let outage = await eventually(within: .seconds(20)) {
                fixture.events.get().contains { if case .storeFailed = $0 { true } else { false } }
            }
            #expect(outage, "no store failure was logged while the database was down")
            let acceptedDuringOutage = upstream.recorder.accepted.count
            try await Task.sleep(for: .seconds(1))
            try cluster.startServer()
            let report = await sending.value
            // The bridge came back to the database by itself: the rest went through.
            #expect(upstream.recorder.accepted.count > acceptedDuringOutage)

            var deliveries: [Int: Int] = [:]
            for accepted in upstream.recorder.accepted {
                deliveries[BridgeFixture.index(of: accepted.request.deviceToken), default: 0] += 1
            }
            let reported =
                Set(report.unconfirmed.map { BridgeFixture.index(of: $0.notification.token) })
                .union(report.rejected.map { Int($0.identifier ?? 0) })
            let named = Set(report.possiblyDuplicated.map { BridgeFixture.index(of: $0.token) })
                .union(
                    fixture.events.get().compactMap {
                        if case .possibleDuplicate(_, _, let token) = $0 { BridgeFixture.index(of: token) } else { nil }
                    })
            for index in 1...count {
                let times = deliveries[index] ?? 0
                if bad.contains(index) {
                    #expect(times == 0, "bad #\(index) delivered")
                } else {
                    #expect(times > 0 || reported.contains(index), "#\(index) lost")
                    #expect(times <= 1 || named.contains(index), "#\(index) delivered \(times) times, named by nobody")
                }
            }
            print(
                "database outage: \(report.accepted) accepted, \(report.rejected.count) rejected, "
                    + "\(report.unconfirmed.count) unconfirmed, \(report.resent) resent, "
                    + "\(fixture.events.get().filter { if case .storeFailed = $0 { true } else { false } }.count) "
                    + "store failures logged")
        }
    }
}
