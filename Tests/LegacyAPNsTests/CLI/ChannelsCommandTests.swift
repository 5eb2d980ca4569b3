import Foundation
import GatewaySimulator
import TestSupport
import Testing

/// `legacy-push channels ...`, `send --http2 --channel` and `send --http2 --live-activity` as a
/// user runs them, against `serve --http2 --management-port 0 --record`: the contract's output
/// shapes and exit codes, and what the simulator received.
@Suite struct ChannelsCommandTests {
    static let token = ["--auth-key", Fixtures.certs("AuthKey_ABC123DEFG.p8"), "--team-id", "DEF123GHIJ"]
    static let hex = String(repeating: "ab", count: 32)

    /// A running `serve --http2` with a management port: the push and management ports.
    struct Server {
        let process: ChildProcess
        let push: String
        let management: String
        let record: String

        init(_ scratch: ScratchDirectory, extra: [String] = []) throws {
            record = scratch.file("accepted.jsonl")
            process = try ChildProcess(
                [
                    "serve", "--http2", "--port", "0", "--management-port", "0", "--record", record, "--auth-key",
                    "ABC123DEFG:DEF123GHIJ:" + Fixtures.certs("AuthKey_ABC123DEFG.p8"),
                ] + extra)
            let first = try #require(process.waitForLine { $0.hasPrefix("listening on ") && $0.hasSuffix("(HTTP/2)") })
            let second = try #require(process.waitForLine { $0.hasSuffix("(channel management)") }, "\(process.stderr)")
            func port(_ line: String) -> String {
                String(line.dropFirst("listening on 127.0.0.1:".count).prefix { $0.isNumber })
            }
            push = port(first)
            management = port(second)
        }

        func channels(_ arguments: [String]) async -> CLIRunner.Result {
            await CLIRunner.run(
                ["channels"] + arguments + [
                    "--gateway", "127.0.0.1:\(management)", "--ca-file", Fixtures.certs("ca.pem"), "--topic",
                    "com.example.legacy",
                ] + ChannelsCommandTests.token)
        }

        func send(_ arguments: [String]) async -> CLIRunner.Result {
            await CLIRunner.run(
                ["send", "--http2", "--gateway", "127.0.0.1:\(push)", "--ca-file", Fixtures.certs("ca.pem"), "--quiet"]
                    + ChannelsCommandTests.token + arguments)
        }

        /// The lines `--record` has written, waiting (bounded) for `count` of them.
        func recorded(_ count: Int) async throws -> [String] {
            var lines: [String] = []
            let deadline = Date().addingTimeInterval(5)
            while lines.count < count, Date() < deadline {
                lines = ((try? String(contentsOfFile: record, encoding: .utf8)) ?? "").split(separator: "\n").map(
                    String.init)
                if lines.count < count { try await Task.sleep(for: .milliseconds(20)) }
            }
            return lines
        }
    }

    @Test func createReadListAndDeleteInTheContractsShapes() async throws {
        let scratch = try ScratchDirectory()
        let server = try Server(scratch)
        defer { _ = server.process.interruptAndWait() }
        let created = await server.channels(["create", "--storage-policy", "1"])
        #expect(created.status == 0, "\(created.stderr)")
        let id = try #require(created.outputLines.first)
        #expect(created.outputLines.count == 1 && id.hasSuffix("=="))
        let json = await server.channels(["create", "--storage-policy", "0", "--json"])
        let second = try #require(json.outputLines.first)
        #expect(second.hasPrefix(#"{"channelId":""#) && second.hasSuffix(#""}"#), "\(second)")

        let read = await server.channels(["read", "--channel", id, "--json"])
        #expect(read.output == #"{"channelId":"\#(id)","messageStoragePolicy":1,"pushType":"LiveActivity"}"# + "\n")
        let list = await server.channels(["list"])
        #expect(list.outputLines.count == 2 && list.outputLines.first == id, "\(list.output)")
        let listJSON = await server.channels(["list", "--json"])
        #expect(listJSON.outputLines.first == #"{"channelId":"\#(id)"}"#)

        let deleted = await server.channels(["delete", "--channel", id])
        #expect(deleted.status == 0 && deleted.output == "deleted \(id)\n")
        let gone = await server.channels(["read", "--channel", id, "--json"])
        #expect(gone.status == 1)
        #expect(
            gone.output.hasPrefix(
                #"{"event":"rejected","channelId":"\#(id)","status":400,"reason":"ChannelNotRegistered","requestId":""#)
        )
        let human = await server.channels(["delete", "--channel", id])
        #expect(human.status == 1 && human.stderr.contains("refused: 400 ChannelNotRegistered"), "\(human.stderr)")

        // Bad input: one line, exit 2, nothing sent.
        let noPolicy = await server.channels(["create"])
        #expect(noPolicy.status == 2 && noPolicy.stderr.contains("missing --storage-policy"))
        let badID = await server.channels(["read", "--channel", "not base64!"])
        #expect(badID.status == 2 && badID.stderr.contains("--channel expects a channel id"))
        let suffixed = await CLIRunner.run(
            ["channels", "list", "--topic", "com.example.legacy.push-type.liveactivity"] + Self.token)
        #expect(suffixed.status == 2 && suffixed.stderr.contains("without '.push-type.liveactivity'"))
    }

