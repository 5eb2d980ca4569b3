// LegacyAPNs benchmarks. Run in release mode:
//
//     swift build -c release && swift run -c release LegacyAPNsBenchmarks [--json] [--quick] [--runs N]
//         [--only TEXT] [suite ...]
//
// Suites: encode, decode, parse, reconnect, end-to-end, rejected, feedback, cli, cli-floor,
// http2-serve, bridge, fleet, http2-client, inbox (default: all; http2-serve and http2-client need h2load and
// nghttpd, Debian's nghttp2-client and nghttp2-server; http2-client also runs aioapns from the
// venv of Scripts/test-tools.sh when it is there). Each suite runs N times (default 3) and the median run by rate is reported,
// with the range; cli-floor alternates its two programs N times (default 5) in one run and reports
// medians. Every figure is measured on this machine at run time; nothing is hard-coded. --only runs
// just the end-to-end cases whose name contains TEXT (for profiling one of them). See BENCHMARKS.md
// for results and method.
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
if let index = arguments.firstIndex(of: "--encode-only") {
    // For allocation counting under valgrind: encode N frames and exit.
    let count = Int(arguments[index + 1]) ?? 1000
    EncodeBenchmarks.encodeOnly(count: count)
    exit(0)
}
let json = arguments.contains("--json")
let quick = arguments.contains("--quick")
var runs = 3
var runsGiven = false
if let index = arguments.firstIndex(of: "--runs"), index + 1 < arguments.count, let value = Int(arguments[index + 1]) {
    runs = max(1, value)
    runsGiven = true
}
var suites = arguments.enumerated().filter {
    !$0.element.hasPrefix("--") && ($0.offset == 0 || !["--runs", "--only"].contains(arguments[$0.offset - 1]))
}
.map(\.element)
/// Only the end-to-end cases whose name contains this.
let onlyCases: String? = arguments.firstIndex(of: "--only").flatMap {
    $0 + 1 < arguments.count ? arguments[$0 + 1] : nil
}
if suites.isEmpty {
    suites = [
        "encode", "decode", "parse", "reconnect", "end-to-end", "rejected", "feedback", "cli", "cli-floor",
        "http2-serve", "bridge", "fleet", "idle-senders", "http2-client", "inbox",
    ]
}

/// Results by name, in first-seen order (filled from whatever executor a suite runs on).
final class Collector: @unchecked Sendable {
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var entries: [(name: String, runs: [BenchmarkResult])] = []

    func add(_ result: BenchmarkResult) {
        lock.withLock {
            if let index = entries.firstIndex(where: { $0.name == result.name }) {
                entries[index].runs.append(result)
            } else {
                entries.append((result.name, [result]))
            }
        }
    }

    var all: [(name: String, runs: [BenchmarkResult])] { lock.withLock { entries } }
}
let collector = Collector()
let record: @Sendable (BenchmarkResult) -> Void = { collector.add($0) }
if !json {
    print("LegacyAPNs benchmarks: \(Machine.description); median of \(runs) run\(runs == 1 ? "" : "s")")
    print(BenchmarkResult.tableHeader)
}
var reported = 0
@MainActor func reportMedians() {
    let collected = collector.all
    for entry in collected[reported...] {
        let sorted = entry.runs.sorted { $0.rate < $1.rate }
        var median = sorted[sorted.count / 2]
        if sorted.count > 1 {
            median.note +=
                (median.note.isEmpty ? "" : "; ")
                + "runs \(BenchmarkResult.human(sorted.first!.rate))-\(BenchmarkResult.human(sorted.last!.rate))/s"
        }
        results.append(median)
        if !json { print(median.tableLine) }
    }
    reported = collected.count
}
var results: [BenchmarkResult] = []
for suite in suites {
    if suite == "http2-serve" {
        // Its own median: ours and nghttpd alternate in each run, so both see the same machine.
        await HTTP2ServeBenchmarks.run(quick: quick, runs: runs, report: record)
        reportMedians()
        continue
    }
    if suite == "http2-client" {
        // Its own median: ours, h2load -> nghttpd and aioapns alternate in each run.
        await HTTP2ClientBenchmarks.run(quick: quick, runs: runs, report: record)
        reportMedians()
        continue
    }
    if suite == "bridge" {
        // Its own median too: through the bridge, direct, and 1 % bad alternate in each run.
        BridgeBenchmarks.run(quick: quick, runs: runs, report: record)
        reportMedians()
        continue
    }
    if suite == "inbox" {
        // Its own median: no inbox, --inbox, and --inbox with a client streaming alternate in each run.
        await InboxBenchmarks.run(quick: quick, runs: runs, report: record)
        reportMedians()
        continue
    }
    if suite == "fleet" {
        // One bridge on SQLite and two on PostgreSQL behind HAProxy alternate in each run.
        FleetBenchmarks.run(quick: quick, runs: runs, report: record)
        reportMedians()
        continue
    }
    // cli-floor alternates its two programs itself, in one run.
    for _ in 0..<(suite == "cli-floor" ? 1 : runs) {
        switch suite {
        case "encode": EncodeBenchmarks.run(quick: quick, report: record)
        case "decode": DecodeBenchmarks.run(quick: quick, report: record)
        case "parse": ParseBenchmarks.run(quick: quick, report: record)
        case "reconnect": await ReconnectBenchmarks.run(quick: quick, report: record)
        case "end-to-end": await EndToEndBenchmarks.run(quick: quick, rejecting: false, report: record)
        case "rejected": await EndToEndBenchmarks.run(quick: quick, rejecting: true, report: record)
        case "feedback": await FeedbackBenchmarks.run(quick: quick, report: record)
        case "cli": CLIBenchmarks.run(quick: quick, report: record)
        case "cli-floor": CLIFloorBenchmarks.run(quick: quick, runs: runsGiven ? runs : 5, report: record)
        case "idle-senders": await IdleSendersBenchmarks.run(quick: quick, report: record)
        default:
            FileHandle.standardError.write(Data("unknown suite \(suite)\n".utf8))
            exit(2)
        }
    }
    reportMedians()
}
if json {
    let objects = results.map(\.jsonObject)
    let data = try JSONSerialization.data(
        withJSONObject: ["machine": Machine.description, "runs": runs, "results": objects], options: [.sortedKeys])
    print(String(decoding: data, as: UTF8.self))
}
