import APNsCore
internal import APNsRuntime
internal import CSQLite

/// The tokens HTTP/2 reported unregistered (410), kept in an SQLite file until the bridge's
/// feedback service has handed them to a sender of their topic: Apple's feedback service, made
/// durable. One tuple per (topic, token), the latest time kept.
///
/// Durable means: ``add(_:)`` returns only after SQLite has committed the tuples with
/// `synchronous=FULL` (the WAL is on disk), and ``forget(_:topic:)`` is called only after the
/// tuples were written to a sender completely. The file is opened in exclusive locking mode, so a
/// second bridge on the same store is refused at start instead of sharing it.
///
/// The same file keeps the bridge's resend memory (``commit(_:expiring:)``, ``resendWindow(lifetime:capacity:)``),
/// so that a bridge restarted on it after a crash still recognises what its senders resend. Its
/// commits are not synced to disk (`synchronous=NORMAL`): they survive the bridge's process
/// dying, not the machine losing power.
///
/// The schema is versioned (`PRAGMA user_version`, ``schemaVersion``): an older file is migrated
/// at open, a newer one (written by a later release) is refused.
///
/// Not `Sendable`: one thread uses it (the bridge's store thread).
public final class FeedbackStore: BridgeStorage {
    /// The file.
    public let path: String
    /// The file (``BridgeStorage``).
    public var location: String { path }
    private var database: OpaquePointer?
    private var insert: OpaquePointer?
    private var select: OpaquePointer?
    private var delete: OpaquePointer?
    private var countAll: OpaquePointer?
    private var windowUpsert: OpaquePointer?
    private var windowDelete: OpaquePointer?
    private var windowExpire: OpaquePointer?
    private var windowSelect: OpaquePointer?
    /// Whether commits are synced now (`synchronous=FULL`: feedback tuples) or not (`NORMAL`:
    /// the window).
    private var synced = true

    /// The schema this release writes: 1 is the feedback table, 2 adds the resend window.
    public static let schemaVersion = 2
    /// Tests: while this answers true, ``forget(_:topic:)`` fails as it does on a full disk
    /// (`max_page_count` cannot make a deletion fail: a deletion does not grow the file).
    package var refusesDeletes: (@Sendable () -> Bool)?

    /// Opens (creating if need be) the store at `path` and proves it usable: not another kind of
    /// file, not corrupt, not held by another process, writable (a probe write is committed).
    ///
    /// - Throws: ``LegacyAPNsError`` (`.fileError`) naming the file and the problem: locked,
    ///   corrupt, not a database, read-only, the disk full.
    public convenience init(path: String) throws {
        try self.init(path: path, maximumPages: nil)
    }

