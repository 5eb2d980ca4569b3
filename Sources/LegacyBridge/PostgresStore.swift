import APNsCore
internal import APNsRuntime
internal import CLibPQ

/// The store of a fleet of bridges: one PostgreSQL database (through libpq) that every bridge of
/// the fleet opens. The 410 tuples any bridge stored are served by any bridge's feedback port,
/// each tuple to one reader; the resend memory every bridge journals is looked up by the others,
/// so a sender answered by one bridge and resending through another is answered from it.
///
/// - Connection: a libpq connection URI (`postgresql://user@host:5432/db?sslmode=...`) or a
///   `key=value` string; the `PG*` environment variables apply as libpq documents. A lost
///   connection is reset on the next use (each call that fails throws, and the bridge retries).
/// - Schema: created at first open in the schema `legacy_push`, versioned in
///   `legacy_push.schema_version`; a newer version than this release knows is refused.
/// - Durability: ordinary (logged) tables. The 410s are committed synchronously (on disk before the
///   notification counts as delivered); the window's claims, verdicts and memory do not wait for the WAL to
///   reach the disk (`synchronous_commit = off`), as the SQLite store's do not: a crash of the
///   database server can lose its last fraction of a second (PostgreSQL's WAL writer flushes every
///   200 ms), and resends of what it held are then delivered again without a word.
/// - Feedback: a reader claims tuples (`claimed_until`, one minute) with `FOR UPDATE SKIP
///   LOCKED`, so two bridges' readers never get the same tuple; a tuple written completely is
///   deleted, one given back (or whose reader vanished) is served again once the claim lapses.
/// - The window: one row per notification a bridge claimed before forwarding it (`claim`, for
///   ``claimLifetime`` once it has its verdict) or its resend memory remembered (for the memory's
///   lifetime), with the bridge that owns it and when; every bridge says it is alive in
///   `legacy_push.bridges` every second or so, and the pending rows of a bridge silent for
///   ``ownerTimeout`` are taken over by the next bridge that claims them (as possible duplicates).
///
/// Not `Sendable`: one thread uses it (the bridge's store thread).
public final class PostgresStore: BridgeStorage {
    /// Where the database is, with any password left out.
    public let location: String
    /// This bridge's name in the store (host, process and a random part), owner of its entries.
    public let instance: String
    private let connectionString: String
    private var connection: OpaquePointer?

    /// The schema this release writes (1: feedback, window, bridges; 2: the window's `claim`
    /// column). An older one is migrated at start, a newer one refused.
    public static let schemaVersion = 2
    /// How long a claimed notification's verdict answers a resend, at any bridge of the fleet.
    public let claimLifetime: Duration
    /// The default ``claimLifetime``: far longer than a sender takes to reconnect and resend
    /// (milliseconds to seconds), short enough that a sender repeating the same notification on
    /// purpose a minute later is not answered from the window.
    public static let defaultClaimLifetime: Duration = .seconds(60)
    /// A bridge that has not said it is alive for this long is taken for dead.
    public static let ownerTimeout: Duration = .seconds(3)
    /// How long a feedback reader's claim on tuples lasts.
    static let claimSeconds = 60

    /// Connects and creates (or checks) the schema.
    ///
    /// - Throws: ``LegacyAPNsError``: `.connectionFailed` when the database cannot be reached or
    ///   refuses the login (the message is libpq's), `.fileError` when the schema is newer than
    ///   this release or cannot be created.
    public init(connection: String, claimLifetime: Duration = PostgresStore.defaultClaimLifetime) throws {
        self.connectionString = connection
        self.claimLifetime = claimLifetime
        self.location = Self.redacted(connection)
        var random = SystemRandomNumberGenerator()
        self.instance = "\(Host.name)-\(Host.processID)-\(String(random.next() & 0xFFFF_FFFF, radix: 16))"
        try connect()
        try migrate()
        try heartbeat()
    }

    /// A second connection for the same bridge (the same ``instance``, owner of the same rows):
    /// the bridge claims on it, beside the store thread's connection.
    public init(sameBridgeAs other: PostgresStore) throws {
        self.connectionString = other.connectionString
        self.claimLifetime = other.claimLifetime
        self.location = other.location
        self.instance = other.instance
        try connect()
    }

