import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A throwaway PostgreSQL 15 cluster (Debian's `postgresql`) for the fleet's tests, benchmark and
/// soak: `initdb` into a fresh folder, the server on a free loopback port, trust authentication
/// on 127.0.0.1 only. `initdb` and `pg_ctl` run as the `postgres` user when the caller is root
/// (PostgreSQL refuses root). Never a server the machine happens to run; ``stop()`` removes it.
public final class ThrowawayPostgres: Sendable {
    /// The cluster's folder (data, server log, socket).
    public let directory: String
    /// The server's port on 127.0.0.1.
    public let port: UInt16
    private let settings: String
    private let databases = Atomic<Int>(0)

    /// Where Debian puts the server programs.
    public static let programs = "/usr/lib/postgresql/15/bin"

    /// A cluster, or a program the harness runs, that failed.
    public struct Failure: Error, CustomStringConvertible {
        /// What failed, with the program's output.
        public var description: String
        /// A failure saying `description`.
        public init(_ description: String) { self.description = description }
    }

    /// Starts a cluster. `durable`: fsync on (what a benchmark measures); off for tests.
    public init(durable: Bool = false) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.programs + "/initdb") else {
            throw Failure("PostgreSQL 15 is not installed (Scripts/setup.sh --tests installs postgresql)")
        }
        directory = "/tmp/legacy-push-pg-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        settings = "-c listen_addresses=127.0.0.1 -c max_connections=200" + (durable ? "" : " -c fsync=off")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if getuid() == 0 {
            guard let user = getpwnam("postgres") else { throw Failure("no postgres user to run PostgreSQL as") }
            chown(directory, user.pointee.pw_uid, user.pointee.pw_gid)
        }
        let initialised = try Self.server(
            "initdb", ["-D", directory + "/data", "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
        guard initialised.status == 0 else { throw Failure("initdb failed: \(initialised.output.suffix(400))") }
        // A free port (bound and released), then the server on it; another process may take the
        // port in between, so a few tries.
        var lastFailure = ""
        for _ in 0..<5 {
            let candidate = try freeLoopbackTCPPort()
            let started = try Self.server("pg_ctl", Self.startArguments(directory, candidate, settings))
            if started.status == 0 {
                port = candidate
                return
            }
            lastFailure =
                started.output + ((try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? "")
        }
        try? FileManager.default.removeItem(atPath: directory)
        throw Failure("pg_ctl start failed: \(lastFailure.suffix(600))")
    }

    private static func startArguments(_ directory: String, _ port: UInt16, _ settings: String) -> [String] {
        [
            "-D", directory + "/data", "-l", directory + "/server.log", "-w", "-t", "30", "-o",
            "-k \(directory) -p \(port) \(settings)", "start",
        ]
    }

    /// A fresh database: its name and connection URI.
    public func database(prefix: String = "t") throws -> (name: String, uri: String) {
        let name = "\(prefix)\(getpid())_\(databases.add(1, ordering: .relaxed).newValue)"
        try psql("postgres", "CREATE DATABASE \(name)")
        return (name, "postgresql://postgres@127.0.0.1:\(port)/\(name)")
    }

    /// Runs SQL in `database` with psql (another client than ours, as an operator would); returns
    /// its unaligned output.
    @discardableResult
    public func psql(_ database: String, _ sql: String) throws -> String {
        let result = try Self.run(
            "/usr/bin/psql",
            [
                "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-d", database, "-v", "ON_ERROR_STOP=1", "-At",
                "-c", sql,
            ], separateErrors: true)
        guard result.status == 0 else { throw Failure("psql \(sql): \(result.errors)") }
        return result.output
    }

    /// Transactions committed and rolled back in `database` so far (read fresh: the statistics
    /// collector publishes at most every 500 ms).
    public func transactions(_ database: String) throws -> Int {
        let text = try psql(
            database,
            "SELECT pg_stat_clear_snapshot(); SELECT xact_commit + xact_rollback FROM pg_stat_database "
                + "WHERE datname = current_database()")
        return Int(text.split(separator: "\n").last ?? "") ?? 0
    }

    /// Stops the server at once (as a crash would: `-m immediate`), keeping its data.
    public func stopServer() throws {
        let stopped = try Self.server("pg_ctl", ["-D", directory + "/data", "-m", "immediate", "-w", "stop"])
        guard stopped.status == 0 else { throw Failure("pg_ctl stop: \(stopped.output)") }
    }

    /// Starts the server again on its port.
    public func startServer() throws {
        let started = try Self.server("pg_ctl", Self.startArguments(directory, port, settings))
        guard started.status == 0 else { throw Failure("pg_ctl start: \(started.output)") }
    }

    /// Stops the server and removes the cluster.
    public func stop() {
        _ = try? Self.server("pg_ctl", ["-D", directory + "/data", "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs a server program, as the `postgres` user when the caller is root.
    private static func server(_ name: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let program = programs + "/" + name
        let result =
            getuid() == 0
            ? try run("/usr/sbin/runuser", ["-u", "postgres", "--", program] + arguments, separateErrors: false)
            : try run(program, arguments, separateErrors: false)
        return (result.status, result.output)
    }

    /// Runs a program to its end (at most 120 s). `pg_ctl start` leaves the server running with
    /// the log as its output, so the pipes close when pg_ctl ends.
    private static func run(_ program: String, _ arguments: [String], separateErrors: Bool) throws -> (
        status: Int32, output: String, errors: String
    ) {
        let child = try SpawnedProcess(program, arguments)
        guard let termination = child.waitForExit(timeout: 120) else {
            child.send(SIGKILL)
            throw Failure("\(program) did not finish within 120 s")
        }
        let output = String(decoding: child.standardOutput, as: UTF8.self)
        let errors = String(decoding: child.standardError, as: UTF8.self)
        return (termination.status, separateErrors ? output : output + errors, errors)
    }
}

/// A free loopback TCP port: bound to port 0 and released (a later bind may lose it to another
/// process; callers that can retry do).
public func freeLoopbackTCPPort() throws -> UInt16 {
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard descriptor >= 0 else { throw ThrowawayPostgres.Failure("socket: \(errno)") }
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
        }
    }
    guard bound else { throw ThrowawayPostgres.Failure("bind: \(errno)") }
    return UInt16(bigEndian: address.sin_port)
}
