import APNsCore
import APNsRuntime
import Foundation
import HTTP2Client
import TestSupport
import Testing

/// ``ProviderClient`` against servers that misbehave after a good TLS handshake: garbage instead of
/// HTTP/2, silence, GOAWAY storms, endless SETTINGS, reasons nobody knows. Whatever the server
/// does, the send ends (a bounded wait guards each test), every notification ends in exactly one
/// bucket, and the report names the cause.
@Suite struct ProviderClientHostileServerTests {
    static func configuration(_ server: HostileProviderServer) -> ProviderClient.Configuration {
        var configuration = ProviderClientSimulatorTests.configuration(server.endpoint, auth: .certificate)
        configuration.delivery.requestTimeout = .milliseconds(300)
        configuration.delivery.maximumAttempts = 2
        configuration.delivery.reconnect = ReconnectPolicy(
            initialDelay: .milliseconds(5), maximumConsecutiveFailures: 3)
        return configuration
    }

    /// Sends `1...count` and waits at most `seconds` for the report (nil: the send never ended).
    static func send(_ count: Int, through server: HostileProviderServer, seconds: Double = 60) async throws
        -> ProviderSendReport?
    {
        let client = try ProviderClient(configuration: configuration(server))
        let result = Locked<ProviderSendReport?>(nil)
        let requests = (1...count).map(ProviderClientSimulatorTests.request)
        Task { result.set(await client.send(requests)) }
        let deadline = Monotonic.now() + seconds
        while Monotonic.now() < deadline {
            if let report = result.get() { return report }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("the send did not end within \(seconds) s")
        return nil
    }

    static func checkBuckets(
        _ report: ProviderSendReport, count: Int, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(report.sent == count, sourceLocation: sourceLocation)
        #expect(
            report.accepted + report.rejected.count + report.unconfirmed.count == count, "\(report)",
            sourceLocation: sourceLocation)
        let positions = report.rejected.map(\.position) + report.unconfirmed.map(\.position)
        #expect(
            Set(positions).count == positions.count, "a notification in two buckets", sourceLocation: sourceLocation)
    }

    @Test func garbageAfterTheHandshakeIsAProtocolErrorNamedInTheReport() async throws {
        let server = try HostileProviderServer { tls, server in
            server.write(Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".utf8), to: tls)
            server.write((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 37) }, to: tls)
            server.discardInput(from: tls, seconds: 5)
        }
        defer { server.stop() }
        let report = try #require(try await Self.send(20, through: server))
        Self.checkBuckets(report, count: 20)
        #expect(report.accepted == 0)
        // This server never sends SETTINGS, so each connection sent one request (one stream until
        // the SETTINGS arrive) before the garbage came: those have an unknown fate, the others were
        // never sent. The cause is named, by the report's failure when the reconnect budget ran out
        // first, else by each one.
        #expect(report.unconfirmed.count == 20)
        #expect((1...server.connections.get()).contains(report.unknownFate.count), "\(report)")
        #expect(report.notSent.count == 20 - report.unknownFate.count)
        let named = report.failure?.reason ?? report.unconfirmed.first?.why ?? ""
        #expect(named.contains("HTTP/2") || named.contains("protocol") || named.contains("closed"), "\(named)")
        #expect(server.connections.get() <= 3)  // the reconnect budget, then it stops
    }

    @Test func aServerThatNeverAnswersEndsWithEveryNotificationUnconfirmedAndWhy() async throws {
        // TLS completes, then nothing: no SETTINGS, no answers; what the client sends is read and
        // dropped.
        let server = try HostileProviderServer { tls, server in
            server.discardInput(from: tls, seconds: 30)
        }
        defer { server.stop() }
        let report = try #require(try await Self.send(10, through: server))
        Self.checkBuckets(report, count: 10)
        #expect(report.accepted == 0)
        #expect(report.unconfirmed.count + report.rejected.count == 10)
        let whys = report.unconfirmed.map(\.why) + [report.failure?.reason].compactMap { $0 }
        #expect(!whys.isEmpty && whys.allSatisfy { !$0.isEmpty }, "\(report)")
    }

    @Test func aGoawayStormOnEveryConnectionStopsAfterTheBudgetWithNothingDelivered() async throws {
        // A valid preface, then hundreds of GOAWAY frames that process nothing (last stream 0).
        let storm =
            HostileProviderServer.settings(maximumConcurrentStreams: 100) + HostileProviderServer.settingsAck
            + (0..<500).flatMap { index in
                HostileProviderServer.goaway(
                    lastStreamID: 0, errorCode: UInt32(index % 3), debugData: Array(#"{"reason":"Shutdown"}"#.utf8))
            }
        let server = try HostileProviderServer { tls, server in
            server.write(storm, to: tls)
            server.discardInput(from: tls, seconds: 5)
        }
        defer { server.stop() }
        let report = try #require(try await Self.send(50, through: server))
        Self.checkBuckets(report, count: 50)
        #expect(report.accepted == 0)
        // Streams above last-stream-id 0 were never processed: certainly not delivered.
        #expect(report.unknownFate.isEmpty, "\(report)")
        #expect(report.notSent.count + report.rejected.count == 50)
        let reason = (report.failure?.reason ?? "") + report.unconfirmed.map(\.why).joined()
        #expect(reason.contains("GOAWAY") || reason.contains("Shutdown"), "\(report)")
        #expect(server.connections.get() <= 10)
    }

    @Test func endlessSettingsNeitherHangTheClientNorLoseANotification() async throws {
        // SETTINGS frames as fast as the socket takes them, the stream limit changing each time,
        // and no answers: the client must still time its requests out and end.
        let server = try HostileProviderServer { tls, server in
            guard server.write(HostileProviderServer.settings(maximumConcurrentStreams: 10), to: tls) else { return }
            var limit: UInt32 = 1
            let deadline = Monotonic.now() + 30
            while Monotonic.now() < deadline {
                let burst = (0..<256).flatMap { _ in
                    limit = limit % 50 + 1
                    return HostileProviderServer.settings(maximumConcurrentStreams: limit)
                }
                guard server.write(burst, to: tls), server.discardInput(from: tls, seconds: 0) else { return }
            }
        }
        defer { server.stop() }
        let report = try #require(try await Self.send(20, through: server))
        Self.checkBuckets(report, count: 20)
        #expect(report.accepted == 0)
        let named = report.failure?.reason ?? report.unconfirmed.first?.why ?? ""
        #expect(!named.isEmpty, "\(report)")
        // At least the first burst of 256 SETTINGS (15 bytes each) went to the client, which then
        // ended the connection itself (nghttp2 refuses a flood) or timed its requests out.
        #expect(server.bytesWritten.get() >= 15 + 256 * 15)
    }

    @Test func reasonsNobodyKnowsSurviveAsOpenValues() async throws {
        let server = try HostileProviderServer { tls, server in
            let responder = ScriptedResponder { hex in
                let index = Int(hex.suffix(4), radix: 16) ?? 0
                switch index % 5 {
                case 0: return (200, [])
                case 1: return (400, Array(#"{"reason":"QuantumEntanglementLost"}"#.utf8))
                case 2: return (410, Array(#"{"reason":"GoneFishing","timestamp":1700000000999,"x":{}}"#.utf8))
                case 3: return (403, Array("<html>forbidden</html>".utf8))  // not JSON at all
                default: return (418, Array(#"{"reason":"\u00e9t\u00e9 \ud83c\udf1e","timestamp":-1}"#.utf8))
                }
            }
            guard let session = try? HTTP2Session(role: .server, delegate: responder) else { return }
            responder.session = session
            _ = try? HTTP2TLSDriver(tls: tls, session: session).run(timeout: 20)
        }
        defer { server.stop() }
        let report = try #require(try await Self.send(25, through: server))
        Self.checkBuckets(report, count: 25)
        #expect(report.accepted == 5)
        #expect(report.unconfirmed.isEmpty, "\(report)")
        let byKind = Dictionary(grouping: report.rejected) { Int($0.position) % 5 }
        #expect(byKind[1]?.allSatisfy { $0.status == 400 && $0.reason?.rawValue == "QuantumEntanglementLost" } == true)
        #expect(byKind[1]?.first?.reason?.status == nil)  // not in Apple's table, kept as itself
        #expect(
            byKind[2]?.allSatisfy {
                $0.status == 410 && $0.reason?.rawValue == "GoneFishing" && $0.timestamp == 1_700_000_000_999
            } == true)
        #expect(byKind[3]?.allSatisfy { $0.status == 403 && $0.reason == nil } == true)
        #expect(
            byKind[4]?.allSatisfy { $0.status == 418 && $0.reason?.rawValue == "été 🌞" && $0.timestamp == nil } == true)
        #expect(report.rejected.count == 20)
    }
}