    deinit { close() }

    /// Whether `store` names a PostgreSQL database rather than an SQLite file: a `postgresql://`
    /// or `postgres://` URI, or a libpq `key=value` string.
    public static func isConnectionString(_ store: String) -> Bool {
        store.hasPrefix("postgresql://") || store.hasPrefix("postgres://")
            || (store.contains("=") && !store.contains("/")
                && store.split(separator: " ").allSatisfy { $0.contains("=") })
    }

    /// `connection` without a password (URI user info or `password=`), for messages.
    static func redacted(_ connection: String) -> String {
        let characters = Array(connection)
        if let scheme = (0..<Swift.max(0, characters.count - 2)).first(where: {
            characters[$0..<$0 + 3] == [":", "/", "/"]
        }) {
            let rest = characters[(scheme + 3)...]
            guard let at = rest.firstIndex(of: "@"), let colon = rest[..<at].firstIndex(of: ":") else {
                return connection
            }
            return String(characters[..<colon]) + ":***" + String(characters[at...])
        }
        return connection.split(separator: " ").map { $0.hasPrefix("password=") ? "password=***" : String($0) }
            .joined(separator: " ")
    }

    // MARK: - BridgeStorage

    /// Stores tuples (the latest time wins; a later time clears a reader's claim).
    public func add(_ tuples: [(topic: String, record: FeedbackRecord)]) throws {
        guard !tuples.isEmpty else { return }
        // The latest time wins; a later 410 for a claimed tuple is news: its claim lapses.
        var latest: [String: [DeviceToken: UInt32]] = [:]
        for (topic, record) in tuples {
            latest[topic, default: [:]][record.token] = Swift.max(latest[topic]?[record.token] ?? 0, record.timestamp)
        }
        var topics: [String] = []
        var tokens: [String] = []
        var seconds: [String] = []
        for (topic, records) in latest {
            for (token, time) in records {
                topics.append(topic)
                tokens.append(token.hexString)
                seconds.append(String(time))
            }
        }
        try durably("store \(tuples.count) feedback tuple(s)") {
            try self.run(
                """
                INSERT INTO legacy_push.feedback (topic, token, seconds)
                SELECT t, decode(k, 'hex'), s FROM unnest($1::text[], $2::text[], $3::bigint[]) AS u(t, k, s)
                ON CONFLICT (topic, token) DO UPDATE SET seconds = greatest(feedback.seconds, excluded.seconds),
                    claimed_until = CASE WHEN excluded.seconds > feedback.seconds THEN NULL ELSE feedback.claimed_until END
                """, [Self.array(topics), Self.array(tokens), Self.array(seconds)])
        }
    }

    /// Runs `body` in a transaction that waits for the WAL to reach the disk (the 410s: the
    /// connection's default does not).
    private func durably(_ what: String, _ body: () throws -> Void) throws {
        try transaction(what: what) {
            try self.run("SET LOCAL synchronous_commit = on", [])
            try body()
        }
    }

    /// Claims up to `limit` unclaimed tuples of `topic` for one reader, oldest first.
    public func tuples(topic: String, limit: Int) throws -> [FeedbackRecord] {
        let rows = try query(
            """
            UPDATE legacy_push.feedback SET claimed_until = now() + make_interval(secs => \(Self.claimSeconds))
            WHERE (topic, token) IN (
                SELECT topic, token FROM legacy_push.feedback
                WHERE topic = $1 AND (claimed_until IS NULL OR claimed_until < now())
                ORDER BY seconds LIMIT $2 FOR UPDATE SKIP LOCKED)
            RETURNING encode(token, 'hex'), seconds
            """, [topic, String(limit)], what: "read the feedback tuples")
        var records: [FeedbackRecord] = []
        for row in rows {
            guard let token = try? DeviceToken(hexString: row[0]), let seconds = UInt32(row[1]) else { continue }
            records.append(FeedbackRecord(timestamp: seconds, token: token))
        }
        return records.sorted { $0.timestamp < $1.timestamp }
    }