    @Test func aLiveActivityStartsUpdatesAndEndsAndABroadcastGoesOnAChannel() async throws {
        let scratch = try ScratchDirectory()
        let server = try Server(scratch)
        defer { _ = server.process.interruptAndWait() }
        let start = await server.send([
            "--token", Self.hex, "--topic", "com.example.legacy", "--live-activity", "start", "--timestamp", "100",
            "--content-state", #"{"progress":0}"#, "--alert", "Order received", "--attributes-type",
            "DeliveryAttributes",
            "--attributes", #"{"order":42}"#, "--input-push-token",
        ])
        #expect(start.status == 0, "\(start.stderr)")
        let update = await server.send([
            "--token", Self.hex, "--topic", "com.example.legacy", "--live-activity", "update", "--timestamp", "200",
            "--content-state", #"{"progress":0.5}"#, "--stale-date", "900", "--priority", "5",
        ])
        #expect(update.status == 0, "\(update.stderr)")
        let end = await server.send([
            "--token", Self.hex, "--topic", "com.example.legacy.push-type.liveactivity", "--live-activity", "end",
            "--timestamp", "300", "--content-state", #"{"progress":1}"#, "--dismissal-date", "0",
        ])
        #expect(end.status == 0, "\(end.stderr)")
        let recorded = try await server.recorded(3)
        #expect(recorded.count == 3)
        for line in recorded {
            #expect(
                line.contains(#""topic":"com.example.legacy.push-type.liveactivity","pushType":"liveactivity""#),
                "\(line)")
        }
        #expect(
            recorded.first?.contains(
                #"{\"aps\":{\"event\":\"start\",\"timestamp\":100,\"content-state\":{\"progress\":0},\"alert\":\"Order received\",\"attributes-type\":\"DeliveryAttributes\",\"attributes\":{\"order\":42},\"input-push-token\":1}}"#
            ) == true, "\(recorded)")

        // A broadcast on a channel.
        let id = try #require(await server.channels(["create", "--storage-policy", "1"]).outputLines.first)
        let broadcast = await server.send([
            "--channel", id, "--topic", "com.example.legacy", "--live-activity", "update", "--content-state",
            #"{"progress":0.75}"#, "--expiry", "1900000000", "--json",
        ])
        #expect(broadcast.status == 0, "\(broadcast.stderr)")
        #expect(broadcast.output.hasPrefix(#"{"event":"broadcast","channelId":"\#(id)","status":200,"requestId":""#))
        #expect(broadcast.output.contains(#""uniqueId":""#))
        let plain = try #require(await server.channels(["create", "--storage-policy", "0"]).outputLines.first)
        let expiring = await server.send([
            "--channel", plain, "--topic", "com.example.legacy", "--payload",
            #"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#, "--expiry", "1900000000", "--json",
        ])
        #expect(
            expiring.status == 1 && expiring.output.contains(#""reason":"BadExpirationDate""#), "\(expiring.output)")
        let starting = await server.send([
            "--channel", id, "--topic", "com.example.legacy", "--live-activity", "start", "--content-state", "{}",
            "--alert", "a", "--attributes-type", "T", "--attributes", "{}",
        ])
        #expect(starting.status == 2 && starting.stderr.contains("a broadcast cannot start a Live Activity"))
        #expect(server.process.interruptAndWait() == 0)
        #expect(server.process.stderr.contains("broadcast on channel \(id), policy 1 (most recent message stored)"))
        #expect(server.process.stderr.contains("[apns-push-type 'liveactivity' (Apple's samples)]"))
    }

