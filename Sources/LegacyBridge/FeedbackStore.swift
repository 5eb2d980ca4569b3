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
/// Not `Sendable`: one thread uses it (the bridge's store thread).
public final class FeedbackStore {
    /// The file.
    public let path: String
    private var database: OpaquePointer?
    private var insert: OpaquePointer?
    private var select: OpaquePointer?
    private var delete: OpaquePointer?
    private var countAll: OpaquePointer?
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
            try execute("BEGIN IMMEDIATE")
            do {
                for (topic, record) in tuples {
                    try bind(insert, topic: topic, token: record.token)
                    sqlite3_bind_int64(insert, 3, Int64(record.timestamp))
                    try step(insert)
                }
                try execute("COMMIT")
            } catch {
                _ = sqlite3_exec(database, "ROLLBACK", nil, nil, nil)
                throw error
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
            try execute("BEGIN IMMEDIATE")
            do {
                for record in records {
                    try bind(delete, topic: topic, token: record.token)
                    sqlite3_bind_int64(delete, 3, Int64(record.timestamp))
                    try step(delete)
                }
                try execute("COMMIT")
            } catch {
                _ = sqlite3_exec(database, "ROLLBACK", nil, nil, nil)
                throw error
            }
        } catch let problem as StoreProblem {
            throw LegacyAPNsError(.fileError, "cannot update the feedback store \(path): \(problem.message)")
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
    package func close() {
        for statement in [insert, select, delete, countAll] where statement != nil { sqlite3_finalize(statement) }
        insert = nil
        select = nil
        delete = nil
        countAll = nil
        if let database { sqlite3_close_v2(database) }
        database = nil
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
