import Foundation
import TestSupport
import Testing

/// `bridge --inbox`: the bridge in front of `serve --http2`, a legacy sender through it, and the
/// inbox's JSON read with curl: every notification the sender sent, with its sender, the request
/// it went upstream as, and its verdict.
@Suite(.serialized) struct BridgeInboxTests {
    /// The notifications, once none waits for its verdict any more (the session hands them over a
    /// batch per turn of its loop).
    static func settled(_ base: String, count: Int) throws -> [[String: Any]] {
        let deadline = Date().addingTimeInterval(10)
        var all: [[String: Any]] = []
        repeat {
            all = try InboxCommandTests.notifications(base + "/api/v1/notifications")
            if all.count >= count, !all.contains(where: { $0["status"] as? String == "pending" }) { return all }
            Thread.sleep(forTimeInterval: 0.05)
        } while Date() < deadline
        return all
    }

    @Test func theBridgesInboxShowsEachNotificationWithItsSenderRequestAndVerdict() async throws {
        let scratch = try ScratchDirectory()
        let bad = BridgeCommandTests.token(2)
        let (server, upstreamPort) = try BridgeCommandTests.upstream(["--fail-token", bad])
        defer { _ = server.interruptAndWait() }
        let (bridge, port, _) = try BridgeCommandTests.bridge(
            upstreamPort: upstreamPort, store: scratch.file("bridge.sqlite"), ["--inbox", "127.0.0.1:0"])
        defer { _ = bridge.interruptAndWait() }
        let base = try InboxCommandTests.inboxURL(bridge)
        #expect(try InboxCommandTests.notifications(base + "/api/v1/notifications").isEmpty)

        let tokens = (1...4).map(BridgeCommandTests.token)
        let sent = await BridgeCommandTests.sender(
            ["send", "--gateway", "127.0.0.1:\(port)", "--alert", "through the bridge", "--expiry", "0"]
                + tokens.flatMap { ["--token", $0] })
        #expect(sent.status == 1, "\(sent.stderr)")  // one rejected

        // The sender resends what followed the bad token after the error response, so the bridge
        // saw each good token at least once; every one has its verdict.
        let all = try Self.settled(base, count: 4)
        #expect(!all.contains { $0["status"] as? String == "pending" }, "\(all)")
        // Every one is a notification with its token: the sender's confirmation barrier is not listed.
        #expect(all.allSatisfy { $0["token"] is String }, "\(all)")
        let rejected = all.filter { $0["token"] as? String == bad }
        #expect(rejected.count == 1, "\(all)")
        let refusal = try #require(rejected.first)
        #expect(refusal["status"] as? String == "8 HTTP/2 400 BadDeviceToken", "\(refusal)")
        #expect(refusal["statusCode"] as? Int == 8)
        for token in tokens where token != bad {
            #expect(
                all.contains { $0["token"] as? String == token && $0["status"] as? String == "accepted" }, "\(token)")
        }
        let accepted = try #require(all.first { $0["status"] as? String == "accepted" })
        #expect(accepted["protocol"] as? String == "binary")
        #expect((accepted["sender"] as? String)?.isEmpty == false, "\(accepted)")
        #expect(accepted["topic"] as? String != nil, "\(accepted)")
        #expect(accepted["pushType"] as? String == "alert")
        #expect(accepted["expiry"] as? Int == 0)
        #expect(accepted["statusCode"] as? Int == 0)
        #expect((accepted["frameHex"] as? String)?.hasPrefix("0") == true, "\(accepted)")
        #expect((accepted["payload"] as? String)?.contains("through the bridge") == true)
        let headers = try #require(accepted["headers"] as? [String: String], "\(accepted)")
        #expect(headers["apns-topic"] == accepted["topic"] as? String)
        #expect(headers["apns-expiration"] == "0")
        #expect(headers[":path"] == "/3/device/" + (accepted["token"] as! String))
        #expect(headers["authorization"] == nil)
        #expect(accepted["apnsId"] as? String == headers["apns-id"])
        // The filters of the API work on the bridge's notifications too.
        #expect(try InboxCommandTests.notifications(base + "/api/v1/notifications?status=rejected").count == 1)
        #expect(try InboxCommandTests.notifications(base + "/api/v1/notifications?token=\(bad)").count == 1)
        // No devices behind a bridge.
        let offline = try CLIRunner.runProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["curl", "-s", "-X", "POST", "-w", "%{http_code}", base + "/api/v1/devices/\(tokens[0])/offline"])
        #expect(offline.output.hasSuffix("404"), "\(offline.output)")
    }
}