    /// Deletes tuples written to a reader completely (one updated since, with a later time, stays).
    public func forget(_ records: [FeedbackRecord], topic: String) throws {
        guard !records.isEmpty else { return }
        try durably("update the feedback tuples") {
            try self.run(
                """
                DELETE FROM legacy_push.feedback f USING unnest($2::text[], $3::bigint[]) AS u(k, s)
                WHERE f.topic = $1 AND f.token = decode(u.k, 'hex') AND f.seconds <= u.s
                """,
                [
                    topic, Self.array(records.map { $0.token.hexString }),
                    Self.array(records.map { String($0.timestamp) }),
                ])
        }
    }

    /// Releases the claim on tuples a reader was handed but could not be written.
    public func giveBack(_ records: [FeedbackRecord], topic: String) throws {
        guard !records.isEmpty else { return }
        try execute(
            """
            UPDATE legacy_push.feedback f SET claimed_until = NULL FROM unnest($2::text[]) AS u(k)
            WHERE f.topic = $1 AND f.token = decode(u.k, 'hex')
            """, [topic, Self.array(records.map { $0.token.hexString })], what: "give feedback tuples back")
    }

    /// Tuples held, all topics.
    public func count() throws -> Int {
        let rows = try query("SELECT count(*) FROM legacy_push.feedback", [], what: "count the feedback tuples")
        return rows.first.flatMap { Int($0[0]) } ?? 0
    }

    /// Commits window changes in one transaction, in order, each row owned by this bridge: the
    /// memory's rows (`claim` false) are written whatever was there; a claim's verdict or release
    /// touches only this bridge's own claim, so a row the memory has taken over since stays its.
    public func commit(_ changes: [BridgeWindowChange], expiring: Duration?) throws {
        // Runs of one kind, in order (a key stored then forgotten in one batch ends forgotten);
        // within a run of stores the last change of a key wins.
        var statements: [(String, [String])] = []
        var index = 0
        while index < changes.count {
            let run = Self.part(changes[index]).run
            var latest: [BridgeResendKey: BridgeVerdict?] = [:]
            var keys: [BridgeResendKey] = []
            while index < changes.count, case let (kind, key, verdict) = Self.part(changes[index]), kind == run {
                if latest.updateValue(verdict, forKey: key) == nil { keys.append(key) }
                index += 1
            }
            keys.sort(by: Self.lockOrder)
            let claims = run == .releaseClaims || run == .settleClaims
            guard run == .remember || run == .settleClaims else {
                statements.append(
                    (
                        """
                        DELETE FROM legacy_push.window w USING unnest($1::bigint[], $2::text[]) AS u(i, d)
                        WHERE w.identifier = u.i AND w.digest = decode(u.d, 'hex')
                        """ + (claims ? " AND w.claim AND w.owner = $3" : ""),
                        Self.keyColumns(keys) + (claims ? [instance] : [])
                    ))
                continue
            }
            var columns = [[String]](repeating: [], count: 4)
            for key in keys {
                let (kind, status, seconds, reason) = Self.encode(latest[key] ?? nil)
                columns[0].append(String(kind))
                columns[1].append(String(status))
                columns[2].append(String(seconds))
                columns[3].append(reason)
            }
            // The memory's rows are written whatever was there. A claim's verdict is written
            // whether or not the claim's row is still there (a resend answered from the memory
            // consumed the memory's row: its own answer is what a later copy needs), but never
            // over the memory's row or another bridge's claim.
            let onConflict =
                claims
                ? "stored = excluded.stored WHERE w.claim AND w.owner = excluded.owner"
                : "owner = excluded.owner, stored = excluded.stored, claim = false"
            statements.append(
                (
                    """
                    INSERT INTO legacy_push.window AS w
                        (identifier, digest, kind, status, seconds, reason, owner, stored, claim)
                    SELECT i, decode(d, 'hex'), k, st, s, r, $7, now(), \(claims)
                    FROM unnest($1::bigint[], $2::text[], $3::smallint[], $4::smallint[], $5::bigint[],
                        $6::text[]) AS u(i, d, k, st, s, r)
                    ON CONFLICT (identifier, digest) DO UPDATE SET kind = excluded.kind,
                        status = excluded.status, seconds = excluded.seconds, reason = excluded.reason,
                        \(onConflict)
                    """, Self.keyColumns(keys) + columns.map(Self.array) + [instance]
                ))
        }
        if let expiring {
            // The memory's rows past its lifetime; settled claims past theirs (a pending claim is
            // judged by its owner's heartbeat, not by its age).
            statements.append(
                (
                    """
                    DELETE FROM legacy_push.window WHERE stored <= now() - make_interval(secs => $1)
                        OR (claim AND kind <> 0 AND stored <= now() - make_interval(secs => $2))
                    """,
                    [String(expiring.components.seconds), String(claimLifetime.components.seconds)]
                ))
        }
        guard !statements.isEmpty else { return }
        try transaction(what: "store the resend memory (\(changes.count) change(s))") {
            // Not waiting for the WAL to reach the disk (the 410s do): see the type's durability note.
            try self.run("SET LOCAL synchronous_commit = off", [])
            for (sql, parameters) in statements { try self.run(sql, parameters) }
        }
    }