    /// As ``init(path:)``; `maximumPages` caps the file (SQLite's `max_page_count`, 4 KiB pages),
    /// so tests can fill the store as a full disk would, without one.
    package init(path: String, maximumPages: Int?) throws {
        self.path = path
        // Created private (0600) before SQLite sees it: it holds device tokens. SQLite gives its
        // WAL the same mode.
        FileSystem.createEmpty(path, permissions: 0o600)
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let opened = sqlite3_open_v2(path, &handle, flags, nil)
        database = handle
        guard opened == SQLITE_OK else {
            let message = problem(opened)
            close()
            throw LegacyAPNsError(.fileError, "cannot open the feedback store \(path): \(message)")
        }
        do {
            sqlite3_busy_timeout(database, 200)
            try execute("PRAGMA locking_mode=EXCLUSIVE")
            try execute("PRAGMA journal_mode=WAL")
            try execute("PRAGMA synchronous=FULL")
            if let maximumPages { try execute("PRAGMA max_page_count=\(maximumPages)") }
            // Takes the exclusive lock now (held until close), so a second bridge fails here.
            try execute("BEGIN EXCLUSIVE")
            try execute(
                """
                CREATE TABLE IF NOT EXISTS feedback (
                    topic TEXT NOT NULL, token BLOB NOT NULL, seconds INTEGER NOT NULL,
                    PRIMARY KEY (topic, token)) WITHOUT ROWID
                """)
            let version = try scalarInteger("PRAGMA user_version")
            guard version <= Self.schemaVersion else {
                throw StoreProblem(
                    message: "it was written by a newer legacy-push (schema version \(version); this one knows up to "
                        + "\(Self.schemaVersion))")
            }
            try execute(
                """
                CREATE TABLE IF NOT EXISTS resend_window (
                    identifier INTEGER NOT NULL, digest BLOB NOT NULL, kind INTEGER NOT NULL,
                    status INTEGER NOT NULL, seconds INTEGER NOT NULL, reason TEXT NOT NULL,
                    stored INTEGER NOT NULL, PRIMARY KEY (identifier, digest)) WITHOUT ROWID
                """)
            try execute("PRAGMA user_version = \(Self.schemaVersion)")
            try execute("CREATE TABLE IF NOT EXISTS probe (written INTEGER)")
            try execute("INSERT INTO probe VALUES (1)")
            try execute("DELETE FROM probe")
            try execute("COMMIT")
            let check = try scalarText("PRAGMA quick_check")
            guard check == "ok" else { throw StoreProblem(message: "the file is damaged (\(check))") }
            insert = try prepare(
                """
                INSERT INTO feedback (topic, token, seconds) VALUES (?1, ?2, ?3)
                ON CONFLICT (topic, token) DO UPDATE SET seconds = max(seconds, excluded.seconds)
                """)
            select = try prepare("SELECT token, seconds FROM feedback WHERE topic = ?1 ORDER BY seconds LIMIT ?2")
            delete = try prepare("DELETE FROM feedback WHERE topic = ?1 AND token = ?2 AND seconds <= ?3")
            countAll = try prepare("SELECT count(*) FROM feedback")
            windowUpsert = try prepare(
                """
                INSERT INTO resend_window (identifier, digest, kind, status, seconds, reason, stored)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                ON CONFLICT (identifier, digest) DO UPDATE SET kind = excluded.kind, status = excluded.status,
                    seconds = excluded.seconds, reason = excluded.reason, stored = excluded.stored
                """)
            windowDelete = try prepare("DELETE FROM resend_window WHERE identifier = ?1 AND digest = ?2")
            windowExpire = try prepare("DELETE FROM resend_window WHERE stored <= ?1")
            windowSelect = try prepare(
                """
                SELECT identifier, digest, kind, status, seconds, reason, stored FROM resend_window
                WHERE stored > ?1 ORDER BY stored DESC LIMIT ?2
                """)
        } catch let problem as StoreProblem {
            close()
            throw LegacyAPNsError(.fileError, "the feedback store \(path) cannot be used: \(problem.message)")
        }
    }

    deinit { close() }

    /// Stores tuples in one transaction; returns once they are on disk.
    ///
    /// - Throws: ``LegacyAPNsError`` (`.fileError`) when they could not be stored (the disk is
    ///   full, the file went away): none of them is stored then.
    public func add(_ tuples: [(topic: String, record: FeedbackRecord)]) throws {
        try checkOpen()
        guard !tuples.isEmpty else { return }
        do {
            if !synced {
                try execute("PRAGMA synchronous=FULL")
                synced = true
            }
            try transaction {
                for (topic, record) in tuples {
                    try bind(insert, topic: topic, token: record.token)
                    sqlite3_bind_int64(insert, 3, Int64(record.timestamp))
                    try step(insert)
                }
            }
        } catch let problem as StoreProblem {
            throw LegacyAPNsError(
                .fileError, "cannot store \(tuples.count) feedback tuple(s) in \(path): \(problem.message)")
        }
    }

