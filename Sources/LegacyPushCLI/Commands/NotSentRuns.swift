import CommandLineKit
import LegacyAPNs

/// The notifications a send never handed to the gateway (certainly not delivered), as runs of
/// consecutive input positions: the ones the client took and never wrote (or wrote, saw
/// discarded by the gateway, and never resent), and the input it never took, `firstUntaken`
/// to the end. Both sends (binary and HTTP/2) print them the same way.
struct NotSentRuns: Equatable {
    /// Ascending, disjoint, not adjacent.
    private(set) var runs: [ClosedRange<Int>] = []

    /// How many notifications were not sent.
    var count: Int { runs.reduce(0) { $0 + $1.count } }

    /// The first position of the run that reaches the end of the input: from there on nothing was
    /// sent, so `--from-line` resumes there. Nil when the last notification was sent.
    private(set) var resumeFrom: Int?

    /// The runs of `notWritten` (positions, any order) and of `firstUntaken...total`.
    init(notWritten: [Int], firstUntaken: Int, total: Int) {
        var positions = notWritten.filter { $0 >= 1 && $0 < firstUntaken }.sorted()
        if firstUntaken <= total { positions.append(firstUntaken) }
        for position in positions {
            if let last = runs.last, position <= last.upperBound + 1 {
                runs[runs.count - 1] = last.lowerBound...Swift.max(last.upperBound, position)
            } else {
                runs.append(position...position)
            }
        }
        if firstUntaken <= total, let last = runs.last { runs[runs.count - 1] = last.lowerBound...total }
        // Taken and never written counts as much as never taken: a run reaching the end resumes.
        if let last = runs.last, last.upperBound >= total { resumeFrom = last.lowerBound }
    }

    /// The `--json` events: with JSON Lines input (`line` maps a position to its line), one event
    /// per run, `{"event":"notSent","fromLine":A,"toLine":B,"count":N}` (blank lines inside are
    /// not counted); with `--token` input, one event per notification with its `id` and `token`
    /// (`describe` gives them).
    func events(line: (UInt64) -> Int?, describe: (Int) -> (id: UInt64, token: String)?) -> [String] {
        var events: [String] = []
        for run in runs {
            if let first = line(UInt64(run.lowerBound)), let last = line(UInt64(run.upperBound)) {
                var event = JSONLine("notSent")
                event.add("fromLine", first)
                event.add("toLine", last)
                event.add("count", run.count)
                events.append(event.text)
                continue
            }
            for position in run {
                var event = JSONLine("notSent")
                if let (id, token) = describe(position) {
                    event.add("id", id)
                    event.add("token", token)
                } else {
                    event.add("position", position)
                }
                events.append(event.text)
            }
        }
        return events
    }

    /// ``events(line:describe:)`` for a send's input: its lines, or (flag input) its notifications'
    /// identifiers as the report shows them and tokens.
    func events(naming input: some SendInputNaming, reportedID: (UInt32?, UInt64) -> UInt64) -> [String] {
        events(line: { input.line(of: $0) }) { position in
            input.notification(at: position).map {
                (reportedID($0.identifier, UInt64(position)), $0.token.hexString)
            }
        }
    }

    /// "  not sent     N: resume with --from-line L" (the resume part with JSON Lines input only).
    func summaryLine(line: (UInt64) -> Int?) -> String {
        var text = "  not sent     \(count)"
        if let start = resumeFrom, let number = line(UInt64(start)) { text += ": resume with --from-line \(number)" }
        return text
    }
}

/// What a send's input tells of a position, for naming what was not sent.
protocol SendInputNaming {
    /// The JSON Lines line of the notification at `position` (nil for flag input).
    func line(of position: UInt64) -> Int?
    /// The caller's identifier and the token of the flag-input notification at 1-based `position`.
    func notification(at position: Int) -> (identifier: UInt32?, token: DeviceToken)?
}
