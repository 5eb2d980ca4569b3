// The bridge soak's kill-and-restart phase: `legacy-push bridge` as a child process on a fixed
// port and store, killed with SIGKILL at random moments and restarted, while the sender keeps
// sending through it. What the bridge said (its `--json` events, from every incarnation) feeds the
// same ledger as the in-process phases.
import APNsCore
import APNsRuntime
import Foundation

/// `legacy-push bridge` run, killed and restarted by the soak.
final class BridgeProcess {
    let port: UInt16
    /// Its feedback port (0 when it serves none).
    let feedbackPort: UInt16
    private let arguments: [String]
    private let folder: String
    private let name: String
    private var process: Process?
    private var incarnation = 0
    /// The event files of every incarnation so far.
    private(set) var logs: [String] = []

    /// The `legacy-push` binary next to the soak's own (Scripts/soak.sh builds both).
    static var binary: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
            "legacy-push"
        ).path
    }

    /// A free loopback port (bound and released: the bridge takes it, every incarnation).
    static func freePort() throws -> UInt16 {
        try Listener(host: "127.0.0.1", port: 0).endpoint.port
    }

    /// `certificates`: the folder of the fixture certificates. `store`: a PostgreSQL URI shared
    /// with other bridges (a fleet, where each also serves feedback on a port of its own), or nil
    /// for a SQLite file in `folder`. `name` tells its event files from other bridges'.
    init(upstreamPort: UInt16, certificates: String, folder: String, store: String? = nil, name: String = "bridge")
        throws
    {
        self.port = try Self.freePort()
        self.feedbackPort = store == nil ? 0 : try Self.freePort()
        self.folder = folder
        self.name = name
        arguments = [
            "bridge", "--port", "\(port)", "--feedback-port", "\(feedbackPort)", "--upstream",
            "127.0.0.1:\(upstreamPort)", "--upstream-ca-file", certificates + "/ca.pem", "--auth-key",
            certificates + "/AuthKey_ABC123DEFG.p8", "--team-id", "DEF123GHIJ", "--cert", certificates + "/server.pem",
            "--key", certificates + "/server.key", "--client-ca", certificates + "/ca.pem", "--store",
            store ?? folder + "/\(name).sqlite", "--json",
        ]
    }

    /// Starts an incarnation and waits (up to 20 s) until it listens.
    func start() throws {
        incarnation += 1
        let log = folder + "/\(name)-events-\(incarnation).jsonl"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        logs.append(log)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = arguments
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let text = try? String(contentsOfFile: log, encoding: .utf8), text.contains("listening on ") { return }
            guard process.isRunning else { break }
            usleep(10_000)
        }
        throw SoakFailure(description: "legacy-push bridge did not start (\(Self.binary) \(arguments))")
    }

    /// Kills the running incarnation with SIGKILL and waits for it.
    func kill() {
        guard let process else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    /// Stops the running incarnation as an operator would (SIGINT), waiting for it.
    func stop() {
        guard let process else { return }
        process.interrupt()
        process.waitUntilExit()
        self.process = nil
    }

    /// Every event of every incarnation with a token: its name and the token.
    func events() -> [(event: String, token: DeviceToken)] {
        var events: [(String, DeviceToken)] = []
        for log in logs {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") {
                guard let event = Self.field("event", in: line), let hex = Self.field("token", in: line),
                    let token = try? DeviceToken(hexString: hex)
                else { continue }
                events.append((event, token))
            }
        }
        return events
    }

    /// The string value of `name` in a flat JSON object line (the bridge writes no escapes into
    /// event names or hex tokens).
    static func field(_ name: String, in line: Substring) -> String? {
        guard let range = line.range(of: "\"\(name)\":\"") else { return nil }
        return String(line[range.upperBound...].prefix { $0 != "\"" })
    }
}

struct SoakFailure: Error, CustomStringConvertible {
    var description: String
}