    /// Up to `limit` tuples of `topic`, oldest first.
    public func tuples(topic: String, limit: Int) throws -> [FeedbackRecord] {
        try checkOpen()
        do {
            sqlite3_reset(select)
            sqlite3_clear_bindings(select)
            try check(sqlite3_bind_text(select, 1, topic, -1, CSQLite_transient()))
            try check(sqlite3_bind_int64(select, 2, Int64(limit)))
            var records: [FeedbackRecord] = []
            while true {
                let result = sqlite3_step(select)
                if result == SQLITE_DONE { break }
                guard result == SQLITE_ROW else { throw StoreProblem(message: problem(result)) }
                let count = Int(sqlite3_column_bytes(select, 0))
                guard let bytes = sqlite3_column_blob(select, 0),
                    let token = try? DeviceToken(bytes: UnsafeRawBufferPointer(start: bytes, count: count))
                else { continue }  // a token the store could not have written: skip it
                let seconds = UInt32(clamping: sqlite3_column_int64(select, 1))
                records.append(FeedbackRecord(timestamp: seconds, token: token))
            }
            sqlite3_reset(select)
            return records
        } catch let problem as StoreProblem {
            throw LegacyAPNsError(.fileError, "cannot read the feedback store \(path): \(problem.message)")
        }
    }

    /// Forgets tuples that were written to a sender completely (a tuple updated since, with a
    /// later time, stays).
    public func forget(_ records: [FeedbackRecord], topic: String) throws {
        try checkOpen()
        guard !records.isEmpty else { return }
        do {
            if let refusesDeletes, refusesDeletes() { throw StoreProblem(message: "database or disk is full") }
            try transaction {
                for record in records {
                    try bind(delete, topic: topic, token: record.token)
                    sqlite3_bind_int64(delete, 3, Int64(record.timestamp))
                    try step(delete)
                }
            }
        } catch let problem as StoreProblem {
            throw LegacyAPNsError(.fileError, "cannot update the feedback store \(path): \(problem.message)")
        }
    }

    // MARK: - The resend window

    /// How a verdict is kept: its kind, status and seconds.
    private enum WindowKind: Int64 {
        case pending = 0, accepted = 1, unregistered = 2, rejected = 3
    }

    /// Commits changes of the resend memory in one transaction, in order; with `expiring`, also
    /// deletes the entries stored that long ago or longer.
    ///
    /// - Throws: ``LegacyAPNsError`` (`.fileError`): none of them is stored then.
    public func commit(_ changes: [BridgeWindowChange], expiring: Duration?) throws {
        try checkOpen()
        guard !changes.isEmpty || expiring != nil else { return }
        let now = Host.unixTime()
        do {
            if synced {
                try execute("PRAGMA synchronous=NORMAL")
                synced = false
            }
            try transaction {
                for change in changes {
                    // Claims are a fleet's: one bridge on its own file never makes any.
                    guard case .memory(let change) = change else { continue }
                    switch change {
                    case .stored(let key, let verdict):
                        try bindWindowKey(windowUpsert, key)
                        var kind = WindowKind.pending
                        var status: Int64 = 0
                        var seconds: Int64 = 0
                        var reason = ""
                        switch verdict {
                        case nil, .unavailable?: break
                        case .accepted?: kind = .accepted
                        case .unregistered(let at)?: (kind, seconds) = (.unregistered, Int64(at))
                        case .rejected(let code, let why)?:
                            (kind, status, reason) = (.rejected, Int64(code.rawValue), why)
                        }
                        sqlite3_bind_int64(windowUpsert, 3, kind.rawValue)
                        sqlite3_bind_int64(windowUpsert, 4, status)
                        sqlite3_bind_int64(windowUpsert, 5, seconds)
                        try check(sqlite3_bind_text(windowUpsert, 6, reason, -1, CSQLite_transient()))
                        sqlite3_bind_int64(windowUpsert, 7, now)
                        try step(windowUpsert)
                    case .forgotten(let key):
                        try bindWindowKey(windowDelete, key)
                        try step(windowDelete)
                    }
                }
                if let expiring {
                    sqlite3_reset(windowExpire)
                    sqlite3_bind_int64(windowExpire, 1, now - expiring.components.seconds)
                    try step(windowExpire)
                }
            }
        } catch let problem as StoreProblem {
            throw LegacyAPNsError(
                .fileError, "cannot store the resend memory (\(changes.count) change(s)) in \(path): \(problem.message)"
            )
        }
    }

