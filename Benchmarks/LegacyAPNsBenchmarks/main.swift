// LegacyAPNs benchmarks. Run in release mode:
//
//     swift run -c release LegacyAPNsBenchmarks [--json] [--quick] [suite ...]
//
// Suites: encode, decode, end-to-end, feedback, cli (default: all). Every figure is measured
// on this machine at run time; nothing is hard-coded. See BENCHMARKS.md for results and method.
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
var suites = arguments.filter { !$0.hasPrefix("--") }
if suites.isEmpty { suites = ["encode", "decode", "parse", "end-to-end", "feedback", "cli"] }

var results: [BenchmarkResult] = []
let report = { (result: BenchmarkResult) in
    results.append(result)
    if !json { print(result.tableLine) }
}
if !json {
    print("LegacyAPNs benchmarks: \(Machine.description)")
    print(BenchmarkResult.tableHeader)
}
for suite in suites {
    switch suite {
    case "encode": EncodeBenchmarks.run(quick: quick, report: report)
    case "decode": DecodeBenchmarks.run(quick: quick, report: report)
    case "parse": ParseBenchmarks.run(quick: quick, report: report)
    case "end-to-end": await EndToEndBenchmarks.run(quick: quick, report: report)
    case "feedback": await FeedbackBenchmarks.run(quick: quick, report: report)
    case "cli": CLIBenchmarks.run(quick: quick, report: report)
    default:
        FileHandle.standardError.write(Data("unknown suite \(suite)\n".utf8))
        exit(2)
    }
}
if json {
    let objects = results.map(\.jsonObject)
    let data = try JSONSerialization.data(
        withJSONObject: ["machine": Machine.description, "results": objects], options: [.sortedKeys])
    print(String(decoding: data, as: UTF8.self))
}
