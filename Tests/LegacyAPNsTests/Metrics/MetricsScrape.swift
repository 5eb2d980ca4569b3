import Foundation
import Testing

/// `GET /metrics` judged by a real parser: prometheus-client's `text_string_to_metric_families`
/// (from PyPI, in the judges' venv) fetches and parses the page; a page it cannot parse fails the
/// test with its error. Also checks the content type Prometheus expects.
struct MetricsScrape {
    /// Every sample, keyed `name{"label":"value",...}` (labels sorted; `{}` for none).
    var samples: [String: Double]
    /// Family name to its type, as the parser read them.
    var types: [String: String]

    static let program = """
        import json, sys, urllib.request
        from prometheus_client.parser import text_string_to_metric_families
        with urllib.request.urlopen(sys.argv[1], timeout=10) as response:
            kind = response.headers["Content-Type"]
            text = response.read().decode("utf-8")
        if kind != "text/plain; version=0.0.4; charset=utf-8":
            sys.exit("content type " + str(kind))
        samples, types = {}, {}
        for family in text_string_to_metric_families(text):
            types[family.name] = family.type
            for sample in family.samples:
                key = sample.name + json.dumps(dict(sorted(sample.labels.items())), separators=(",", ":"))
                if key in samples:
                    sys.exit("duplicate sample " + key)
                samples[key] = sample.value
        print(json.dumps({"samples": samples, "types": types}))
        """

    /// Scrapes `http://endpoint/metrics`.
    static func scrape(_ url: String) throws -> MetricsScrape {
        let result = try PythonTools.run(program, arguments: [url])
        guard result.status == 0 else {
            throw ScrapeFailed(description: "prometheus-client could not read \(url): \(result.stderr)")
        }
        struct Parsed: Decodable {
            var samples: [String: Double]
            var types: [String: String]
        }
        let parsed = try JSONDecoder().decode(Parsed.self, from: Data(result.stdout))
        return MetricsScrape(samples: parsed.samples, types: parsed.types)
    }

    struct ScrapeFailed: Error, CustomStringConvertible {
        var description: String
    }

    /// The sample `name` with exactly these labels (nil when absent).
    func value(_ name: String, _ labels: [String: String] = [:]) -> Int? {
        let key =
            name + "{"
            + labels.sorted { $0.key < $1.key }.map { "\"\($0.key)\":\"\($0.value)\"" }.joined(separator: ",")
            + "}"
        return samples[key].map { Int($0) }
    }

    /// The sum of `name`'s samples whose labels include `labels`.
    func sum(_ name: String, where labels: [String: String] = [:]) -> Int {
        var total = 0.0
        for (key, value) in samples where key.hasPrefix(name + "{") {
            let text = key.dropFirst(name.count)
            if labels.allSatisfy({ text.contains("\"\($0.key)\":\"\($0.value)\"") }) { total += value }
        }
        return Int(total)
    }
}

/// `curl -s -o /dev/null -w '%{http_code}' URL`: the status an independent client sees.
func curlStatus(_ url: String) throws -> (status: Int, body: String) {
    let result = try CLIRunner.runProcess(
        URL(fileURLWithPath: "/usr/bin/env"), ["curl", "-s", "--max-time", "20", "-w", "\n%{http_code}", url])
    let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false)
    var body = lines.dropLast().joined(separator: "\n")
    if body.hasSuffix("\n") { body.removeLast() }
    return (Int(lines.last ?? "") ?? 0, body)
}
