import Foundation
import Synchronization
import TestSupport
import Testing

/// A throwaway PostgreSQL cluster for the fleet tests (Debian's `postgresql` 15), started once per
/// test process on a free loopback port and removed when the process exits: `initdb` and `pg_ctl`
/// run as the `postgres` user when the tests run as root (PostgreSQL refuses root), with trust
/// authentication on 127.0.0.1 only and fsync off (a test cluster). Never one the machine happens
/// to run. Each test takes a database of its own (``database()``).
final class PostgresCluster: Sendable {
    let directory: String
    let port: UInt16
    private let databases = Atomic<Int>(0)

    /// Where Debian puts the server programs.
    static let programs = "/usr/lib/postgresql/15/bin"

    /// The cluster of this test process (started on first use).
    static let shared: Result<PostgresCluster, PostgresClusterError> = {
        do {
            let cluster = try PostgresCluster()
            atexit { if case .success(let cluster) = PostgresCluster.shared { cluster.stop() } }
            return .success(cluster)
        } catch let error as PostgresClusterError {
            return .failure(error)
        } catch {
            return .failure(PostgresClusterError(description: "\(error)"))
        }
    }()

    /// A cluster of its own (for a test that stops and starts the server); ``stop()`` removes it.
    static func dedicated() throws -> PostgresCluster { try PostgresCluster() }

    private init() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.programs + "/initdb") else {
            throw PostgresClusterError(
                description: "PostgreSQL 15 is not installed (Scripts/setup.sh --tests installs postgresql)")
        }
        directory = "/tmp/legacy-push-pg-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if getuid() == 0 {
            guard let user = getpwnam("postgres") else {
                throw PostgresClusterError(description: "no postgres user to run PostgreSQL as")
            }
            chown(directory, user.pointee.pw_uid, user.pointee.pw_gid)
        }
        let initialised = try Self.run(
            Self.programs + "/initdb",
            ["-D", directory + "/data", "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
        guard initialised.status == 0 else {
            throw PostgresClusterError(description: "initdb failed: \(initialised.stderr.suffix(400))")
        }
        // A free port (bound and released), then the server on it.
        var lastFailure = ""
        for _ in 0..<5 {
            let candidate = try freeLoopbackPort()
            let started = try Self.run(
                Self.programs + "/pg_ctl",
                [
                    "-D", directory + "/data", "-l", directory + "/server.log", "-w", "-t", "30", "-o",
                    "-k \(directory) -p \(candidate) -c listen_addresses=127.0.0.1 -c fsync=off "
                        + "-c max_connections=200",
                    "start",
                ])
            if started.status == 0 {
                port = candidate
                return
            }
            lastFailure =
                started.stderr + ((try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? "")
        }
        throw PostgresClusterError(description: "pg_ctl start failed: \(lastFailure.suffix(600))")
    }

    /// A fresh database of this cluster: its connection URI.
    func database() throws -> String {
        let name = "t\(getpid())_\(databases.add(1, ordering: .relaxed).newValue)"
        try psql("postgres", "CREATE DATABASE \(name)")
        return "postgresql://postgres@127.0.0.1:\(port)/\(name)"
    }

    /// Runs SQL in `database` with psql (another client than ours, as an operator would).
    @discardableResult
    func psql(_ database: String, _ sql: String) throws -> String {
        let result = try CLIRunner.runProcess(
            URL(fileURLWithPath: "/usr/bin/psql"),
            [
                "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-d", database, "-v", "ON_ERROR_STOP=1", "-At",
                "-c", sql,
            ])
        guard result.status == 0 else {
            throw PostgresClusterError(description: "psql \(sql): \(result.stderr)")
        }
        return result.output
    }

    /// Stops the server at once (as a crash would: `-m immediate`), keeping its data.
    func stopServer() throws {
        let stopped = try Self.run(
            Self.programs + "/pg_ctl", ["-D", directory + "/data", "-m", "immediate", "-w", "stop"])
        guard stopped.status == 0 else { throw PostgresClusterError(description: "pg_ctl stop: \(stopped.stderr)") }
    }

    /// Starts the server again on its port.
    func startServer() throws {
        let started = try Self.run(
            Self.programs + "/pg_ctl",
            [
                "-D", directory + "/data", "-l", directory + "/server.log", "-w", "-t", "30", "-o",
                "-k \(directory) -p \(port) -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200", "start",
            ])
        guard started.status == 0 else { throw PostgresClusterError(description: "pg_ctl start: \(started.stderr)") }
    }

    func stop() {
        _ = try? Self.run(Self.programs + "/pg_ctl", ["-D", directory + "/data", "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs a server program as the `postgres` user when the tests run as root.
    private static func run(_ program: String, _ arguments: [String]) throws -> CLIRunner.Result {
        if getuid() == 0 {
            return try CLIRunner.runProcess(
                URL(fileURLWithPath: "/usr/sbin/runuser"), ["-u", "postgres", "--", program] + arguments)
        }
        return try CLIRunner.runProcess(URL(fileURLWithPath: program), arguments)
    }
}

struct PostgresClusterError: Error, CustomStringConvertible {
    var description: String
}