    /// The order in which statements touch window rows.
    private static func lockOrder(_ a: BridgeResendKey, _ b: BridgeResendKey) -> Bool {
        (a.identifier, a.digest) < (b.identifier, b.digest)
    }

    /// The four kinds of window change, each its own statement.
    private enum Run { case forget, remember, releaseClaims, settleClaims }

    /// A change as its statement's kind, key and verdict.
    private static func part(_ change: BridgeWindowChange) -> (run: Run, key: BridgeResendKey, verdict: BridgeVerdict?)
    {
        switch change {
        case .memory(.forgotten(let key)): (.forget, key, nil)
        case .memory(.stored(let key, let verdict)): (.remember, key, verdict)
        case .claimReleased(let key): (.releaseClaims, key, nil)
        case .claimSettled(let key, let verdict): (.settleClaims, key, verdict)
        }
    }

    /// Identifiers and hex digests of `keys`, as two array parameters.
    private static func keyColumns(_ keys: [BridgeResendKey]) -> [String] {
        [array(keys.map { String($0.identifier) }), array(keys.map { hex($0.digest) })]
    }

    /// A bridge restarted on a shared store starts empty: it asks the store about every frame
    /// its memory does not know (``claim(_:lifetime:)``), which covers its own earlier entries.
    public func resendWindow(lifetime: Duration, capacity: Int) throws -> [BridgeResendMemory.Record] { [] }

