import APNsCore
import APNsCredentials
import APNsRuntime
import Foundation
import TestSupport
import Testing

/// HTTP2Session over real TLS on loopback, checked against nghttp2's own tools and curl: our server
/// answers `curl --http2` and `nghttp`, our client talks to `nghttpd`, and ALPN and optional client
/// certificates behave as the provider API needs.
@Suite struct HTTP2LoopbackTests {
    static let hex = "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad"
    static let id = "123e4567-e89b-12d3-a456-4266554400a0"
    static let payload = Array(#"{"aps":{"alert":"hello"}}"#.utf8)

    static func clientContext(identity: ClientIdentity? = nil, protocols: [String] = ["h2"]) throws -> TLSContext {
        try TLSContext.client(
            TLSConfiguration(identity: identity, trust: .certificates(TestGateway.ca)), applicationProtocols: protocols)
    }

    @Test func curlPostsOverHTTP2AndGetsTheAPNsAnswers() throws {
        guard let curl = ExternalProgram.curl.locate() else { return }
        let server = try HTTP2TestServer()
        defer { server.stop() }
        let base = "https://127.0.0.1:\(server.endpoint.port)/3/device/"
        let common = [
            "--http2", "--silent", "--show-error", "--max-time", "20", "--cacert", Fixtures.certs("ca.pem"),
            "-H", "apns-topic: com.example.app", "-H", "apns-push-type: alert", "--data-binary", "@-",
        ]
        let accepted = try CLIRunner.runProcess(
            curl,
            common + [
                "-H", "apns-id: \(Self.id)", "-o", "/dev/null", "-w", "%{http_version} %{http_code} %header{apns-id}",
                base + Self.hex,
            ],
            stdin: Self.payload)
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(accepted.output == "2 200 \(Self.id)")

        let refused = try CLIRunner.runProcess(
            curl, common + ["-w", " %{http_code}", base + "abc"], stdin: Self.payload)
        #expect(refused.output == #"{"reason":"BadDeviceToken"} 400"#)

        let connections = server.finishedConnections(2)
        #expect(connections.map(\.applicationProtocol) == ["h2", "h2"])
        #expect(connections.allSatisfy { $0.peerTopics == nil && $0.sessionError == nil })
        let request = try #require(connections.flatMap(\.requests).first)
        #expect(request.deviceToken.hexString == Self.hex)
        #expect(request.payload.bytes == Self.payload)
        #expect(request.apnsID == APNsID(Self.id))
    }

    @Test func nghttpPostsAndSeesStatus200() throws {
        guard let nghttp = ExternalProgram.nghttp.locate() else { return }
        let server = try HTTP2TestServer()
        defer { server.stop() }
        let result = try CLIRunner.runProcess(
            nghttp,
            [
                "-v", "-y", "-t", "20", "-H", "apns-topic: com.example.app", "-H", "apns-push-type: alert", "-d", "-",
                "https://127.0.0.1:\(server.endpoint.port)/3/device/\(Self.hex)",
            ], stdin: Self.payload)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.output.contains(":status: 200"), "\(result.output)")
        #expect(result.output.contains("apns-id: "))
        let connection = try #require(server.finishedConnections(1).first)
        #expect(connection.applicationProtocol == "h2")
        #expect(connection.requests.count == 1)
        #expect(connection.sessionError == nil)
    }

    @Test func ourClientTalksToNghttpd() throws {
        guard let nghttpd = ExternalProgram.nghttpd.locate() else { return }
        let port = try Listener(host: "127.0.0.1", port: 0).endpoint.port  // free now, closed again at once
        let root = try ScratchDirectory()
        let daemon = try BackgroundProgram(
            nghttpd,
            [
                "-v", "--echo-upload", "-d", root.path, String(port), Fixtures.certs("server.key"),
                Fixtures.certs("server.pem"),
            ])
        defer { daemon.stop() }
        try #require(
            daemon.waitForOutput(containing: "listen 0.0.0.0:\(port)"), "nghttpd did not start: \(daemon.standardError)"
        )