    @Test func jsonLinesCarryLiveActivitiesAndTheRulesAreCheckedFirst() async throws {
        let scratch = try ScratchDirectory()
        let server = try Server(scratch)
        defer { _ = server.process.interruptAndWait() }
        let lines = [
            #"{"token":"\#(Self.hex)","liveActivity":{"event":"update","timestamp":5,"content-state":{"a":1}},"priority":5}"#,
            #"{"token":"\#(Self.hex)","liveActivity":{"event":"end","timestamp":6,"content-state":{"a":2}},"topic":"com.example.legacy"}"#,
        ]
        let input = try scratch.write(Array((lines.joined(separator: "\n") + "\n").utf8), named: "in.jsonl")
        let sent = await server.send(["--input", input, "--topic", "com.example.legacy", "--json"])
        #expect(sent.status == 0, "\(sent.stderr) \(sent.output)")
        let recorded = try await server.recorded(2)
        #expect(recorded.count == 2)
        for line in recorded {
            #expect(line.contains(#""topic":"com.example.legacy.push-type.liveactivity","pushType":"liveactivity""#))
        }
        #expect(
            recorded.contains {
                $0.contains(
                    #""payload":"{\"aps\":{\"event\":\"update\",\"timestamp\":5,\"content-state\":{\"a\":1}}}""#)
            })

        let bad = try scratch.write(
            Array(
                (#"{"token":"\#(Self.hex)","liveActivity":{"event":"start","timestamp":5,"content-state":{}}}"# + "\n")
                    .utf8),
            named: "bad.jsonl")
        let refused = await server.send(["--input", bad, "--topic", "com.example.legacy"])
        #expect(refused.status == 2 && refused.stderr.contains("line 1: aps.alert is required"), "\(refused.stderr)")
    }

    @Test(arguments: [
        (["--live-activity", "update"], "--live-activity needs --content-state"),
        (["--live-activity", "start", "--content-state", "{}"], "aps.alert is required"),
        (["--live-activity", "update", "--content-state", "[1]"], "aps.content-state (a JSON object) is required"),
        (["--live-activity", "update", "--content-state", "{"], "--content-state: not JSON"),
        (["--live-activity", "update", "--content-state", "{}", "--badge", "1"], "--badge does not belong"),
        (
            ["--live-activity", "update", "--content-state", "{}", "--priority", "1"],
            "liveactivity pushes must use priority 10 or 5"
        ),
        (
            ["--live-activity", "update", "--content-state", "{}", "--push-type", "alert"],
            "of type liveactivity, not alert"
        ),
        (["--alert", "x", "--input-push-token"], "--input-push-token belongs to a Live Activity"),
        (["--live-activity", "pause"], "--live-activity must be one of start, update, end"),
    ])
    func badLiveActivityInputIsOneErrorLine(_ extra: [String], _ message: String) async {
        let result = await CLIRunner.run(
            ["send", "--http2", "--token", Self.hex, "--topic", "com.example.legacy"] + Self.token + extra)
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains(message), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1)
    }

    @Test func theHelpNamesTheChoicesTheSimulatorMade() async {
        let serve = await CLIRunner.run(["serve", "--http2", "--help"])
        #expect(serve.output.contains("--management-port"))
        let words = serve.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(words.contains("a certificate connection gets 400 TopicDisallowed"), "\(words)")
        let channels = await CLIRunner.run(["channels", "create", "--help"])
        #expect(channels.output.contains("--storage-policy"))
        let send = await CLIRunner.run(["send", "--help"])
        for option in ["--live-activity", "--content-state", "--channel", "--input-push-channel"] {
            #expect(send.output.contains(option))
        }
    }
}
