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
        let database = try Self.cluster().database().uri
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

    /// What one bridge remembered is what another finds when it claims: verdicts, pending entries
    /// of a live owner; what nobody holds is claimed, once; pending entries of an owner silent
    /// for the owner timeout are taken over (orphaned).
    @Test func theResendMemoryOfOneBridgeIsFoundByAnother() throws {
        let database = try Self.cluster().database().uri
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
        let found = try #require(try b.claim(keys, lifetime: .seconds(600)))
        #expect(
            found == [
                Self.key(1): .settled(.accepted),
                Self.key(2): .settled(.rejected(.invalidToken, reason: "BadDeviceToken \"quoted\" \\ too")),
                Self.key(3): .pending, Self.key(4): .settled(.unregistered(seconds: 1_650_000_000)),
                Self.key(5): .claimed, Self.key(6): .settled(.accepted), Self.key(7): .claimed,
            ])
        // B's claims are B's: A waits for them, cannot release them, and finds their verdict.
        #expect(
            try a.claim([Self.key(5), Self.key(7)], lifetime: .seconds(600)) == [
                Self.key(5): .pending, Self.key(7): .pending,
            ])
        try a.commit([.claimReleased(Self.key(7))], expiring: nil)
        try b.commit([.claimSettled(Self.key(7), verdict: .accepted), .claimReleased(Self.key(5))], expiring: nil)
        #expect(
            try a.claim([Self.key(5), Self.key(7)], lifetime: .seconds(600)) == [
                Self.key(5): .claimed, Self.key(7): .settled(.accepted),
            ])
        // A row the memory wrote after the claim stays the memory's: the claim's verdict leaves it.
        #expect(try b.claim([Self.key(8)], lifetime: .seconds(600)) == [Self.key(8): .claimed])
        try b.commit(
            [.memory(.stored(Self.key(8), verdict: nil)), .claimSettled(Self.key(8), verdict: .accepted)], expiring: nil
        )
        #expect(try a.claim([Self.key(8)], lifetime: .seconds(600)) == [Self.key(8): .pending])
        // A falls silent: its pending entry is taken over by B, as a possible duplicate, once.
        let name = String(database.split(separator: "/").last!)
        try Self.cluster().psql(
            name, "UPDATE legacy_push.bridges SET seen = now() - interval '1 minute' WHERE name = '\(a.instance)'")
        #expect(try b.claim([Self.key(3)], lifetime: .seconds(600)) == [Self.key(3): .orphaned])
        try b.heartbeat()
        #expect(try a.claim([Self.key(3)], lifetime: .seconds(600)) == [Self.key(3): .pending])
        // B consumed 1 (a resend answered): gone for everyone, so the next copy is claimed anew;
        // entries past the lifetime are claimed anew too.
        try b.apply([.forgotten(Self.key(1))], expiring: nil)
        #expect(try a.claim([Self.key(1)], lifetime: .seconds(600)) == [Self.key(1): .claimed])
        #expect(try a.claim([Self.key(2)], lifetime: .zero) == [Self.key(2): .claimed])
        try a.apply([], expiring: .zero)
        #expect(try Self.cluster().psql(name, "SELECT count(*) FROM legacy_push.window") == "0\n")
    }

    /// A claim's verdict answers resends for the claims' lifetime only: past it, the next copy is
    /// claimed anew (a sender repeating a notification on purpose later is delivered again),
    /// while the memory's entries keep their own, longer lifetime.
    @Test func aClaimsVerdictLastsItsLifetime() throws {
        let database = try Self.cluster().database().uri
        let a = try PostgresStore(connection: database, claimLifetime: .zero)
        let b = try PostgresStore(connection: database, claimLifetime: .seconds(60))
        #expect(
            try a.claim([Self.key(1), Self.key(2)], lifetime: .seconds(600)) == [
                Self.key(1): .claimed, Self.key(2): .claimed,
            ])
        try a.commit(
            [.claimSettled(Self.key(1), verdict: .accepted), .memory(.stored(Self.key(2), verdict: .accepted))],
            expiring: nil)
        #expect(
            try a.claim([Self.key(1), Self.key(2)], lifetime: .seconds(600)) == [
                Self.key(1): .claimed, Self.key(2): .settled(.accepted),
            ])
        try a.commit([.claimSettled(Self.key(1), verdict: .accepted)], expiring: nil)
        #expect(try b.claim([Self.key(1)], lifetime: .seconds(600)) == [Self.key(1): .settled(.accepted)])
    }

    /// A store of schema version 1 (before claims) is migrated at start, its rows kept; the
    /// version then says 2.
    @Test func aVersionOneSchemaIsMigrated() throws {
        let (name, database) = try Self.cluster().database()
        let first = try PostgresStore(connection: database)
        try first.apply([.stored(Self.key(1), verdict: .accepted)], expiring: nil)
        first.close()
        try Self.cluster().psql(
            name, "ALTER TABLE legacy_push.window DROP COLUMN claim; UPDATE legacy_push.schema_version SET version = 1")
        let migrated = try PostgresStore(connection: database)
        #expect(try Self.cluster().psql(name, "SELECT version FROM legacy_push.schema_version") == "2\n")
        #expect(
            try migrated.claim([Self.key(1), Self.key(2)], lifetime: .seconds(600)) == [
                Self.key(1): .settled(.accepted), Self.key(2): .claimed,
            ])
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
        let database = try Self.cluster().database().uri
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
    /// The two halves' reports merged, checked against what the simulator delivered: nothing
    /// lost, nothing delivered twice that neither the sender nor the bridge named.
    static func checkLedger(
        count: Int, fixture: BridgeFixture, bad: Set<Int>, _ first: SendReport, _ second: SendReport
    )
        -> SendReport
    {
        var report = first
        report.merge(second)
        let ledger = BridgeLedger(
            count: count, accepted: fixture.upstream?.recorder.accepted ?? [], report: report,
            events: fixture.events.get(), undeliverable: bad, bad: [])
        #expect(ledger.lost.isEmpty, "lost: \(ledger.lost.prefix(10))")
        #expect(ledger.silent.isEmpty, "delivered twice, named by nobody: \(ledger.silent.prefix(10))")
        return report
    }

    /// Runs `body` with a bridge on `store` in front of a simulator that fails 1 % of `count`
    /// notifications (`bad`, drawn from `seed`), and a sender configuration for it that keeps
    /// trying through an outage.
    static func withBridge(
        store: String, count: Int, seed: UInt64, isolation: isolated (any Actor)? = #isolation,
        _ body: (BridgeFixture, Set<Int>, PushClient.Configuration) async throws -> Void
    ) async throws {
        var picker = SplitMix64(seed: seed)
        var bad = Set<Int>()
        while bad.count < count / 100 { bad.insert(1 + Int(picker.next() % UInt64(count))) }
        try await LegacyAPNsTests.withBridge(
            store: store,
            configureUpstream: { configuration in
                for index in bad {
                    configuration.faults.failingTokens[TestGateway.notification(index).token] = .badDeviceToken
                }
            }
        ) { fixture in
            var configuration = BridgeFixture.clientConfiguration(gateway: fixture.endpoints.gateway, failures: 100)
            configuration.delivery.maximumAttempts = 50
            try await body(fixture, bad, configuration)
        }
    }

    @Test func aDatabaseThatGoesAwayMidRunCostsStatusTenNotDeliveries() async throws {
        let cluster = try PostgresCluster.dedicated()
        defer { cluster.stop() }
        let store = try cluster.database().uri
        let count = 6_000
        try await Self.withBridge(store: store, count: count, seed: 2806) { fixture, bad, configuration in
            let client = try PushClient(configuration: configuration)
            let upstream = try #require(fixture.upstream)
            // The first half with the database up; the second sent while it is down, and the
            // server started again once the bridge has said so.
            let first = await client.send((1...count / 2).map { TestGateway.notification($0) })
            try cluster.stopServer()
            let acceptedBefore = upstream.recorder.accepted.count
            let sending = Task { await client.send((count / 2 + 1...count).map { TestGateway.notification($0) }) }
            let outage = await eventually(within: .seconds(30)) {
                fixture.events.get().contains { if case .storeFailed = $0 { true } else { false } }
            }
            #expect(outage, "no store failure was logged while the database was down")
            // Nothing went upstream unknown meanwhile (what arrives between the stop and the first
            // failed lookup may: it was looked up while the server still answered).
            let acceptedDuringOutage = upstream.recorder.accepted.count
            try await Task.sleep(for: .milliseconds(500))
            #expect(upstream.recorder.accepted.count == acceptedDuringOutage, "forwarded without a lookup")
            try cluster.startServer()
            let second = await sending.value
            // The bridge came back to the database by itself: the rest went through.
            #expect(upstream.recorder.accepted.count > acceptedBefore)
            let report = Self.checkLedger(count: count, fixture: fixture, bad: bad, first, second)
            print(
                "database outage: \(report.accepted) accepted, \(report.rejected.count) rejected, "
                    + "\(report.unconfirmed.count) unconfirmed, \(report.resent) resent, "
                    + "\(fixture.events.get().filter { if case .storeFailed = $0 { true } else { false } }.count) "
                    + "store failures logged")
        }
    }

    /// The database's disk fills up in the middle of a send: the store's tables live in a
    /// tablespace on an 8 MiB tmpfs (the server's WAL stays on the big disk, so PostgreSQL
    /// answers with errors instead of stopping), and a file fills what is left of it. The
    /// bridge's writes fail (`could not extend file ... No space left on device`); it logs
    /// that, nothing is lost or delivered twice without a name, and once the file is removed
    /// the rest goes through without a restart. Needs root (to mount the tmpfs), as the other
    /// fleet tests need it to run PostgreSQL as `postgres`.
    @Test(.enabled(if: getuid() == 0, "mounting the small disk needs root"))
    func aFullDatabaseDiskIsLoggedAndLosesNothing() async throws {
        let cluster = try PostgresCluster.dedicated()
        defer { cluster.stop() }
        let disk = cluster.directory + "-small"
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        let mounted = try CLIRunner.runProcess(
            URL(fileURLWithPath: "/bin/mount"), ["-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", disk])
        try #require(mounted.status == 0, "mount -t tmpfs \(disk): \(mounted.stderr)")
        defer {
            _ = try? CLIRunner.runProcess(URL(fileURLWithPath: "/bin/umount"), ["-l", disk])
            try? FileManager.default.removeItem(atPath: disk)
        }
        let owner = try #require(getpwnam("postgres"))
        chown(disk, owner.pointee.pw_uid, owner.pointee.pw_gid)
        let (database, store) = try cluster.database()
        try cluster.psql(database, "CREATE TABLESPACE small LOCATION '\(disk)'")
        try cluster.psql(database, "ALTER DATABASE \(database) SET default_tablespace = small")
        let filler = disk + "/filler"
        let count = 6_000
        try await Self.withBridge(store: store, count: count, seed: 2808) { fixture, bad, configuration in
            let tables = try cluster.psql(
                database,
                "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    + "JOIN pg_tablespace t ON t.oid = c.reltablespace "
                    + "WHERE n.nspname = 'legacy_push' AND t.spcname = 'small'")
            #expect(
                (Int(tables.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) > 0, "no table on the small disk")
            let client = try PushClient(configuration: configuration)
            let upstream = try #require(fixture.upstream)
            let first = await client.send((1...count / 2).map { TestGateway.notification($0) })
            // What is left of the disk, taken by a file (dd stops at ENOSPC).
            _ = try CLIRunner.runProcess(
                URL(fileURLWithPath: "/bin/dd"), ["if=/dev/zero", "of=\(filler)", "bs=64k", "status=none"])
            let acceptedBefore = upstream.recorder.accepted.count
            let sending = Task { await client.send((count / 2 + 1...count).map { TestGateway.notification($0) }) }
            let full = await eventually(within: .seconds(30)) {
                fixture.events.get().contains {
                    guard case .storeFailed(let reason) = $0 else { return false }
                    return reason.contains("No space left") || reason.contains("could not extend")
                }
            }
            let logged = fixture.events.get().compactMap {
                if case .storeFailed(let reason) = $0 { reason } else { nil }
            }
            #expect(full, "no line said the disk is full: \(logged.prefix(3))")
            let rows = {
                Int(
                    ((try? cluster.psql(database, "SELECT count(*) FROM legacy_push.window")) ?? "")
                        .trimmingCharacters(in: .whitespacesAndNewlines))
            }
            let rowsWhenFull = try #require(rows(), "the resend window cannot be read")
            try FileManager.default.removeItem(atPath: filler)
            let second = await sending.value
            // The bridge wrote to the database again by itself: the rest went through, and its
            // memory reached the table again.
            #expect(upstream.recorder.accepted.count > acceptedBefore)
            #expect(await eventually(within: .seconds(30)) { (rows() ?? 0) > rowsWhenFull })
            let report = Self.checkLedger(count: count, fixture: fixture, bad: bad, first, second)
            print(
                "full database disk: \(report.accepted) accepted, \(report.rejected.count) rejected, "
                    + "\(report.unconfirmed.count) unconfirmed, \(report.resent) resent, \(logged.count) store "
                    + "failures logged (first: \(logged.first ?? "none"))")
        }
    }

    /// A database that answers slowly: another client holds the resend window's table locked in
    /// the middle of a send, for as long as it takes the bridge to say so. The bridge waits at most 5 s for a lookup
    /// (`BridgeStore.lookupWait`: status 10 for what it could not look up) and for a commit an
    /// answer relies on (`windowWait`: answered anyway), logs that the store is slow, and carries
    /// on by itself once the lock is gone: nothing lost, nothing delivered twice without a name.
    @Test func aSlowDatabaseIsWaitedForBoundedLoggedAndCostsNothing() async throws {
        let cluster = try PostgresCluster.shared.get()
        let store = try cluster.database().uri
        let database = String(store.split(separator: "/").last ?? "")
        let count = 3_000
        try await Self.withBridge(store: store, count: count, seed: 2807) { fixture, bad, configuration in
            var configuration = configuration
            configuration.verdictTimeout = .seconds(20)
            let client = try PushClient(configuration: configuration)
            let first = await client.send((1...count / 2).map { TestGateway.notification($0) })
            // Another client holds the table until the bridge has said it is slow (or 30 s
            // passed), then its backend is ended, which frees the lock. On a thread of its own:
            // psql blocks all that time, and a cooperative thread held that long starves the
            // sender on a 2-core machine.
            let held = Locked<Bool>(false)
            Thread {
                _ = try? cluster.psql(
                    database,
                    "BEGIN; LOCK TABLE legacy_push.window IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(60); COMMIT;")
                held.set(true)
            }.start()
            let lockedBy =
                "FROM pg_locks WHERE relation = 'legacy_push.window'::regclass "
                + "AND mode = 'AccessExclusiveLock' AND granted"
            let locked = await eventually(within: .seconds(20)) {
                let granted = try? cluster.psql(database, "SELECT count(*) " + lockedBy)
                return granted?.trimmingCharacters(in: .whitespacesAndNewlines) == "1"
            }
            #expect(locked, "the lock was not taken")
            let sending = Task { await client.send((count / 2 + 1...count).map { TestGateway.notification($0) }) }
            let slow = await eventually(within: .seconds(30)) {
                fixture.events.get().contains {
                    guard case .storeFailed(let reason) = $0 else { return false }
                    return reason.contains("did not answer within") || reason.contains("has not committed")
                }
            }
            #expect(slow, "no line said the store was slow")
            try cluster.psql(database, "SELECT pg_terminate_backend(pid) " + lockedBy)
            #expect(await eventually(within: .seconds(30)) { held.get() }, "the lock was never released")
            let second = await sending.value
            let report = Self.checkLedger(count: count, fixture: fixture, bad: bad, first, second)
            // The bridge used the database again by itself: the second half went through.
            #expect(second.accepted > 0 && second.unconfirmed.count < count / 2)
            let failures = fixture.events.get().filter { if case .storeFailed = $0 { true } else { false } }
            print(
                "slow database: \(report.accepted) accepted, \(report.rejected.count) rejected, "
                    + "\(report.unconfirmed.count) unconfirmed, \(report.resent) resent, \(failures.count) store "
                    + "failures logged")
        }
    }
}
