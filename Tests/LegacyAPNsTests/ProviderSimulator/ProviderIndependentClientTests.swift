import APNsCore
import APNsCredentials
import APNsRuntime
import Foundation
import GatewaySimulator
import TestSupport
import Testing

/// The simulator judged by clients we did not write: curl (PEM and .p12 client certificates, a
/// PyJWT-made bearer token, and every status/reason row of Apple's table), nghttp (SETTINGS, the
/// stream limit rising from 1, GOAWAY debug data) and aioapns (token and certificate auth, and
/// its handling of a rejection). A missing tool fails the test naming how to install it.
@Suite(.serialized) struct ProviderIndependentClientTests {
    static let payload = Array(#"{"aps":{"alert":"hello"}}"#.utf8)
    static let topic = ["-H", "apns-topic: com.example.legacy"]

    @Test func curlWithTheFixtureCertificateAsPEMAndAsP12() async throws {
        try await withProviderSimulator { fixture in
            let write = ["-w", "%{http_version} %{http_code} %header{apns-id} %header{apns-unique-id}"]
            let pem = try Curl.run(
                Curl.universalPEM + Self.topic + ["--data-binary", "@-", "-o", "/dev/null"] + write + [fixture.url()],
                stdin: Self.payload)
            #expect(pem.status == 0, "\(pem.stderr)")
            let fields = pem.output.split(separator: " ").map(String.init)
            #expect(fields.count == 4 && fields[0] == "2" && fields[1] == "200", "\(pem.output)")
            #expect(fields.count == 4 && APNsID(fields[2]) != nil && APNsID(fields[3]) != nil, "\(pem.output)")

            let p12 = try Curl.run(
                [
                    "--cert-type", "P12", "--cert", Fixtures.certs("universal-modern.p12") + ":secret", "--data-binary",
                    "@-", "-H", "apns-id: 123e4567-e89b-12d3-a456-4266554400a0", "-o", "/dev/null", "-w",
                    "%{http_code} %header{apns-id}", fixture.url(),
                ] + Self.topic, stdin: Self.payload)
            #expect(p12.status == 0, "\(p12.stderr)")
            #expect(p12.output == "200 123e4567-e89b-12d3-a456-4266554400a0")
            #expect(fixture.recorder.accepted.map(\.request.payload.bytes) == [Self.payload, Self.payload])
            #expect(fixture.simulator.statistics.certificateConnections == 2)
        }
    }

    @Test func curlWithAPyJWTBearerToken() async throws {
        try await withProviderSimulator { fixture in
            let token = try ProviderFixture.pyJWTToken()
            let result = try Curl.run(
                [
                    "-H", "authorization: bearer \(token)", "--data-binary", "@-", "-o", "/dev/null", "-w",
                    "%{http_code}",
                ]
                    + Self.topic + [fixture.url()], stdin: Self.payload)
            #expect(result.output == "200", "\(result.stderr)")
            #expect(
                fixture.events.get().contains(.tokenAccepted(connection: 1, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")))
            let refused = try Curl.run(
                ["--data-binary", "@-", "-w", " %{http_code}"] + Self.topic + [fixture.url()], stdin: Self.payload)
            #expect(refused.output == #"{"reason":"MissingProviderToken"} 403"#)
        }
    }

    // MARK: - Every row of Apple's table

    /// Reasons no request can cause by itself (device state, server trouble): asked for with
    /// ``ProviderFaults/failingTokens``, one device token each.
    static let faultReasons: [ProviderReason] = [
        .deviceTokenNotForTopic, .idleTimeout, .badCertificate, .forbidden, .badEnvironmentKeyInToken, .expiredToken,
        .tooManyRequests, .internalServerError, .serviceUnavailable, .shutdown,
    ]

    /// How curl provokes `reason`: its arguments per transfer (the last one must get the reason).
    static func provocation(_ reason: ProviderReason, _ fixture: ProviderFixture) throws -> [[String]] {
        let body = ["--data-binary", #"{"aps":{}}"#]
        let certificate = Curl.universalPEM + body
        func cert(_ extra: [String], _ hex: String = ProviderFixture.hex, path: String = "/3/device/") -> [[String]] {
            [certificate + Self.topic + extra + [fixture.url(hex, path: path)]]
        }
        func bearer(_ token: String) -> [String] { ["-H", "authorization: bearer \(token)"] + body + Self.topic }
        if let index = faultReasons.firstIndex(of: reason) {
            return cert([], ProviderFixture.token(UInt8(index)).hexString)
        }
        switch reason {
        case .badCollapseId: return cert(["-H", "apns-collapse-id: " + String(repeating: "c", count: 65)])
        case .badDeviceToken: return cert([], "abc")
        case .badExpirationDate: return cert(["-H", "apns-expiration: tomorrow"])
        case .badMessageId: return cert(["-H", "apns-id: not-a-uuid"])
        case .badPriority: return cert(["-H", "apns-priority: 7"])
        case .badTopic: return cert(["-H", "apns-push-type: voip"])
        case .duplicateHeaders: return cert(["-H", "apns-priority: 10", "-H", "apns-priority: 10"])
        case .invalidPushType: return cert(["-H", "apns-push-type: telegram"])
        case .missingDeviceToken: return cert([], "")
        case .missingTopic: return [certificate + [fixture.url()]]
        case .payloadEmpty: return [Curl.universalPEM + Self.topic + ["-X", "POST", fixture.url()]]
        case .topicDisallowed: return [certificate + ["-H", "apns-topic: com.other.app", fixture.url()]]
        case .badCertificateEnvironment:
            return [
                ["--cert", Fixtures.certs("production.pem"), "--key", Fixtures.certs("production.key")] + body
                    + Self.topic + [fixture.url()]
            ]
        case .badPath: return cert([], ProviderFixture.hex, path: "/3/devices/")
        case .methodNotAllowed: return [Curl.universalPEM + Self.topic + ["-X", "GET", fixture.url()]]
        case .unregistered: return cert([], ProviderFixture.token(200).hexString)
        case .payloadTooLarge:
            return [
                Curl.universalPEM + Self.topic + ["--data-binary", String(repeating: "x", count: 4097), fixture.url()]
            ]
        case .missingProviderToken: return [body + Self.topic + [fixture.url()]]
        case .invalidProviderToken: return [bearer("e30.e30.c2ln") + [fixture.url()]]
        case .expiredProviderToken:
            let old = try ProviderFixture.pyJWTToken(issuedAt: Int64(Date().timeIntervalSince1970) - 7200)
            return [bearer(old) + [fixture.url()]]
        case .unrelatedKeyIdInToken:
            let first = try ProviderFixture.pyJWTToken()
            let other = try ProviderFixture.pyJWTToken(keyID: "ZYX987WVUT")
            return [bearer(first) + ["-o", "/dev/null", fixture.url()], bearer(other) + [fixture.url()]]
        case .badEnvironmentKeyIdInToken:
            return [bearer(try ProviderFixture.pyJWTToken(keyID: "ZYX987WVUT")) + [fixture.url()]]
        case .tooManyProviderTokenUpdates:
            let first = try ProviderFixture.pyJWTToken()
            let second = try ProviderFixture.pyJWTToken()  // ECDSA signatures differ: a new token
            return [bearer(first) + ["-o", "/dev/null", fixture.url()], bearer(second) + [fixture.url()]]
        default:
            Issue.record("no provocation for \(reason)")
            return []
        }
    }

    @Test func everyStatusAndReasonOfApplesTableIsProvokedByCurl() async throws {
        try await withProviderSimulator { configuration in
            for (index, reason) in Self.faultReasons.enumerated() {
                configuration.faults.failingTokens[ProviderFixture.token(UInt8(index))] = reason
            }
            configuration.faults.unregisteredTokens[ProviderFixture.token(200)] = .milliseconds(1_700_000_000_000)
            // The second key may only be used in production: this simulator is development.
            configuration.authKeys[1].environment = .production
        } _: { fixture in
            var seen: [String] = []
            for reason in ProviderReason.allKnown {
                let transfers = try Self.provocation(reason, fixture)
                guard !transfers.isEmpty else { continue }
                var arguments: [String] = []
                for (number, transfer) in transfers.enumerated() {
                    // --next starts a transfer with fresh options (the connection is reused).
                    if number > 0 { arguments += ["--next", "--http2", "--cacert", Fixtures.certs("ca.pem")] }
                    arguments += transfer
                }
                arguments.insert(contentsOf: ["-w", "\n%{http_code}"], at: arguments.count - 1)
                let result = try Curl.run(arguments)
                let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
                let status = Int(lines.last ?? "")
                let body = lines.count >= 2 ? lines[lines.count - 2] : ""
                let decoded = try? ProviderResponse.decodeBody(Array(body.utf8)).get()
                #expect(status == reason.status, "\(reason): \(result.output) \(result.stderr)")
                #expect(decoded?.reason == reason, "\(reason): \(result.output) \(result.stderr)")
                if reason.status == 410 { #expect(decoded?.timestamp != nil, "\(reason): \(body)") }
                seen.append("\(status ?? 0) \(decoded?.reason?.rawValue ?? "?")")
            }
            #expect(seen.count == ProviderReason.allKnown.count)
            let statistics = fixture.simulator.statistics
            #expect(Set(statistics.rejected.keys) == Set(ProviderReason.allKnown))
        }
    }

    // MARK: - nghttp

    @Test func nghttpSeesTheStreamLimitRiseFromOneAndTheGoawayReason() throws {
        guard let nghttp = ExternalProgram.nghttp.locate() else { return }
        let server = try ChildProcess([
            "serve", "--http2", "--port", "0", "--max-streams", "750", "--goaway-after", "1", "--auth-key",
            "ABC123DEFG:DEF123GHIJ:" + Fixtures.certs("AuthKey_ABC123DEFG.p8"),
        ])
        let listening = try #require(server.waitForLine { $0.hasPrefix("listening on ") }, "\(server.stderr)")
        #expect(listening.hasSuffix(" (HTTP/2)"))
        let port = listening.split(separator: ":").last!.split(separator: " ").first!
        let token = try ProviderFixture.pyJWTToken()
        let result = try CLIRunner.runProcess(
            nghttp,
            [
                "-v", "-t", "20", "-H", "authorization: bearer \(token)", "-H",
                "apns-topic: com.example.legacy", "-d", "-",
                "https://localhost:\(port)/3/device/\(ProviderFixture.hex)",
            ], stdin: Self.payload)
        #expect(server.interruptAndWait() == 0)
        let output = result.output
        #expect(output.contains(":status: 200"), "\(output)")
        let one = try #require(output.range(of: "[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):1]"), "\(output)")
        let raised = try #require(output.range(of: "[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):750]"), "\(output)")
        #expect(one.lowerBound < raised.lowerBound)
        #expect(output.contains(#"recv GOAWAY frame"#))
        #expect(
            output.contains(
                #"(last_stream_id=13, error_code=NO_ERROR(0x00), opaque_data(21)=[{"reason":"Shutdown"}])"#),
            "\(output)")
        #expect(server.stderr.contains("stopped: 1 connection, 1 accepted, 0 rejected, 1 GOAWAY"), "\(server.stderr)")
    }

    // MARK: - aioapns

    static let aioapnsProgram = #"""
        import asyncio, json, ssl, sys
        from aioapns import APNs, NotificationRequest
        from aioapns.connection import APNsDevelopmentClientProtocol, APNsProductionClientProtocol

        port, ca, key, combined, good, bad = sys.argv[1:7]
        for protocol in (APNsDevelopmentClientProtocol, APNsProductionClientProtocol):
            protocol.APNS_SERVER = "localhost"
            protocol.APNS_PORT = int(port)

        async def main():
            rejected = []
            async def on_error(request, result):
                rejected.append({"id": request.notification_id, "status": result.status, "reason": result.description})
            token = APNs(key=open(key).read(), key_id="ABC123DEFG", team_id="DEF123GHIJ", topic="com.example.legacy",
                         use_sandbox=True, ssl_context=ssl.create_default_context(cafile=ca), err_func=on_error,
                         max_connection_attempts=1)
            cert = APNs(client_cert=combined, use_sandbox=True, ssl_context=ssl.create_default_context(cafile=ca),
                        err_func=on_error, max_connection_attempts=1)
            results = {}
            for name, client, device in (("token", token, good), ("tokenRejected", token, bad),
                                         ("certificate", cert, good), ("certificateRejected", cert, bad)):
                result = await asyncio.wait_for(client.send_notification(NotificationRequest(
                    device_token=device, message={"aps": {"alert": name}},
                    notification_id="123e4567-e89b-12d3-a456-42665544000" + str(len(results)))), 20)
                results[name] = {"ok": result.is_successful, "status": result.status,
                                 "reason": result.description, "id": result.notification_id}
            results["errFunc"] = rejected
            print(json.dumps(results))

        asyncio.run(main())
        """#

    @Test func aioapnsSendsWithTokenAndCertificateAuthAndHandlesARejection() throws {
        let bad = ProviderFixture.token(9).hexString
        let server = try ChildProcess([
            "serve", "--http2", "--port", "0", "--fail-token", "\(bad):BadDeviceToken", "--auth-key",
            "ABC123DEFG:DEF123GHIJ:" + Fixtures.certs("AuthKey_ABC123DEFG.pub.pem"),
        ])
        let listening = try #require(server.waitForLine { $0.hasPrefix("listening on ") }, "\(server.stderr)")
        let port = String(listening.split(separator: ":").last!.split(separator: " ").first!)
        let result = try PythonTools.run(
            Self.aioapnsProgram,
            arguments: [
                port, Fixtures.certs("ca.pem"), Fixtures.certs("AuthKey_ABC123DEFG.p8"),
                Fixtures.certs("universal-combined.pem"), ProviderFixture.hex, bad,
            ])
        #expect(server.interruptAndWait() == 0)
        #expect(result.status == 0, "\(result.stderr)")
        let object = try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [String: Any]
        let outcome = try #require(object, "\(result.output) \(result.stderr)")
        func field(_ name: String, _ key: String) -> String? {
            ((outcome[name] as? [String: Any])?[key]).map { "\($0)" }
        }
        #expect(field("token", "ok") == "1" && field("token", "status") == "200", "\(outcome)")
        #expect(field("certificate", "ok") == "1" && field("certificate", "status") == "200", "\(outcome)")
        for name in ["tokenRejected", "certificateRejected"] {
            #expect(field(name, "ok") == "0" && field(name, "status") == "400", "\(outcome)")
            #expect(field(name, "reason") == "BadDeviceToken", "\(outcome)")
        }
        #expect((outcome["errFunc"] as? [Any])?.count == 2, "\(outcome)")
        #expect(server.stderr.contains("token auth"))
        #expect(
            server.stderr.contains("stopped: 2 connections, 2 accepted, 2 rejected (BadDeviceToken 2)"),
            "\(server.stderr)")
    }
}