    /// Claims `keys` for this bridge (see ``BridgeStorage/claim(_:lifetime:)``). One statement in
    /// the common case: `INSERT ... ON CONFLICT DO NOTHING RETURNING` takes the keys no row holds,
    /// and the statement's snapshot says what the others hold, without locking them (a lock on
    /// a row another bridge's window commit is writing would make the two wait for each other).
    /// Rows past their lifetime (`lifetime` for the memory's, ``claimLifetime`` for claims) and
    /// pending rows of bridges silent for ``ownerTimeout`` are taken over by a second statement,
    /// for those keys only. A key another bridge took in the same instant comes back in neither:
    /// the caller asks again.
    public func claim(_ keys: [BridgeResendKey], lifetime: Duration) throws -> [BridgeResendKey: SharedWindowEntry]? {
        guard !keys.isEmpty else { return [:] }
        var unique: [BridgeResendKey] = []
        var seen = Set<BridgeResendKey>()
        for key in keys where seen.insert(key).inserted { unique.append(key) }
        // One order for every statement that touches window rows (fewer deadlocks between
        // bridges; one that happens anyway is run again).
        unique.sort(by: Self.lockOrder)
        let parameters = [
            String(lifetime.components.seconds), String(claimLifetime.components.seconds),
            String(Self.ownerTimeout.components.seconds), instance,
        ]
        // $3, $4: the lifetimes; $5: the owner timeout; $6: this bridge.
        let stale =
            "(w.stored <= now() - make_interval(secs => CASE WHEN w.claim THEN $4::float8 ELSE $3::float8 END) "
            + "OR (w.kind = 0 AND NOT coalesce((SELECT b.seen > now() - make_interval(secs => $5::float8) "
            + "FROM legacy_push.bridges b WHERE b.name = w.owner), false)))"
        let rows = try query(
            """
            WITH u AS (SELECT i, decode(d, 'hex') AS d FROM unnest($1::bigint[], $2::text[]) AS u(i, d)),
            known AS (
                SELECT w.identifier, w.digest, w.kind, w.status, w.seconds, w.reason, \(stale) AS stale
                FROM u JOIN legacy_push.window w ON w.identifier = u.i AND w.digest = u.d),
            won AS (
                INSERT INTO legacy_push.window (identifier, digest, kind, status, seconds, reason, owner, stored, claim)
                SELECT i, d, 0, 0, 0, '', $6, now(), true FROM u
                ON CONFLICT (identifier, digest) DO NOTHING
                RETURNING identifier, digest)
            SELECT identifier, encode(digest, 'hex'), kind, status, seconds, reason, stale FROM known
            UNION ALL
            SELECT identifier, encode(digest, 'hex'), -1, 0, 0, '', false FROM won
            """, Self.keyColumns(unique) + parameters, what: "claim in the resend window")
        var found: [BridgeResendKey: SharedWindowEntry] = [:]
        var takeOver: [BridgeResendKey] = []
        var wasPending = Set<BridgeResendKey>()
        for row in rows {
            guard let identifier = UInt32(row[0]), let digest = UInt128(row[1], radix: 16),
                let kind = Int(row[2]), let status = UInt8(row[3]), let seconds = UInt32(row[4])
            else { continue }
            let key = BridgeResendKey(identifier: identifier, digest: digest)
            if kind == -1 {
                found[key] = .claimed  // no row held it
            } else if row[6] == "t" {
                takeOver.append(key)
                if kind == 0 { wasPending.insert(key) }
            } else if kind == 0 {
                found[key] = .pending  // upstream at a bridge that is alive
            } else if let verdict = Self.decode(kind: kind, status: status, seconds: seconds, reason: row[5]) {
                found[key] = .settled(verdict)
            }
        }
        guard !takeOver.isEmpty else { return found }
        let taken = try query(
            """
            UPDATE legacy_push.window w SET kind = 0, status = 0, seconds = 0, reason = '', owner = $6,
                stored = now(), claim = true
            FROM unnest($1::bigint[], $2::text[]) AS u(i, d)
            WHERE w.identifier = u.i AND w.digest = decode(u.d, 'hex') AND \(stale)
            RETURNING w.identifier, encode(w.digest, 'hex')
            """, Self.keyColumns(takeOver) + parameters, what: "take over claims in the resend window")
        for row in taken {
            guard let identifier = UInt32(row[0]), let digest = UInt128(row[1], radix: 16) else { continue }
            let key = BridgeResendKey(identifier: identifier, digest: digest)
            // A pending copy taken over may have gone out; a verdict past its lifetime is history.
            found[key] = wasPending.contains(key) ? .orphaned : .claimed
        }
        return found
    }

    /// Says this bridge is alive.
    public func heartbeat() throws {
        try execute(
            """
            INSERT INTO legacy_push.bridges (name, seen) VALUES ($1, now())
            ON CONFLICT (name) DO UPDATE SET seen = excluded.seen
            """, [instance], what: "say the bridge is alive")
    }

    /// Closes the connection.
    public func close() {
        if let connection { PQfinish(connection) }
        connection = nil
    }

    // MARK: - Schema

    private func migrate() throws {
        try transaction(what: "create the schema") {
            // One bridge at a time creates or migrates it.
            try self.run("SELECT pg_advisory_xact_lock(2195)", [])
            try self.run("CREATE SCHEMA IF NOT EXISTS legacy_push", [])
            try self.run("CREATE TABLE IF NOT EXISTS legacy_push.schema_version (version integer NOT NULL)", [])
            let version =
                try self.rows("SELECT max(version) FROM legacy_push.schema_version", []).first
                .flatMap { Int($0[0]) } ?? 0
            guard version <= Self.schemaVersion else {
                throw Failure(
                    code: .fileError,
                    message: "it was written by a newer legacy-push (schema version \(version); this one knows up "
                        + "to \(Self.schemaVersion))")
            }
            guard version < Self.schemaVersion else { return }
            if version < 1 { try self.createVersion1() }
            if version < 2 {
                // 2: claims before forwarding; the memory's rows are not claims.
                try self.run(
                    "ALTER TABLE legacy_push.window ADD COLUMN claim boolean NOT NULL DEFAULT false", [])
            }
            try self.run("DELETE FROM legacy_push.schema_version", [])
            try self.run("INSERT INTO legacy_push.schema_version VALUES ($1)", [String(Self.schemaVersion)])
        }
    }

