import APNsCore
import APNsCredentials
import APNsRuntime
import Foundation
import GatewaySimulator
import TestSupport
import Testing

/// An embedded ``ProviderSimulator`` on a free loopback port with the fixture certificates (the
/// server identity, client certificates chaining to the test CA), the fixture keys accepted for
/// token auth, a memory recorder and an event log; plus the independent judges' inputs.
struct ProviderFixture: Sendable {
    let simulator: ProviderSimulator
    let endpoint: Endpoint
    let recorder: MemoryProviderRecorder
    let events: Locked<[ProviderSimulatorEvent]>

    static let chain = Certificate.certificates(pemRepresentation: Fixtures.bytes(Fixtures.certs("chain.pem")))
    static let teamID = ProviderPair.teamID
    static let hex = String(repeating: "ab", count: 32)

    /// `https://127.0.0.1:<port>/3/device/<hex>`.
    func url(_ hex: String = ProviderFixture.hex, path: String = "/3/device/") -> String {
        "https://127.0.0.1:\(endpoint.port)\(path)\(hex)"
    }

    /// A device token whose last byte is `index` (64 hex digits).
    static func token(_ index: UInt8) -> DeviceToken {
        var bytes = [UInt8](repeating: 0xCD, count: 32)
        bytes[31] = index
        return try! DeviceToken(bytes: bytes)
    }

    /// A provider token made by PyJWT (the independent signer) for the fixture key `keyID`.
    static func pyJWTToken(keyID: String = "ABC123DEFG", issuedAt: Int64 = Int64(Date().timeIntervalSince1970)) throws
        -> String
    {
        let result = try PythonTools.run(
            """
            import jwt, sys
            print(jwt.encode({"iss": sys.argv[3], "iat": int(sys.argv[4])}, open(sys.argv[1]).read(),
                             algorithm="ES256", headers={"kid": sys.argv[2]}))
            """,
            arguments: [Fixtures.certs("AuthKey_\(keyID).p8"), keyID, teamID, String(issuedAt)])
        guard result.status == 0 else { throw PythonTools.InstallationFailed(description: result.stderr) }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Runs `body` with a started simulator, configured by `configure`, and stops it however `body` ends.
func withProviderSimulator<Result>(
    configure: (inout ProviderSimulator.Configuration) -> Void = { _ in },
    isolation: isolated (any Actor)? = #isolation, _ body: (ProviderFixture) async throws -> Result
) async throws -> Result {
    var configuration = ProviderSimulator.Configuration(
        identity: TestGateway.serverIdentity, clientTrust: ProviderFixture.chain)
    configuration.authKeys = ProviderPair.authKeys
    configuration.recordingInterval = .zero
    let recorder = MemoryProviderRecorder()
    let events = Locked<[ProviderSimulatorEvent]>([])
    configuration.recorder = recorder
    configuration.events = { event in events.update { $0.append(event) } }
    configure(&configuration)
    let simulator = try ProviderSimulator(configuration: configuration)
    return try await simulator.withRunning { endpoint in
        try await body(ProviderFixture(simulator: simulator, endpoint: endpoint, recorder: recorder, events: events))
    }
}

/// `curl --http2` against the simulator, with the test CA and, when given, a client certificate.
enum Curl {
    /// Runs curl with `arguments` and the common flags; stdout is the body and then `-w`'s text.
    static func run(_ arguments: [String], stdin: [UInt8] = []) throws -> CLIRunner.Result {
        guard let curl = ExternalProgram.curl.locate() else {
            throw PythonTools.InstallationFailed(description: "curl is not installed")
        }
        return try CLIRunner.runProcess(
            curl,
            ["--http2", "--silent", "--show-error", "--max-time", "20", "--cacert", Fixtures.certs("ca.pem")]
                + arguments,
            stdin: stdin)
    }

    /// `--cert universal.pem --key universal.key`: certificate auth with the universal certificate.
    static let universalPEM = ["--cert", Fixtures.certs("universal.pem"), "--key", Fixtures.certs("universal.key")]
}