    /// What the store kept of the resend memory, oldest first: the newest `capacity` entries
    /// younger than `lifetime`.
    public func resendWindow(lifetime: Duration, capacity: Int) throws -> [BridgeResendMemory.Record] {
        try checkOpen()
        let now = Host.unixTime()
        do {
            sqlite3_reset(windowSelect)
            sqlite3_bind_int64(windowSelect, 1, now - lifetime.components.seconds)
            sqlite3_bind_int64(windowSelect, 2, Int64(capacity))
            var records: [BridgeResendMemory.Record] = []
            while true {
                let result = sqlite3_step(windowSelect)
                if result == SQLITE_DONE { break }
                guard result == SQLITE_ROW else { throw StoreProblem(message: problem(result)) }
                guard sqlite3_column_bytes(windowSelect, 1) == MemoryLayout<UInt128>.size,
                    let bytes = sqlite3_column_blob(windowSelect, 1),
                    let kind = WindowKind(rawValue: sqlite3_column_int64(windowSelect, 2))
                else { continue }  // a row the store could not have written: skip it
                var digest: UInt128 = 0
                withUnsafeMutableBytes(of: &digest) {
                    $0.copyMemory(from: UnsafeRawBufferPointer(start: bytes, count: MemoryLayout<UInt128>.size))
                }
                let verdict: BridgeVerdict?
                switch kind {
                case .pending: verdict = nil
                case .accepted: verdict = .accepted
                case .unregistered:
                    verdict = .unregistered(seconds: UInt32(clamping: sqlite3_column_int64(windowSelect, 4)))
                case .rejected:
                    let code = StatusCode(rawValue: UInt8(clamping: sqlite3_column_int64(windowSelect, 3)))
                    let reason = sqlite3_column_text(windowSelect, 5).map { String(cString: $0) } ?? ""
                    verdict = .rejected(code, reason: reason)
                }
                let key = BridgeResendKey(
                    identifier: UInt32(truncatingIfNeeded: sqlite3_column_int64(windowSelect, 0)),
                    digest: UInt128(littleEndian: digest))
                let age = Swift.max(0, now - sqlite3_column_int64(windowSelect, 6))
                records.append(BridgeResendMemory.Record(key: key, verdict: verdict, age: .seconds(age)))
            }
            sqlite3_reset(windowSelect)
            return records.reversed()
        } catch let problem as StoreProblem {
            throw LegacyAPNsError(.fileError, "cannot read the resend memory in \(path): \(problem.message)")
        }
    }

    private func bindWindowKey(_ statement: OpaquePointer?, _ key: BridgeResendKey) throws {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
        sqlite3_bind_int64(statement, 1, Int64(key.identifier))
        var digest = key.digest.littleEndian
        try withUnsafeBytes(of: &digest) { bytes in
            try check(sqlite3_bind_blob(statement, 2, bytes.baseAddress, Int32(bytes.count), CSQLite_transient()))
        }
    }

    /// Tuples held, all topics.
    public func count() throws -> Int {
        try checkOpen()
        do {
            sqlite3_reset(countAll)
            guard sqlite3_step(countAll) == SQLITE_ROW else { throw StoreProblem(message: lastMessage()) }
            defer { sqlite3_reset(countAll) }
            return Int(sqlite3_column_int64(countAll, 0))
        } catch let problem as StoreProblem {
            throw LegacyAPNsError(.fileError, "cannot read the feedback store \(path): \(problem.message)")
        }
    }

    // MARK: - SQLite

    private struct StoreProblem: Error {
        var message: String
    }

    private func checkOpen() throws {
        guard database == nil else { return }
        throw LegacyAPNsError(.fileError, "the feedback store \(path) is closed")
    }

