import Foundation
import ProcessHarness

/// The fleet tests' PostgreSQL: a ``ThrowawayPostgres`` (fsync off), started once per test
/// process and removed when the process exits. Each test takes a database of its own
/// (`database().uri`).
typealias PostgresCluster = ThrowawayPostgres

extension ThrowawayPostgres {
    /// The cluster of this test process (started on first use).
    static let shared: Result<ThrowawayPostgres, Failure> = {
        do {
            let cluster = try ThrowawayPostgres()
            atexit { if case .success(let cluster) = ThrowawayPostgres.shared { cluster.stop() } }
            return .success(cluster)
        } catch let error as Failure {
            return .failure(error)
        } catch {
            return .failure(Failure("\(error)"))
        }
    }()

    /// A cluster of its own (for a test that stops and starts the server); `stop()` removes it.
    static func dedicated() throws -> ThrowawayPostgres { try ThrowawayPostgres() }
}
