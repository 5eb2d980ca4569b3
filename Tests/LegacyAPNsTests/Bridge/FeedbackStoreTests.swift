import APNsCore
import Foundation
import LegacyBridge
import TestSupport
import Testing

/// The bridge's durable feedback store (SQLite) on a real file: what it keeps, per topic, across a
/// reopen, and the one clear error for each way the file can be unusable.
@Suite struct FeedbackStoreTests {
    static func token(_ index: UInt8) -> DeviceToken {
        try! DeviceToken(bytes: [UInt8](repeating: 0x11, count: 31) + [index])
    }

    @Test func tuplesArePerTopicKeptAcrossAReopenAndForgottenOnlyWhenAsked() throws {
        let scratch = try ScratchDirectory()
        let path = scratch.file("store.sqlite")
        do {
            let store = try FeedbackStore(path: path)
            try store.add([
                ("com.example.a", FeedbackRecord(timestamp: 100, token: Self.token(1))),
                ("com.example.a", FeedbackRecord(timestamp: 200, token: Self.token(2))),
                ("com.example.b", FeedbackRecord(timestamp: 300, token: Self.token(1))),
                // The same (topic, token) again: one tuple, the latest time.
                ("com.example.a", FeedbackRecord(timestamp: 150, token: Self.token(1))),
            ])
            #expect(try store.count() == 3)
        }
        let store = try FeedbackStore(path: path)
        let a = try store.tuples(topic: "com.example.a", limit: 10)
        #expect(
            Set(a) == [
                FeedbackRecord(timestamp: 150, token: Self.token(1)),
                FeedbackRecord(timestamp: 200, token: Self.token(2)),
            ])
        #expect(
            try store.tuples(topic: "com.example.b", limit: 10) == [
                FeedbackRecord(timestamp: 300, token: Self.token(1))
            ])
        #expect(try store.tuples(topic: "com.example.c", limit: 10).isEmpty)
        #expect(try store.tuples(topic: "com.example.a", limit: 1).count == 1)
        try store.forget(a, topic: "com.example.a")
        #expect(try store.tuples(topic: "com.example.a", limit: 10).isEmpty)
        #expect(try store.count() == 1)
    }

    @Test func theFileIsPrivate() throws {
        let scratch = try ScratchDirectory()
        let path = scratch.file("store.sqlite")
        _ = try FeedbackStore(path: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
    }

    @Test func aSecondUserOfTheSameStoreIsRefused() throws {
        let scratch = try ScratchDirectory()
        let path = scratch.file("store.sqlite")
        let first = try FeedbackStore(path: path)
        let error = #expect(throws: LegacyAPNsError.self) { try FeedbackStore(path: path) }
        #expect(error?.reason.contains(path) == true)
        #expect(error?.reason.contains("in use by another process") == true, "\(error?.reason ?? "")")
        _ = first
    }

    @Test(arguments: ["not a database", "corrupt"])
    func anUnusableFileIsOneClearError(kind: String) throws {
        let scratch = try ScratchDirectory()
        let path = scratch.file("store.sqlite")
        if kind == "not a database" {
            try scratch.write(Array(String(repeating: "hello, not sqlite\n", count: 300).utf8), named: "store.sqlite")
        } else {
            do {
                let store = try FeedbackStore(path: path)
                try store.add(
                    (0..<200).map {
                        ("com.example.a", FeedbackRecord(timestamp: UInt32($0), token: Self.token(UInt8($0))))
                    })
            }
            // Overwrite the middle of the file (past the header): pages no longer make sense.
            var bytes = try #require(scratch.read("store.sqlite"))
            #expect(bytes.count > 4096)
            for index in 4096..<bytes.count { bytes[index] = 0xA5 }
            try scratch.write(bytes, named: "store.sqlite")
            try? FileManager.default.removeItem(atPath: path + "-wal")
        }
        let error = #expect(throws: LegacyAPNsError.self) { try FeedbackStore(path: path) }
        #expect(error?.reason.contains(path) == true)
        let words = kind == "not a database" ? ["not a bridge store"] : ["damaged"]
        #expect(words.contains { error?.reason.contains($0) == true }, "\(error?.reason ?? "")")
    }

    /// A full store (capped as a full disk would cap it) refuses a whole batch, names the cause,
    /// and keeps what it had.
    @Test func aFullStoreRefusesTheBatchAndKeepsWhatItHad() throws {
        let scratch = try ScratchDirectory()
        let store = try FeedbackStore(path: scratch.file("store.sqlite"), maximumPages: 4)
        try store.add([("com.example.a", FeedbackRecord(timestamp: 1, token: Self.token(0)))])
        let many = (0..<5000).map { index in
            (
                "com.example.a",
                FeedbackRecord(
                    timestamp: 2,
                    token: try! DeviceToken(
                        bytes: Array(withUnsafeBytes(of: index) { Array($0) }) + [UInt8](repeating: 7, count: 24)))
            )
        }
        let error = #expect(throws: LegacyAPNsError.self) { try store.add(many) }
        #expect(error?.reason.contains("the disk is full") == true, "\(error?.reason ?? "")")
        #expect(try store.count() == 1)
    }

    @Test func aDirectoryThatCannotBeWrittenIsOneClearError() throws {
        let error = #expect(throws: LegacyAPNsError.self) {
            try FeedbackStore(path: "/nonexistent-directory/store.sqlite")
        }
        #expect(error?.reason.contains("/nonexistent-directory/store.sqlite") == true)
    }

    static func key(_ identifier: UInt32) -> BridgeResendKey {
        BridgeResendKey(identifier: identifier, digest: (UInt128(identifier) << 100) | 0xFEED_F00D)
    }

    /// The resend memory's changes, committed in order, come back after a reopen as the memory
    /// a restarted bridge starts from: verdicts as they were, pending ones orphaned, forgotten
    /// ones gone.
    @Test func theResendWindowIsKeptAcrossAReopen() throws {
        let scratch = try ScratchDirectory()
        let path = scratch.file("store.sqlite")
        do {
            let store = try FeedbackStore(path: path)
            try store.apply([
                .stored(Self.key(1), verdict: .accepted),
                .stored(Self.key(2), verdict: .rejected(.invalidToken, reason: "BadDeviceToken")),
                .stored(Self.key(3), verdict: nil),
                .stored(Self.key(4), verdict: .unregistered(seconds: 1_650_000_000)),
                .stored(Self.key(5), verdict: .accepted),
                .forgotten(Self.key(5)),
                // Pending, then settled: the latest change wins.
                .stored(Self.key(6), verdict: nil),
                .stored(Self.key(6), verdict: .accepted),
            ])
        }
        let store = try FeedbackStore(path: path)
        let kept = try store.resendWindow(lifetime: .seconds(600), capacity: 100)
        var byIdentifier: [UInt32: BridgeVerdict?] = [:]
        for record in kept {
            #expect(record.key == Self.key(record.key.identifier))
            byIdentifier[record.key.identifier] = record.verdict
        }
        #expect(
            byIdentifier == [
                1: .accepted, 2: .rejected(.invalidToken, reason: "BadDeviceToken"), 3: nil,
                4: .unregistered(seconds: 1_650_000_000), 6: .accepted,
            ])
        var memory = BridgeResendMemory()
        memory.restore(kept, now: .seconds(1000))
        #expect(memory.recall(Self.key(1), waiter: 1, now: .seconds(1000)) == .settled(.accepted))
        #expect(memory.recall(Self.key(3), waiter: 1, now: .seconds(1000)) == .orphaned)
        #expect(memory.recall(Self.key(3), waiter: 1, now: .seconds(1000)) == .unknown)
        #expect(memory.recall(Self.key(5), waiter: 1, now: .seconds(1000)) == .unknown)
        // Nothing is older than its lifetime here; with a lifetime of 0 nothing is kept.
        #expect(try store.resendWindow(lifetime: .zero, capacity: 100).isEmpty)
        #expect(try store.resendWindow(lifetime: .seconds(600), capacity: 2).count == 2)
        // Expiring with a lifetime of 0 deletes everything stored up to now.
        try store.apply([], expiring: .zero)
        #expect(try store.resendWindow(lifetime: .seconds(600), capacity: 100).isEmpty)
    }

    /// A store written by a newer release (a schema this one does not know) is refused at open,
    /// naming both versions; an older one (feedback only, schema 0) is migrated and keeps its tuples.
    @Test func aNewerSchemaIsRefusedAndAnOlderOneMigrated() throws {
        let scratch = try ScratchDirectory()
        let newer = scratch.file("newer.sqlite")
        _ = try FeedbackStore(path: newer)
        try Self.sqlite(newer, "PRAGMA user_version = 99")
        #expect {
            _ = try FeedbackStore(path: newer)
        } throws: { error in
            let reason = (error as? LegacyAPNsError)?.reason ?? ""
            return reason.contains("schema version 99") && reason.contains("knows up to \(FeedbackStore.schemaVersion)")
                && reason.contains(newer)
        }

        let older = scratch.file("older.sqlite")
        try Self.sqlite(
            older,
            "CREATE TABLE feedback (topic TEXT NOT NULL, token BLOB NOT NULL, seconds INTEGER NOT NULL, "
                + "PRIMARY KEY (topic, token)) WITHOUT ROWID; "
                + "INSERT INTO feedback VALUES ('com.example.a', x'\(Self.token(7).hexString)', 123)")
        let store = try FeedbackStore(path: older)
        #expect(
            try store.tuples(topic: "com.example.a", limit: 10) == [
                FeedbackRecord(timestamp: 123, token: Self.token(7))
            ])
        try store.apply([.stored(Self.key(1), verdict: .accepted)])
        #expect(try store.resendWindow(lifetime: .seconds(600), capacity: 10).count == 1)
    }

    /// Runs SQL on a store file with Python's sqlite3 (another SQLite, as a user's tool would be).
    static func sqlite(_ path: String, _ sql: String) throws {
        let result = try PythonTools.run(
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()",
            arguments: [path, sql])
        #expect(result.status == 0, "\(result.stderr)")
    }
}
