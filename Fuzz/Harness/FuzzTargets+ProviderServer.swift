import APNsCore
import APNsCredentials
import APNsRuntime
import GatewaySimulator

extension FuzzTargets {
    // MARK: - provider-server

    /// The server side of the HTTP/2 provider API on bytes after the TLS layer: the simulator's
    /// ``ProviderConnection`` (nghttp2 through ``HTTP2Session``, authentication, validation,
    /// faults, answers) fed arbitrary client bytes in a data-chosen split.
    ///
    /// The first byte chooses the setting: bit 0 certificate (universal, both environments) or
    /// token auth, bit 1 production or development, bit 2 an error delay, bit 3 goaway-after 3,
    /// bit 4 a stalled token. The rest is the client's byte stream, given in the chunks of
    /// ``chunkPattern(_:)``, with time moving 0.3 s between chunks.
    ///
    /// Properties: no crash and no precondition failure whatever the bytes; each `send` appends a
    /// bounded amount; once the session reports a protocol error every later `receive` throws
    /// too; the connection never answers more requests than arrived whole; the counters it hands
    /// to the simulator agree with its own.
    public static func providerServer(_ data: UnsafeRawBufferPointer) {
        guard let mode = data.first else { return }
        var faults = ProviderFaults()
        if mode & 4 != 0 { faults.errorDelay = .milliseconds(500) }
        if mode & 8 != 0 { faults.goawayAfter = 3 }
        if mode & 16 != 0 {
            faults.stallingTokens = [try! DeviceToken(bytes: [UInt8](repeating: 0xAB, count: 32))]
        }
        var limits = ProviderSimulator.Limits()
        limits.maximumBufferedOutput = 64 * 1024
        let policy = ProviderPolicy(
            environment: mode & 2 != 0 ? .production : .development, maximumConcurrentStreams: 16, faults: faults,
            limits: limits, clock: ProviderSimulator.Clock { 1_767_225_600_000 })
        let authentication: ProviderConnection.Authentication =
            mode & 1 != 0
            ? .certificate(topics: ["com.example.app", "com.example.app.voip"], environment: .both) : .token
        guard
            let connection = try? ProviderConnection(policy: policy, number: 1, authentication: authentication, now: 0)
        else {
            check(false, "a server connection could not be created")
            return
        }
        var output = ByteWriter(capacity: 64 * 1024)
        var failed = false
        var now = 0.0
        let bytes = UnsafeRawBufferPointer(rebasing: data.dropFirst())
        let chunks = chunkPattern(data)
        var index = 0
        var pattern = 0
        while index < bytes.count {
            let end = min(bytes.count, index + chunks[pattern % chunks.count] * 8)
            pattern += 1
            do {
                try connection.receive(UnsafeRawBufferPointer(rebasing: bytes[index..<end]), now: now)
                check(!failed, "receive succeeded after the session reported a protocol error")
            } catch {
                failed = true
            }
            index = end
            now += 0.3
            connection.tick(now: now)
            for _ in 0..<4 {
                output.clear()
                guard (try? connection.send(into: &output)) != nil else { break }
                check(output.count <= 2 * 64 * 1024 + 16 * 1024, "one send appended \(output.count) bytes")
                if output.isEmpty { break }
            }
            check(
                connection.acceptedCount + connection.rejectedCount <= connection.completedRequests,
                "more answers than requests")
            if connection.isFinished { break }
        }
        connection.finish()
        let statistics = policy.statistics
        check(statistics.accepted == connection.acceptedCount, "accepted counts disagree")
        check(statistics.rejectedCount == connection.rejectedCount, "rejected counts disagree")
    }
}