    /// The schema of version 1, the first release with a fleet.
    private func createVersion1() throws {
        try self.run(
            """
            CREATE TABLE legacy_push.feedback (
                topic text NOT NULL, token bytea NOT NULL, seconds bigint NOT NULL,
                claimed_until timestamptz, PRIMARY KEY (topic, token))
            """, [])
        try self.run(
            """
            CREATE TABLE legacy_push.window (
                identifier bigint NOT NULL, digest bytea NOT NULL, kind smallint NOT NULL,
                status smallint NOT NULL, seconds bigint NOT NULL, reason text NOT NULL,
                owner text NOT NULL, stored timestamptz NOT NULL, PRIMARY KEY (identifier, digest))
            """, [])
        try self.run("CREATE INDEX window_stored ON legacy_push.window (stored)", [])
        try self.run("CREATE TABLE legacy_push.bridges (name text PRIMARY KEY, seen timestamptz NOT NULL)", [])
    }

    // MARK: - Verdicts as columns

    /// kind 0: pending; 1 accepted; 2 unregistered (seconds); 3 rejected (status, reason).
    private static func encode(_ verdict: BridgeVerdict?) -> (Int, Int, Int64, String) {
        switch verdict {
        case nil, .unavailable?: return (0, 0, 0, "")
        case .accepted?: return (1, 0, 0, "")
        case .unregistered(let seconds)?: return (2, 0, Int64(seconds), "")
        case .rejected(let status, let reason)?: return (3, Int(status.rawValue), 0, reason)
        }
    }

    private static func decode(kind: Int, status: UInt8, seconds: UInt32, reason: String) -> BridgeVerdict? {
        switch kind {
        case 1: return .accepted
        case 2: return .unregistered(seconds: seconds)
        case 3: return .rejected(StatusCode(rawValue: status), reason: reason)
        default: return nil
        }
    }

    private static func hex(_ digest: UInt128) -> String {
        let text = String(digest, radix: 16)
        return String(repeating: "0", count: 32 - text.count) + text
    }

    /// A PostgreSQL array literal of `values` (each quoted, `"` and `\` escaped).
    static func array(_ values: [String]) -> String {
        var literal = "{"
        for (index, value) in values.enumerated() {
            if index > 0 { literal += "," }
            literal += "\""
            for character in value {
                if character == "\"" || character == "\\" { literal.append("\\") }
                literal.append(character)
            }
            literal += "\""
        }
        return literal + "}"
    }

    // MARK: - libpq

    private struct Failure: Error {
        var code: LegacyAPNsError.Code
        var message: String
        /// PostgreSQL's SQLSTATE, when the server gave one.
        var sqlState = ""

        /// Two bridges' statements locked the same window rows in different orders and the
        /// server aborted this one (40P01), or a serialization failure (40001): run it again.
        var isWorthRetrying: Bool { sqlState == "40P01" || sqlState == "40001" }
    }

    /// How often a statement (or transaction) the server aborted for a deadlock is run again.
    static let retriesAfterDeadlock = 5

    private func connect() throws {
        close()
        connection = Self.open(connectionString)
        guard let connection, PQstatus(connection) == CONNECTION_OK else {
            let message = lastMessage()
            close()
            throw LegacyAPNsError(.connectionFailed, "cannot reach the store \(location): \(message)")
        }
    }

    /// How long a connection attempt may take unless the connection string says otherwise
    /// (libpq waits for ever by default: a database host that drops packets would hold the
    /// store thread, and every sender waiting on it).
    static let connectTimeoutSeconds = 5

    /// Connects with `connection` (a URI or key=value string, expanded as libpq's `dbname`),
    /// with ``connectTimeoutSeconds`` unless the string sets `connect_timeout` itself.
    private static func open(_ connection: String) -> OpaquePointer? {
        // Commits do not wait for the WAL to reach the disk unless a statement says so (the 410s
        // do, in `add` and `forget`): the window's claims and verdicts may be lost to a crash of
        // the database server (see the type's durability note), and waiting for a flush on every
        // claim would cap a bridge at the disk's flush rate.
        let keywords = ["connect_timeout", "options", "dbname"]
        let values = [String(connectTimeoutSeconds), "-c synchronous_commit=off", connection]
        return withCStrings(keywords) { keywordPointers in
            withCStrings(values) { valuePointers in
                // Terminated by a null keyword; later entries (the expanded string's) override earlier ones.
                var keys = Array(UnsafeBufferPointer(start: keywordPointers, count: keywords.count)) + [nil]
                var vals = Array(UnsafeBufferPointer(start: valuePointers, count: values.count)) + [nil]
                return PQconnectdbParams(&keys, &vals, 1)
            }
        }
    }