    /// Closes the database (checkpointing its write-ahead log, so no `-wal` file is left); nothing
    /// can be read or stored afterwards. Called again, or by `deinit`, it does nothing.
    public func close() {
        for statement in [insert, select, delete, countAll, windowUpsert, windowDelete, windowExpire, windowSelect]
        where statement != nil {
            sqlite3_finalize(statement)
        }
        insert = nil
        select = nil
        delete = nil
        countAll = nil
        windowUpsert = nil
        windowDelete = nil
        windowExpire = nil
        windowSelect = nil
        if let database { sqlite3_close_v2(database) }
        database = nil
    }

    /// Runs `body` in one immediate transaction: committed, or rolled back when it throws.
    private func transaction(_ body: () throws -> Void) throws {
        try execute("BEGIN IMMEDIATE")
        do {
            try body()
            try execute("COMMIT")
        } catch {
            _ = sqlite3_exec(database, "ROLLBACK", nil, nil, nil)
            throw error
        }
    }

    private func execute(_ sql: String) throws {
        let result = sqlite3_exec(database, sql, nil, nil, nil)
        guard result == SQLITE_OK else { throw StoreProblem(message: problem(result)) }
    }

    private func prepare(_ sql: String) throws -> OpaquePointer? {
        var statement: OpaquePointer?
        let result = sqlite3_prepare_v3(database, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard result == SQLITE_OK else { throw StoreProblem(message: problem(result)) }
        return statement
    }

    private func scalarInteger(_ sql: String) throws -> Int64 {
        guard let statement = try prepare(sql) else { throw StoreProblem(message: "no statement") }
        defer { sqlite3_finalize(statement) }
        let result = sqlite3_step(statement)
        guard result == SQLITE_ROW else { throw StoreProblem(message: problem(result)) }
        return sqlite3_column_int64(statement, 0)
    }

    private func scalarText(_ sql: String) throws -> String {
        guard let statement = try prepare(sql) else { throw StoreProblem(message: "no statement") }
        defer { sqlite3_finalize(statement) }
        let result = sqlite3_step(statement)
        guard result == SQLITE_ROW, let text = sqlite3_column_text(statement, 0) else {
            throw StoreProblem(message: problem(result))
        }
        return String(cString: text)
    }

    private func bind(_ statement: OpaquePointer?, topic: String, token: DeviceToken) throws {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
        try check(sqlite3_bind_text(statement, 1, topic, -1, CSQLite_transient()))
        try token.withUnsafeBytes { bytes in
            try check(sqlite3_bind_blob(statement, 2, bytes.baseAddress, Int32(bytes.count), CSQLite_transient()))
        }
    }

    private func step(_ statement: OpaquePointer?) throws {
        let result = sqlite3_step(statement)
        sqlite3_reset(statement)
        guard result == SQLITE_DONE || result == SQLITE_ROW else { throw StoreProblem(message: problem(result)) }
    }

    private func check(_ result: Int32) throws {
        guard result == SQLITE_OK else { throw StoreProblem(message: problem(result)) }
    }

    private func lastMessage() -> String {
        database.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) } ?? "unknown error"
    }

    /// A sentence for an SQLite result code, in the words a user acts on.
    private func problem(_ code: Int32) -> String {
        switch code & 0xFF {
        case SQLITE_BUSY, SQLITE_LOCKED:
            return "it is in use by another process (is another bridge running with this --store?)"
        case SQLITE_NOTADB:
            return "it is not a bridge store (another kind of file, or damaged beyond reading)"
        case SQLITE_CORRUPT:
            return "the file is damaged (move it away to start with an empty store)"
        case SQLITE_FULL:
            return "the disk is full"
        case SQLITE_READONLY:
            return "it is read-only"
        case SQLITE_CANTOPEN:
            return "it cannot be opened (does the directory exist, and may the bridge write there?)"
        case SQLITE_IOERR:
            return "an I/O error (\(lastMessage()))"
        case SQLITE_PERM, SQLITE_AUTH:
            return "permission denied"
        default:
            return lastMessage()
        }
    }
}
