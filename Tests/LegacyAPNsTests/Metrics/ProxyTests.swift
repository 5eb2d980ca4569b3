import APNsCore
import APNsRuntime
import Foundation
import GatewaySimulator
import HTTP2Client
import LegacyBridge
import TestSupport
import Testing

/// A real HTTP proxy, Debian's `tinyproxy`, started and stopped by the test on a free loopback
/// port, allowing CONNECT only to `allowedPort`, with Basic authentication when `credentials` are
/// given. Its log (stdout) shows the tunnels it opened.
final class Tinyproxy {
    let program: BackgroundProgram
    let endpoint: Endpoint
    private let scratch: ScratchDirectory

    init(allowedPort: UInt16, credentials: (String, String)? = nil) throws {
        let tool = try #require(ExternalProgram.tinyproxy.locate())
        scratch = try ScratchDirectory()
        let port = try Listener(host: "127.0.0.1", port: 0).endpoint.port
        var configuration = """
            Port \(port)
            Listen 127.0.0.1
            Timeout 30
            MaxClients 20
            LogLevel Info
            ConnectPort \(allowedPort)
            DisableViaHeader Yes

            """
        if let (user, password) = credentials { configuration += "BasicAuth \(user) \(password)\n" }
        let file = try scratch.write(Array(configuration.utf8), named: "tinyproxy.conf")
        program = try BackgroundProgram(tool, ["-d", "-c", file])
        endpoint = Endpoint(host: "127.0.0.1", port: port)
        try #require(
            ProviderClientTests.waitUntilListening(port), "tinyproxy did not start: \(program.standardOutput)")
    }

    /// Whether the proxy logged a CONNECT to `port`.
    func tunnelled(to port: UInt16) -> Bool {
        program.standardOutput.contains("CONNECT 127.0.0.1:\(port) ")
    }

    deinit { program.stop() }
}

@Suite struct ProxyTests {
    static func requests(_ range: ClosedRange<Int>) -> [ProviderRequest] {
        range.map { index in
            try! ProviderRequest(
                deviceToken: TestGateway.notification(index).token,
                payload: TestGateway.notification(index).payload, topic: "com.example.legacy", pushType: .alert)
        }
    }

    static func client(_ endpoint: Endpoint, proxy: ProviderProxy?) throws -> ProviderClient {
        var configuration = BridgeFixture.upstream(endpoint)
        configuration.proxy = proxy
        return try ProviderClient(configuration: configuration)
    }

    @Test func theClientTunnelsThroughTinyproxyWithAndWithoutBasicAuth() async throws {
        try await withProviderSimulator { upstream in
            let open = try Tinyproxy(allowedPort: upstream.endpoint.port)
            let plain = try Self.client(upstream.endpoint, proxy: ProviderProxy(endpoint: open.endpoint))
            let report = await plain.send(Self.requests(1...50))
            await plain.shutdown()
            #expect(report.failure == nil, "\(report.failure?.reason ?? "")")
            #expect(report.accepted == 50)
            #expect(open.tunnelled(to: upstream.endpoint.port), "\(open.program.standardOutput)")

            let guarded = try Tinyproxy(allowedPort: upstream.endpoint.port, credentials: ("user", "s3cret"))
            let proxy = try ProviderProxy(url: "http://user:s3cret@\(guarded.endpoint)/")
            let authenticated = try Self.client(upstream.endpoint, proxy: proxy)
            let second = await authenticated.send(Self.requests(51...60))
            await authenticated.shutdown()
            #expect(second.failure == nil, "\(second.failure?.reason ?? "")")
            #expect(second.accepted == 10)
            #expect(guarded.tunnelled(to: upstream.endpoint.port))
        }
    }