    private func lastMessage() -> String {
        guard let connection, let text = PQerrorMessage(connection) else { return "no connection" }
        let message = String(cString: text).split(separator: "\n").first.map(String.init) ?? ""
        return message.isEmpty ? "unknown error" : message
    }

    /// Runs `body` in a transaction: committed, or rolled back when it throws. A broken connection
    /// is reset first.
    private func transaction(what: String, _ body: () throws -> Void) throws {
        var attempt = 0
        while true {
            do {
                try ensureConnected()
                try run("BEGIN", [])
                do {
                    try body()
                    try run("COMMIT", [])
                } catch {
                    _ = try? run("ROLLBACK", [])
                    throw error
                }
                return
            } catch let failure as Failure {
                attempt += 1
                if failure.isWorthRetrying, attempt <= Self.retriesAfterDeadlock { continue }
                throw LegacyAPNsError(failure.code, "cannot \(what) in \(location): \(failure.message)")
            }
        }
    }

    private func execute(_ sql: String, _ parameters: [String], what: String) throws {
        _ = try query(sql, parameters, what: what)
    }

    private func query(_ sql: String, _ parameters: [String], what: String) throws -> [[String]] {
        var attempt = 0
        while true {
            do {
                try ensureConnected()
                return try rows(sql, parameters)
            } catch let failure as Failure {
                attempt += 1
                if failure.isWorthRetrying, attempt <= Self.retriesAfterDeadlock { continue }
                throw LegacyAPNsError(failure.code, "cannot \(what) in \(location): \(failure.message)")
            }
        }
    }

    private func ensureConnected() throws {
        guard connection == nil || PQstatus(connection) != CONNECTION_OK else { return }
        if let connection {
            PQreset(connection)
            if PQstatus(connection) == CONNECTION_OK { return }
        } else {
            connection = Self.open(connectionString)
            if let connection, PQstatus(connection) == CONNECTION_OK { return }
        }
        throw Failure(code: .connectionFailed, message: "the database cannot be reached (\(lastMessage()))")
    }

    private func run(_ sql: String, _ parameters: [String]) throws { _ = try rows(sql, parameters) }

    /// Runs one statement with text parameters; returns its rows as text.
    private func rows(_ sql: String, _ parameters: [String]) throws -> [[String]] {
        let result = Self.withCStrings(parameters) { values in
            PQexecParams(connection, sql, Int32(parameters.count), nil, values, nil, nil, 0)
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let message = result.flatMap { PQresultErrorMessage($0) }.map { String(cString: $0) } ?? ""
            let first = message.split(separator: "\n").first.map(String.init) ?? lastMessage()
            let code: LegacyAPNsError.Code = PQstatus(connection) == CONNECTION_OK ? .fileError : .connectionFailed
            let state = result.flatMap { PQresultErrorField($0, Int32(UInt8(ascii: "C"))) }.map { String(cString: $0) }
            throw Failure(code: code, message: first.isEmpty ? lastMessage() : first, sqlState: state ?? "")
        }
        var rows: [[String]] = []
        let count = PQntuples(result)
        let fields = PQnfields(result)
        rows.reserveCapacity(Int(count))
        for row in 0..<count {
            var values: [String] = []
            for field in 0..<fields { values.append(String(cString: PQgetvalue(result, row, field))) }
            rows.append(values)
        }
        return rows
    }

    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R)
        -> R
    {
        guard !strings.isEmpty else { return body(nil) }
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { string in
            let text = string.utf8CString
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: text.count)
            text.withUnsafeBufferPointer { copy.initialize(from: $0.baseAddress!, count: text.count) }
            return copy
        }
        defer { for pointer in pointers { pointer?.deallocate() } }
        return pointers.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) { body($0) }
        }
    }
}
