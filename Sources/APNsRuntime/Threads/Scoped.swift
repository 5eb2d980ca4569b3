/// The body of every `withRunning`: `start`, run `body` with what it returned, and `stop` however
/// `body` ends (the simulators and the bridge are started and stopped this way).
package func withStarted<Started, Result>(
    isolation: isolated (any Actor)? = #isolation, start: () async throws -> Started, stop: () async -> Void,
    _ body: (Started) async throws -> Result
) async throws -> Result {
    let started = try await start()
    do {
        let result = try await body(started)
        await stop()
        return result
    } catch {
        await stop()
        throw error
    }
}