    /// The proxy's refusal is one error naming the proxy and its status line, and stops the send
    /// at once: no retries against a proxy that will say the same again.
    @Test func aRefusingProxyIsOneErrorLineAndExit3() async throws {
        try await withProviderSimulator { upstream in
            let port = upstream.endpoint.port
            let guarded = try Tinyproxy(allowedPort: port, credentials: ("user", "s3cret"))
            let elsewhere = try Tinyproxy(allowedPort: port == 1 ? 2 : port - 1)
            let cases: [(String, String)] = [
                ("http://\(guarded.endpoint)", "407 Proxy Authentication Required"),
                // tinyproxy answers a wrong password 401 (and in HTTP/1.0): its words are printed as they came.
                ("http://user:wrong@\(guarded.endpoint)", "401 Unauthorized"),
                ("http://\(elsewhere.endpoint)", "403 "),
            ]
            for (url, status) in cases {
                let result = try CLIRunner.runBinary(Self.send(to: upstream.endpoint) + ["--proxy", url])
                #expect(result.status == 3, "\(result.stderr)")
                let errors = result.errorLines.filter { $0.hasPrefix("legacy-push: error:") }
                #expect(errors.count == 1, "\(result.stderr)")
                let proxyAddress = url.split(separator: "@").last!.replacingOccurrences(of: "http://", with: "")
                #expect(
                    errors.first?.hasPrefix(
                        "legacy-push: error: the proxy \(proxyAddress) refused the tunnel to 127.0.0.1:\(port): HTTP/1."
                    )
                        == true, "\(result.stderr)")
                #expect(errors.first?.contains(" \(status)") == true, "\(result.stderr)")
                #expect(!result.stderr.contains("wrong"), "the password must not be printed")
            }
            #expect(upstream.recorder.accepted.isEmpty)
        }
    }

    /// Without --proxy, HTTPS_PROXY applies unless NO_PROXY names the host.
    @Test func theEnvironmentsProxyIsUsedUnlessNoProxyNamesTheHost() async throws {
        try await withProviderSimulator { upstream in
            let proxy = try Tinyproxy(allowedPort: upstream.endpoint.port, credentials: ("user", "s3cret"))
            let url = "http://user:s3cret@\(proxy.endpoint)"
            let through = try CLIRunner.runBinary(Self.send(to: upstream.endpoint), environment: ["HTTPS_PROXY": url])
            #expect(through.status == 0, "\(through.stderr)")
            #expect(proxy.tunnelled(to: upstream.endpoint.port))
            // A proxy that would refuse everything, which NO_PROXY bypasses.
            let closed = try Listener(host: "127.0.0.1", port: 0).endpoint
            let direct = try CLIRunner.runBinary(
                Self.send(to: upstream.endpoint),
                environment: ["https_proxy": "http://\(closed)", "NO_PROXY": "example.com, 127.0.0.1"])
            #expect(direct.status == 0, "\(direct.stderr)")
            #expect(upstream.recorder.accepted.count == 2)
        }
    }

    /// The bridge's upstream goes through the proxy too.
    @Test func theBridgeDeliversThroughTheProxy() async throws {
        try await withProviderSimulator { upstream in
            let proxy = try Tinyproxy(allowedPort: upstream.endpoint.port, credentials: ("user", "s3cret"))
            let scratch = try ScratchDirectory()
            var configuration = BridgeFixture.configuration(
                upstream: upstream.endpoint, store: scratch.file("bridge.sqlite"))
            configuration.upstream.proxy = try ProviderProxy(url: "http://user:s3cret@\(proxy.endpoint)")
            let bridge = try Bridge(configuration: configuration)
            try await bridge.withRunning { endpoints in
                let fixture = BridgeFixture(bridge: bridge, endpoints: endpoints, upstream: nil, events: Locked([]))
                let report = try await fixture.client().send((1...100).map { TestGateway.notification($0) })
                #expect(report.failure == nil)
                #expect(report.accepted == 100)
                #expect(upstream.recorder.accepted.count == 100)
                #expect(proxy.tunnelled(to: upstream.endpoint.port))
            }
        }
    }

    /// `bridge --proxy`: the listening line names the proxy; senders' notifications go through it.
    @Test func theBridgeCommandTakesAProxy() async throws {
        let scratch = try ScratchDirectory()
        let (server, upstreamPort) = try BridgeCommandTests.upstream([])
        defer { _ = server.interruptAndWait() }
        let proxy = try Tinyproxy(allowedPort: UInt16(upstreamPort)!, credentials: ("user", "s3cret"))
        let bridge = try ChildProcess([
            "bridge", "--port", "0", "--no-feedback", "--upstream", "127.0.0.1:\(upstreamPort)", "--upstream-ca-file",
            BridgeCommandTests.ca, "--auth-key", BridgeCommandTests.p8, "--team-id", "DEF123GHIJ", "--store",
            scratch.file("bridge.sqlite"), "--proxy", "http://user:s3cret@\(proxy.endpoint)",
        ])
        let listening = try #require(bridge.waitForLine { $0.hasPrefix("listening on ") }, "\(bridge.stderr)")
        #expect(listening.hasSuffix("bridging to 127.0.0.1:\(upstreamPort) through http://\(proxy.endpoint))"))
        let port = String(listening.dropFirst("listening on 127.0.0.1:".count).prefix { $0.isNumber })
        let sent = await BridgeCommandTests.sender([
            "send", "--gateway", "127.0.0.1:\(port)", "--token", String(repeating: "ab", count: 32), "--alert", "hi",
        ])
        #expect(sent.status == 0, "\(sent.stderr)")
        #expect(proxy.tunnelled(to: UInt16(upstreamPort)!))
        #expect(bridge.interruptAndWait() == 0)
        #expect(!bridge.stderr.contains("s3cret"))
    }

    @Test(
        arguments: [
            ("http://proxy.internal:3128", "proxy.internal", 3128, nil, nil),
            ("http://a%40b:p%3Ass@10.0.0.1:8080/", "10.0.0.1", 8080, "a@b", "p:ss"),
            ("http://user@[::1]:3128", "::1", 3128, "user", ""),
        ] as [(String, String, UInt16, String?, String?)])
    func proxyURLsAreParsed(url: String, host: String, port: UInt16, user: String?, password: String?) throws {
        let proxy = try ProviderProxy(url: url)
        #expect(proxy.endpoint == Endpoint(host: host, port: port))
        #expect(proxy.username == user)
        #expect(proxy.password == password)
        #expect(!proxy.description.contains("@"))
    }

    @Test(arguments: [
        ("proxy.internal:3128", "takes a URL"), ("https://proxy:443", "must be an http:// URL"),
        ("http://proxy", "needs a port"), ("http://proxy:3128/path", "takes no path"),
        ("http://us%zzer@proxy:1", "broken %-escape"),
    ])
    func badProxyURLsSayWhatToChange(url: String, problem: String) {
        #expect {
            try ProviderProxy(url: url, naming: "--proxy")
        } throws: { error in
            let reason = (error as? LegacyAPNsError)?.reason ?? ""
            return reason.hasPrefix("--proxy") && reason.contains(problem)
        }
    }

    @Test func noProxyExcludesHostsAndTheirSubdomains() throws {
        let environment = ["HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "internal.example, .corp, 10.0.0.1:443"]
        #expect(try ProviderProxy.fromEnvironment(environment, for: "api.push.apple.com") != nil)
        #expect(try ProviderProxy.fromEnvironment(environment, for: "internal.example") == nil)
        #expect(try ProviderProxy.fromEnvironment(environment, for: "a.internal.example") == nil)
        #expect(try ProviderProxy.fromEnvironment(environment, for: "x.corp") == nil)
        #expect(try ProviderProxy.fromEnvironment(environment, for: "10.0.0.1") == nil)
        #expect(try ProviderProxy.fromEnvironment(environment, for: "notinternal.example") != nil)
        #expect(try ProviderProxy.fromEnvironment(["https_proxy": "http://p:1", "no_proxy": "*"], for: "a") == nil)
        #expect(try ProviderProxy.fromEnvironment([:], for: "a") == nil)
    }

    /// `send --http2` to `endpoint` with the fixture key, one notification.
    static func send(to endpoint: Endpoint) -> [String] {
        [
            "send", "--http2", "--gateway", "\(endpoint)", "--ca-file", Fixtures.certs("ca.pem"), "--auth-key",
            Fixtures.certs("AuthKey_ABC123DEFG.p8"), "--team-id", "DEF123GHIJ", "--topic", "com.example.legacy",
            "--token", String(repeating: "ab", count: 32), "--alert", "hello", "--retries", "2",
        ]
    }
}
