import APNsCore
import APNsRuntime
import Foundation
import TestSupport
import Testing

/// Delivery as Apple does it, through the command line: `serve --http2 --inbox --offline TOKEN`,
/// pushes sent with curl (certificate auth), devices taken offline and online with curl, fates
/// and the delivery log read from the inbox's JSON, and the change seen on the event stream.
@Suite(.serialized) struct InboxDeliveryTests {
    static let topic = "com.example.legacy"

    /// Sends one push with curl; returns the HTTP status and the `apns-unique-id` answered.
    static func push(_ port: String, _ token: String, _ headers: [String] = []) throws -> (Int, String?) {
        let result = try Curl.run(
            Curl.universalPEM + ["-o", "/dev/null", "-D", "-", "-H", "apns-topic: \(topic)"]
                + headers.flatMap { ["-H", $0] }
                + ["-d", #"{"aps":{"alert":"hello"}}"#, "https://127.0.0.1:\(port)/3/device/\(token)"])
        let lines = result.output.split(separator: "\r\n").map(String.init)
        let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        let unique = lines.first { $0.lowercased().hasPrefix("apns-unique-id:") }.map {
            $0.dropFirst("apns-unique-id:".count).trimmingCharacters(in: .whitespaces)
        }
        return (status, unique)
    }

    static func post(_ url: String) throws -> String {
        try CLIRunner.runProcess(
            URL(fileURLWithPath: "/usr/bin/env"),
            ["curl", "-s", "--max-time", "20", "-X", "POST", "-w", "%{http_code}", url]
        ).output
    }

    @Test func offlineDevicesStoreOnePushPerAppUntilTheyComeOnline() throws {
        let offline = String(repeating: "0f", count: 32)
        let online = String(repeating: "ab", count: 32)
        let server = try ChildProcess([
            "serve", "--http2", "--port", "0", "--quiet", "--inbox", "127.0.0.1:0", "--offline", offline,
        ])
        defer { _ = server.interruptAndWait() }
        let listening = try #require(server.waitForLine { $0.hasPrefix("listening on ") }, "\(server.stderr)")
        let port = String(listening.dropFirst("listening on 127.0.0.1:".count).prefix { $0.isNumber })
        let base = try InboxCommandTests.inboxURL(server)
        let endpoint = try Endpoint(parsing: String(base.dropFirst("http://".count)))

        // A stream open from the start sees the fates change.
        let socket = try Socket.connect(host: endpoint.host, port: endpoint.port, timeout: 5)
        let stream = TCPTransport(socket, peer: "\(endpoint)")
        defer { stream.close() }
        #expect(stream.writeAll(Array("GET /api/v1/stream HTTP/1.1\r\nHost: a\r\n\r\n".utf8), timeout: 5) == nil)

        let (firstStatus, firstUnique) = try Self.push(port, offline)
        #expect(firstStatus == 200)
        #expect(firstUnique != nil)
        let (_, secondUnique) = try Self.push(port, offline, ["apns-collapse-id: score"])
        let (onceStatus, _) = try Self.push(port, offline, ["apns-expiration: 0"])
        #expect(onceStatus == 200)
        let (_, directUnique) = try Self.push(port, online)

        // Newest first: delivered at once, expired at once (0: never stored), stored, replaced.
        let before = try InboxCommandTests.notifications(base + "/api/v1/notifications")
        #expect(before.map { $0["fate"] as? String } == ["delivered", "expired", "stored", "replaced"], "\(before)")
        #expect(before.last?["uniqueId"] as? String == firstUnique)
        #expect(try InboxCommandTests.notifications(base + "/api/v1/notifications?fate=stored").count == 1)
        #expect(try curlStatus(base + "/api/v1/notifications?fate=lost").status == 400)
        let devices = try curlStatus(base + "/api/v1/devices").body
        #expect(devices.contains(#""offline":["\#(offline)"]"#), "\(devices)")
        #expect(devices.contains(#""topic":"\#(Self.topic)""#), "\(devices)")

        // Online, once the stream has shown the four: the one stored push is delivered.
        let seen = Self.read(stream, until: { $0.contains("id: 4\n") })
        #expect(seen.contains("id: 4\n"))
        #expect(try Self.post(base + "/api/v1/devices/\(offline)/online") == "204")
        let after = try InboxCommandTests.notifications(base + "/api/v1/notifications")
        #expect(after.map { $0["fate"] as? String } == ["delivered", "expired", "delivered", "replaced"], "\(after)")

        // The delivery log, keyed by apns-unique-id.
        let log = try curlStatus(base + "/api/v1/deliveries/\(try #require(secondUnique))")
        #expect(log.status == 200, "\(log.body)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(log.body.utf8)) as? [String: Any])
        let events = try #require(object["events"] as? [[String: Any]])
        #expect(events.compactMap { $0["event"] as? String } == ["accepted", "stored", "delivered"], "\(log.body)")
        #expect(events.allSatisfy { ($0["time"] as? String)?.hasSuffix("Z") == true })
        let replaced = try curlStatus(base + "/api/v1/deliveries/\(try #require(firstUnique))").body
        #expect(replaced.contains(#""event":"replaced""#), "\(replaced)")
        #expect(replaced.contains("apns-collapse-id") == false, "\(replaced)")  // different collapse ids
        let direct = try curlStatus(base + "/api/v1/deliveries/\(try #require(directUnique))").body
        #expect(direct.contains(#""fate":"delivered""#), "\(direct)")
        #expect(try curlStatus(base + "/api/v1/deliveries/00000000-0000-0000-0000-000000000000").status == 404)

        // Offline again: the next push is stored; the stream reported the delivery as an update.
        #expect(try Self.post(base + "/api/v1/devices/\(offline)/offline") == "204")
        #expect(try Self.push(port, offline).0 == 200)
        #expect(
            try InboxCommandTests.notifications(base + "/api/v1/notifications?limit=1").first?["fate"] as? String
                == "stored")
        let zz = try Self.post(base + "/api/v1/devices/zz/offline")
        #expect(zz.hasSuffix("400"), "\(zz)")
        let second = try #require(secondUnique)
        func deliveredUpdate(_ text: String) -> Bool {
            text.components(separatedBy: "event: update\ndata: ").dropFirst().contains {
                $0.contains(#""uniqueId":"\#(second)""#) && $0.contains(#""fate":"delivered""#)
            }
        }
        let text = seen + Self.read(stream, until: deliveredUpdate)
        #expect(deliveredUpdate(text), "\(text)")
    }

    /// Reads the stream until `done` holds for what arrived (or it stalls for 10 s).
    static func read(_ transport: TCPTransport, until done: (String) -> Bool) -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !done(String(decoding: received, as: UTF8.self)) {
            let result = buffer.withUnsafeMutableBytes { transport.read(into: $0, waitingUpTo: 10) }
            guard case .done(let n) = result else { break }
            received.append(contentsOf: buffer[0..<n])
        }
        return String(decoding: received, as: UTF8.self)
    }

    @Test func offlineNeedsTheInboxAndATokenAndDevicesLiveInTheHTTP2SimulatorOnly() async {
        let alone = await CLIRunner.run(["serve", "--http2", "--offline", String(repeating: "ab", count: 32)])
        #expect(alone.status == 2)
        #expect(alone.stderr.hasPrefix("legacy-push: error: --offline needs --inbox"), "\(alone.stderr)")
        let bad = await CLIRunner.run(["serve", "--http2", "--inbox", "127.0.0.1:0", "--offline", "xyz"])
        #expect(bad.status == 2)
        #expect(bad.stderr.hasPrefix("legacy-push: error: --offline: "), "\(bad.stderr)")
        let binary = await CLIRunner.run([
            "serve", "--inbox", "127.0.0.1:0", "--offline", String(repeating: "ab", count: 32),
        ])
        #expect(binary.status == 2, "\(binary.stderr)")
    }
}