        let tls = try TLSSession.connect(
            to: Endpoint(host: "127.0.0.1", port: port), context: Self.clientContext(), timeout: 10)
        #expect(tls.applicationProtocol == "h2")
        let recorder = HTTP2Recorder()
        let session = try HTTP2Session(role: .client, delegate: recorder)
        var bodies: [Int32: [UInt8]] = [:]
        for index in 0..<50 {
            var headers = HTTP2HeaderList()
            HTTP2Pair.request(index).writeHeaders(
                into: &headers, authority: "127.0.0.1", isFirstOnConnection: index == 0)
            let body = Array("message \(index) ".utf8) + [UInt8](repeating: UInt8(index), count: index * 1000)
            bodies[try session.submitRequest(headers: headers, body: body)] = body
        }
        let driver = HTTP2TLSDriver(tls: tls, session: session)
        try driver.run(timeout: 20) { recorder.closedStreams.count == 50 }
        #expect(recorder.closedStreams.allSatisfy { $0.1 == .noError })
        for (stream, body) in bodies {
            #expect(recorder.messages[stream]?.value(":status") == "200")
            #expect(recorder.messages[stream]?.value("nghttpd-response") == "echo")
            #expect(recorder.messages[stream]?.body == body, "stream \(stream)")
        }
        try session.terminate()
        try driver.flush(deadline: Monotonic.now() + 5)
        tls.close()
    }

    @Test func aClientOfferingOnlyHTTP1IsRefusedAndBothSidesSayWhy() throws {
        let server = try HTTP2TestServer()
        defer { server.stop() }
        let error = #expect(throws: LegacyAPNsError.self) {
            try TLSSession.connect(
                to: server.endpoint, context: Self.clientContext(protocols: ["http/1.1"]), timeout: 10)
        }
        #expect(error?.code == .handshakeFailed)
        #expect(
            error?.reason
                == "\(server.endpoint) refused the TLS handshake: it speaks none of the protocols offered by ALPN (http/1.1)"
        )
        let refusal = try #require(server.finishedConnections(1).first?.handshakeError)
        #expect(refusal.code == .handshakeFailed)
        #expect(refusal.reason.hasPrefix("client 127.0.0.1:"))
        #expect(
            refusal.reason.hasSuffix(
                "offered only http/1.1 by ALPN; this server speaks h2 (alert no_application_protocol sent)"))
    }

    @Test func aClientOfferingNoALPNIsStillServedHTTP2() throws {
        let server = try HTTP2TestServer()
        defer { server.stop() }
        let tls = try TLSSession.connect(to: server.endpoint, context: Self.clientContext(protocols: []), timeout: 10)
        #expect(tls.applicationProtocol == "")
        let response = try Self.send(HTTP2Pair.request(1), over: tls)
        #expect(response.status == 200)
        let connection = try #require(server.finishedConnections(1).first)
        #expect(connection.applicationProtocol == "")
        #expect(connection.requests.count == 1)
    }

    @Test func aClientCertificateMeansCertificateAuthAndNoneMeansToken() throws {
        let server = try HTTP2TestServer()
        defer { server.stop() }
        let identity = TestGateway.clientIdentity
        let topics = identity.certificate.topics.map(\.name)
        let bundle = try #require(identity.certificate.topic)

        let withCertificate = try TLSSession.connect(
            to: server.endpoint, context: Self.clientContext(identity: identity), timeout: 10)
        #expect(try Self.send(HTTP2Pair.request(1, topic: bundle), over: withCertificate).status == 200)
        let withoutCertificate = try TLSSession.connect(to: server.endpoint, context: Self.clientContext(), timeout: 10)
        #expect(try Self.send(HTTP2Pair.request(2, topic: "com.any.app"), over: withoutCertificate).status == 200)

        let connections = server.finishedConnections(2)
        #expect(connections.compactMap(\.peerTopics) == [topics])
        #expect(connections.filter { $0.peerTopics == nil }.count == 1)

        // With a certificate, its topics rule: another app's topic is refused.
        let again = try TLSSession.connect(
            to: server.endpoint, context: Self.clientContext(identity: identity), timeout: 10)
        let refused = try Self.send(HTTP2Pair.request(3, topic: "com.any.app"), over: again)
        #expect(refused.status == 400 && refused.reason == .topicDisallowed)
    }

    @Test func aClientCertificateFromAnotherCAIsStillVerified() throws {
        let server = try HTTP2TestServer(maximum: .tls12)  // TLS 1.2: the refusal comes in the handshake
        defer { server.stop() }
        let untrusted = try ClientIdentity(
            pkcs12: Fixtures.bytes(Fixtures.certs("untrusted.p12")), passphrase: "secret")
        #expect(throws: LegacyAPNsError.self) {
            try TLSSession.connect(to: server.endpoint, context: Self.clientContext(identity: untrusted), timeout: 10)
        }
        let refusal = try #require(server.finishedConnections(1).first?.handshakeError)
        #expect(refusal.code == .certificateRejected)
    }

    /// Sends one request over a fresh client session and returns the response.
    static func send(_ request: ProviderRequest, over tls: TLSSession) throws -> ProviderResponse {
        let recorder = HTTP2Recorder()
        let session = try HTTP2Session(role: .client, delegate: recorder)
        var headers = HTTP2HeaderList()
        request.writeHeaders(into: &headers, authority: "localhost", isFirstOnConnection: true)
        let stream = try session.submitRequest(headers: headers, body: request.payload.bytes)
        let driver = HTTP2TLSDriver(tls: tls, session: session)
        try driver.run(timeout: 20) { recorder.closedStreams.contains { $0.0 == stream } }
        try session.terminate()
        try driver.flush(deadline: Monotonic.now() + 5)
        tls.close()
        return try #require(recorder.messages[stream]?.response)
    }
}
