import APNsCore
import APNsCredentials
import Foundation
import TestSupport
import Testing

/// `legacy-push bridge --routes` as an operator runs it: `serve --http2` with two teams' keys, each
/// limited to its topic, the bridge with a routes file, senders with two certificates, and SIGHUP
/// reloads (a route added while a sender is mid-send, a broken file that keeps the old routes).
@Suite(.serialized) struct BridgeRoutesCommandTests {
    static let ca = Fixtures.certs("ca.pem")
    static let passphrase = Fixtures.certs("passphrase.txt")

    static func fingerprint(_ p12: String) throws -> String {
        let identity = try ClientIdentity(pkcs12: Fixtures.bytes(Fixtures.certs(p12)), passphrase: "secret")
        return identity.certificate.sha256Fingerprint.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// Route 1: the universal certificate, key A of team DEF123GHIJ; route 2 (when `second`): the
    /// development certificate, key B of the second team, topic weather. Key paths relative to
    /// the file.
    static func routes(second: Bool) throws -> String {
        var routes = [
            #"{"senderFingerprint":"\#(try fingerprint("universal-modern.p12"))","authKey":"keys/a.p8","keyId":"ABC123DEFG","teamId":"DEF123GHIJ"}"#
        ]
        if second {
            routes.append(
                #"{"senderFingerprint":"\#(try fingerprint("development.p12"))","authKey":"keys/b.p8","keyId":"ZYX987WVUT","teamId":"TEAM2ZZZZZ","apnsTopic":"com.example.weather"}"#
            )
        }
        return #"{"routes":[\#(routes.joined(separator: ","))]}"#
    }

    static func send(_ port: String, _ input: String, cert: String) async -> CLIRunner.Result {
        await CLIRunner.run([
            "send", "--gateway", "127.0.0.1:\(port)", "--input", input, "--json", "--ca-file", ca, "--cert",
            Fixtures.certs(cert), "--passphrase-file", passphrase,
        ])
    }

    static func input(_ range: ClosedRange<Int>, in scratch: ScratchDirectory, named name: String) throws -> String {
        let lines = range.map {
            #"{"token":"\#(String(repeating: "cd", count: 24) + String(format: "%016x", $0))","payload":{"aps":{"alert":"n\#($0)"}},"id":\#($0)}"#
        }
        return try scratch.write(Array((lines.joined(separator: "\n") + "\n").utf8), named: name)
    }

    static func recorded(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    @Test func routesBySenderCertificateAndSighupReloadsWithoutLosingASend() async throws {
        let scratch = try ScratchDirectory()
        try FileManager.default.createDirectory(atPath: scratch.file("keys"), withIntermediateDirectories: true)
        _ = try scratch.write(Fixtures.bytes(Fixtures.certs("AuthKey_ABC123DEFG.p8")), named: "keys/a.p8")
        _ = try scratch.write(Fixtures.bytes(Fixtures.certs("AuthKey_ZYX987WVUT.p8")), named: "keys/b.p8")
        let routesFile = try scratch.write(Array(try Self.routes(second: false).utf8), named: "routes.json")
        let record = scratch.file("accepted.jsonl")
        let server = try ChildProcess([
            "serve", "--http2", "--port", "0", "--quiet", "--record", record,
            "--auth-key", "ABC123DEFG:DEF123GHIJ:\(Fixtures.certs("AuthKey_ABC123DEFG.p8"))",
            "--auth-key", "ZYX987WVUT:TEAM2ZZZZZ:\(Fixtures.certs("AuthKey_ZYX987WVUT.p8"))",
            "--team-topic", "DEF123GHIJ:com.example.legacy", "--team-topic", "TEAM2ZZZZZ:com.example.weather",
            // One stream per connection: the long send below lasts seconds, not a fraction of one,
            // so the reload lands in its middle however fast the machine is.
            "--max-streams", "1",
        ])
        defer { _ = server.interruptAndWait() }
        let upstream = try #require(server.waitForLine { $0.hasPrefix("listening on ") }, "\(server.stderr)")
        let upstreamPort = String(upstream.dropFirst("listening on 127.0.0.1:".count).prefix { $0.isNumber })

        let bridge = try ChildProcess([
            "bridge", "--port", "0", "--no-feedback", "--upstream", "127.0.0.1:\(upstreamPort)",
            "--upstream-ca-file", Self.ca, "--routes", routesFile, "--store", scratch.file("bridge.sqlite"),
        ])
        defer { _ = bridge.interruptAndWait() }
        let listening = try #require(bridge.waitForLine { $0.hasPrefix("listening on ") }, "\(bridge.stderr)")
        let port = String(listening.dropFirst("listening on 127.0.0.1:".count).prefix { $0.isNumber })

        // The development certificate has no route yet: refused, with the reason logged.
        let early = await Self.send(
            port, try Self.input(1...3, in: scratch, named: "early.jsonl"), cert: "development.p12")
        #expect(early.status != 0)
        #expect(bridge.waitForStderr { $0.contains("no route matches its certificate") }, "\(bridge.stderr)")

        // A long send on route 1; SIGHUP adds route 2 in the middle of it.
        let count = 20_000
        let long = try Self.input(1...count, in: scratch, named: "long.jsonl")
        let sending = Task { await Self.send(port, long, cert: "universal-modern.p12") }
        let deadline = Date().addingTimeInterval(30)
        while Self.recorded(record).count < 200, Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        _ = try scratch.write(Array(try Self.routes(second: true).utf8), named: "routes.json")
        bridge.spawned.send(SIGHUP)
        let reloaded = bridge.waitForLine { $0.hasPrefix("routes reloaded from ") }
        #expect(reloaded == "routes reloaded from \(routesFile): 2 routes, 2 upstream pools (1 new, 0 retired)")
        let duringReload = Self.recorded(record).count
        let second = await Self.send(
            port, try Self.input(count + 1...count + 100, in: scratch, named: "second.jsonl"), cert: "development.p12")
        #expect(second.status == 0, "\(second.stderr)")
        let first = await sending.value
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.output.split(separator: "\n").last?.contains(#""accepted":\#(count)"#) == true)
        #expect(duringReload < count, "the reload came after the send")

        // Every notification once, each with its route's topic (the other team's key would be refused).
        var lines: [String] = []
        let settled = Date().addingTimeInterval(10)
        while lines.count < count + 100, Date() < settled {
            lines = Self.recorded(record)
            if lines.count < count + 100 { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(lines.count == count + 100)
        #expect(Set(lines.map { $0.split(separator: "\"")[3] }).count == count + 100)
        #expect(lines.filter { $0.contains(#""topic":"com.example.weather""#) }.count == 100)
        #expect(lines.filter { $0.contains(#""topic":"com.example.legacy""#) }.count == count)

        // A broken file keeps the routes running.
        _ = try scratch.write(
            Array(
                #"{"routes":[{"senderTopic":"x","authKey":"keys/a.p8","keyId":"short","teamId":"DEF123GHIJ"}]}"#.utf8),
            named: "routes.json")
        bridge.spawned.send(SIGHUP)
        let refused = bridge.waitForLine { $0.hasPrefix("routes not reloaded") }
        #expect(
            refused
                == "routes not reloaded, the old ones stay: \(routesFile): route 1: keyId 'short' is not 10 characters "
                + "A-Z and 0-9")
        let still = await Self.send(
            port, try Self.input(count + 101...count + 110, in: scratch, named: "still.jsonl"), cert: "development.p12")
        #expect(still.status == 0, "\(still.stderr)")
        #expect(bridge.interruptAndWait() == 0, "\(bridge.stderr)")
    }

    @Test(arguments: [
        (["--auth-key", "x.p8"], "--routes names each route's upstream credential: leave out --auth-key"),
        (["--upstream-cert", "x.p12"], "--routes names each route's upstream credential: leave out --upstream-cert"),
    ])
    func routesWithASingleCredentialFlagIsAUsageError(extra: [String], message: String) async throws {
        let scratch = try ScratchDirectory()
        _ = try scratch.write(Fixtures.bytes(Fixtures.certs("AuthKey_ABC123DEFG.p8")), named: "a.p8")
        let routesFile = try scratch.write(
            Array(
                #"{"routes":[{"senderTopic":"x","authKey":"a.p8","keyId":"ABC123DEFG","teamId":"DEF123GHIJ"}]}"#.utf8),
            named: "routes.json")
        let result = await CLIRunner.run(["bridge", "--routes", routesFile] + extra)
        #expect(result.status == 2)
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    @Test func aBrokenRoutesFileAtStartIsOneErrorLine() async throws {
        let scratch = try ScratchDirectory()
        let routesFile = try scratch.write(Array(#"{"routes":[{"senderTopic":"x"}]}"#.utf8), named: "routes.json")
        let result = await CLIRunner.run(["bridge", "--routes", routesFile])
        #expect(result.status == 2)
        #expect(result.stderr.contains("\(routesFile): route 1: no upstream credential"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
    }
}
