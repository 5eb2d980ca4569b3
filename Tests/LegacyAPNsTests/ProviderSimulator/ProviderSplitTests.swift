import APNsCore
import APNsRuntime
import GatewaySimulator
import TestSupport
import Testing

/// Many concurrent requests whose frames arrive in every kind of split: each is answered once.
@Suite struct ProviderSplitTests {
    @Test(arguments: [1, 7, 31, 100, 4096, 16_384], [false, true])
    func concurrentRequestsSplitAnywhereAreAllAnswered(_ chunk: Int, token: Bool) throws {
        let clock = ProviderSimulator.ManualClock()
        let policy = ProviderPolicy(authKeys: ProviderPair.authKeys, clock: .manual(clock))
        let connection = try ProviderConnection(
            policy: policy, number: 1,
            authentication: token ? .token : .certificate(topics: ["com.example.legacy"], environment: .both), now: 0)
        let bearer = try ProviderPair.keyA.signProviderToken(
            keyID: "ABC123DEFG", teamID: ProviderPair.teamID, issuedAt: clock.seconds)
        let events = HTTP2Recorder()
        // Like APNs clients should: assume one stream until the server's SETTINGS say more.
        var options = HTTP2Session.Options()
        options.peerMaxConcurrentStreams = 1
        let client = try HTTP2Session(role: .client, options: options, delegate: events)
        var streams: [Int32] = []
        for index in 0..<600 {
            var headers = HTTP2HeaderList()
            var request = HTTP2Pair.request(index, topic: "com.example.legacy")
            if token { request.authorizationToken = bearer.compactSerialization }
            request.writeHeaders(into: &headers, authority: "x", isFirstOnConnection: index == 0)
            streams.append(try client.submitRequest(headers: headers, body: request.payload.bytes))
        }
        var toServer = ByteWriter(capacity: 1 << 16)
        var toClient = ByteWriter(capacity: 1 << 16)
        for _ in 0..<100_000 {
            toServer.clear()
            try client.send(into: &toServer)
            let bytes = toServer.bytes
            var offset = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + chunk)
                try bytes[offset..<end].withUnsafeBytes { try connection.receive($0, now: 0) }
                offset = end
                // The server writes between reads, as its TLS loop does.
                toClient.clear()
                try connection.send(into: &toClient)
                if !toClient.isEmpty { try toClient.withUnsafeReadableBytes { try client.receive($0) } }
            }
            toClient.clear()
            try connection.send(into: &toClient)
            if !toClient.isEmpty { try toClient.withUnsafeReadableBytes { try client.receive($0) } }
            if bytes.isEmpty && toClient.isEmpty { break }
        }
        #expect(connection.acceptedCount == 600)
        #expect(streams.allSatisfy { events.messages[$0]?.response.status == 200 })
    }
}
