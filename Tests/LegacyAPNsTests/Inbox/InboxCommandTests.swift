import APNsCore
import APNsRuntime
import Foundation
import TestSupport
import Testing

/// `--inbox` as a developer uses it: `serve` and `serve --http2` as processes, notifications sent
/// with our own `send`, the JSON API read with curl and the event stream with a raw socket.
@Suite(.serialized) struct InboxCommandTests {
    static let hostile =
        #"<script>document.title='pwned'</script><img src=x onerror="document.title='pwned'"></script>"#

    /// The inbox's base URL a command announced.
    static func inboxURL(_ process: ChildProcess) throws -> String {
        let line = try #require(process.waitForLine { $0.hasPrefix("inbox on http://") }, "\(process.stderr)")
        return String(line.dropFirst("inbox on ".count).dropLast())
    }

    static func notifications(_ url: String) throws -> [[String: Any]] {
        let (status, body) = try curlStatus(url)
        #expect(status == 200, "\(body)")
        let object = try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]
        return try #require(object?["notifications"] as? [[String: Any]], "\(body)")
    }

    /// Reads a stream until `count` `data:` lines arrived (or it stalls for 10 s).
    static func readEvents(_ transport: TCPTransport, count: Int) -> [String] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        func events() -> [String] {
            String(decoding: received, as: UTF8.self).split(separator: "\n").filter { $0.hasPrefix("data: ") }
                .map { String($0.dropFirst(6)) }
        }
        while events().count < count {
            let result = buffer.withUnsafeMutableBytes { transport.read(into: $0, waitingUpTo: 10) }
            guard case .done(let n) = result else { break }
            received.append(contentsOf: buffer[0..<n])
        }
        return events()
    }

    @Test func theBinarySimulatorsInboxListsFiltersStreamsAndClears() async throws {
        let bad = String(repeating: "cd", count: 32)
        let good = String(repeating: "ab", count: 32)
        let server = try ChildProcess([
            "serve", "--port", "0", "--no-feedback", "--quiet", "--inbox", "127.0.0.1:0", "--fail-token", bad,
        ])
        defer { _ = server.interruptAndWait() }
        let listening = try #require(server.waitForLine { $0.hasPrefix("listening on ") }, "\(server.stderr)")
        let base = try Self.inboxURL(server)
        let endpoint = try Endpoint(parsing: String(base.dropFirst("http://".count)))

        // A stream opened before anything was sent sees each notification as it arrives.
        let socket = try Socket.connect(host: endpoint.host, port: endpoint.port, timeout: 5)
        let stream = TCPTransport(socket, peer: "\(endpoint)")
        defer { stream.close() }
        #expect(stream.writeAll(Array("GET /api/v1/stream HTTP/1.1\r\nHost: a\r\n\r\n".utf8), timeout: 5) == nil)
        #expect(try Self.notifications(base + "/api/v1/notifications").isEmpty)

        let sent = await BridgeCommandTests.sender([
            "send", "--gateway", String(listening.dropFirst("listening on ".count)), "--token", good, "--token", bad,
            "--token", String(repeating: "ef", count: 32), "--alert", Self.hostile, "--badge", "3",
        ])
        #expect(sent.status == 1, "\(sent.stderr)")

        // Three notifications, newest first; the sender's confirmation barrier is not one of them.
        let all = try Self.notifications(base + "/api/v1/notifications")
        #expect(all.count == 3)
        #expect(all.map { $0["id"] as? Int } == [3, 2, 1])
        #expect(all.map { $0["status"] as? String } == ["accepted", "8 token is on the fail list", "accepted"])
        let first = try #require(all.last)
        #expect(first["token"] as? String == good)
        #expect(first["protocol"] as? String == "binary")
        #expect(
            (first["payload"] as? String)?.contains(Self.hostile.replacingOccurrences(of: "\"", with: "\\\"")) == true)
        #expect((first["frameHex"] as? String)?.hasPrefix("01") == true)

        #expect(
            try Self.notifications(base + "/api/v1/notifications?status=rejected").map { $0["token"] as? String } == [
                bad
            ])
        #expect(try Self.notifications(base + "/api/v1/notifications?token=\(good.uppercased())").count == 1)
        #expect(try Self.notifications(base + "/api/v1/notifications?limit=1").map { $0["id"] as? Int } == [3])
        #expect(try Self.notifications(base + "/api/v1/notifications?since=2000-01-01T00:00:00Z").count == 3)
        #expect(try Self.notifications(base + "/api/v1/notifications?since=4000000000000").isEmpty)
        #expect(try curlStatus(base + "/api/v1/notifications?limit=x").status == 400)
        #expect(try curlStatus(base + "/api/v1/notifications?color=red").status == 400)
        let one = try curlStatus(base + "/api/v1/notifications/2")
        #expect(one.status == 200 && one.body.contains(#""statusCode":8"#), "\(one.body)")
        #expect(try curlStatus(base + "/api/v1/notifications/99").status == 404)

        let events = Self.readEvents(stream, count: 3)
        #expect(events.count == 3)
        let ids = try events.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .map { $0?["id"] as? Int }
        #expect(ids == [1, 2, 3])

        let cleared = try CLIRunner.runProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["curl", "-s", "--max-time", "20", "-X", "DELETE", "-w", "%{http_code}", base + "/api/v1/notifications"])
        #expect(cleared.output == "204")
        #expect(try Self.notifications(base + "/api/v1/notifications").isEmpty)
    }

    @Test func theHTTP2SimulatorsInboxShowsTopicPushTypeAndHeadersButNoCredential() async throws {
        let (server, port) = try BridgeCommandTests.upstream([
            "--inbox", "127.0.0.1:0", "--fail-token", String(repeating: "cd", count: 32),
        ])
        defer { _ = server.interruptAndWait() }
        let base = try Self.inboxURL(server)
        let sent = await CLIRunner.run([
            "send", "--http2", "--gateway", "127.0.0.1:\(port)", "--ca-file", BridgeCommandTests.ca, "--auth-key",
            BridgeCommandTests.p8, "--team-id", "DEF123GHIJ", "--topic", "com.example.legacy", "--token",
            String(repeating: "ab", count: 32), "--token", String(repeating: "cd", count: 32), "--alert", Self.hostile,
            "--priority", "5",
        ])
        #expect(sent.status == 1, "\(sent.stderr)")
        let all = try Self.notifications(base + "/api/v1/notifications")
        #expect(all.count == 2)
        let rejected = try #require(all.first { $0["status"] as? String != "accepted" })
        #expect(rejected["status"] as? String == "BadDeviceToken")
        #expect(rejected["statusCode"] as? Int == 400)
        let accepted = try #require(all.first { $0["status"] as? String == "accepted" })
        #expect(accepted["protocol"] as? String == "http2")
        #expect(accepted["topic"] as? String == "com.example.legacy")
        #expect(accepted["pushType"] as? String == "alert")
        #expect(accepted["priority"] as? Int == 5)
        #expect(accepted["statusCode"] as? Int == 200)
        let headers = try #require(accepted["headers"] as? [String: String])
        #expect(headers["apns-topic"] == "com.example.legacy")
        #expect(headers[":path"] == "/3/device/" + String(repeating: "ab", count: 32))
        #expect(headers["authorization"] == nil)
        #expect(
            try curlStatus(base + "/api/v1/notifications?topic=com.example.legacy&status=accepted").body.contains(
                #""pushType":"alert""#))
    }

    @Test func aBadInboxAddressOrSizeIsOneErrorLine() async {
        let address = await CLIRunner.run(["serve", "--inbox", "localhost"])
        #expect(address.status == 2)
        #expect(address.stderr.hasPrefix("legacy-push: error: --inbox needs a port"), "\(address.stderr)")
        let size = await CLIRunner.run(["serve", "--http2", "--inbox-size", "5"])
        #expect(size.status == 2)
        #expect(size.stderr.hasPrefix("legacy-push: error: --inbox-size needs --inbox"), "\(size.stderr)")
    }
}
