import APNsCore
import CommandLineKit
import LegacyAPNs

/// What `send` prints: a line per rejection as it happens, and at the end the notifications
/// without a verdict and the summary, in words or (`--json`) in the shapes of `docs/cli-contract.md`.
///
/// Every input notification is in exactly one bucket: accepted, rejected, unconfirmed (written,
/// fate unknown) or not sent (never written, including input the client never took), and
/// `accepted + rejected + unconfirmed + notSent` is the number of input notifications, however
/// the send ended.
struct SendOutput: SendPrinter {
    let console: Console
    let json: Bool
    let input: SendCommand.Input

    /// The identifier a report shows: the caller's `id`, else the line number (JSON Lines), else the
    /// position.
    func reportedID(identifier: UInt32?, position: UInt64) -> UInt64 {
        input.reportedID(identifier: identifier, position: position)
    }

    /// One rejected notification, as it happens.
    func rejected(_ rejection: Rejection) {
        let id = reportedID(identifier: rejection.identifier, position: rejection.position)
        if json {
            var line = JSONLine("rejected")
            line.add("id", id)
            line.add("token", rejection.token.hexString)
            line.add("status", Int(rejection.status.rawValue))
            line.add("reason", rejection.status.reason)
            if let number = input.line(of: rejection.position) { line.add("line", number) }
            if rejection.mayHaveBeenDelivered { line.add("mayHaveBeenDelivered", true) }
            console.print(line.text)
        } else {
            console.print(
                "rejected: id \(id), token \(rejection.token.hexString), status \(rejection.status.rawValue) "
                    + "(\(rejection.status.reason))"
                    + (rejection.mayHaveBeenDelivered ? " (an earlier connection may have delivered it)" : ""))
        }
    }

    /// The four buckets of a finished send.
    struct Accounting {
        var total: Int
        var accepted: Int
        var rejected: Int
        /// Written, fate unknown.
        var unknownFate: [UnconfirmedNotification]
        /// Taken by the client but never written (or discarded by the gateway and never resent).
        var notWritten: [UnconfirmedNotification]
        /// Every notification not sent, taken or not, as runs of positions.
        var notSentRuns: NotSentRuns

        var notSent: Int { notSentRuns.count }
        var sent: Int { total - notSent }

        init(_ report: SendReport, total: Int) {
            self.total = total
            accepted = report.accepted
            rejected = report.rejected.count
            unknownFate = report.unknownFate
            notWritten = report.notSent
            notSentRuns = NotSentRuns(
                notWritten: notWritten.map { Int($0.position) }, firstUntaken: report.sent + 1, total: total)
        }
    }

    /// The notifications without a verdict and the summary.
    func summary(_ report: SendReport, endpoint: Endpoint) {
        let accounting = Accounting(report, total: input.count)
        if json {
            for unconfirmed in accounting.unknownFate { console.print(entry("unconfirmed", unconfirmed)) }
            notSentEvents(accounting.notSentRuns)
            for duplicate in report.possiblyDuplicated {
                var line = JSONLine("possibleDuplicate")
                line.add("id", reportedID(identifier: duplicate.identifier, position: duplicate.position))
                line.add("token", duplicate.token.hexString)
                if let number = input.line(of: duplicate.position) { line.add("line", number) }
                console.print(line.text)
            }
            console.print(summaryJSON(report, accounting))
        } else {
            for line in summaryLines(report, accounting, endpoint: endpoint) { console.print(line) }
        }
    }

    /// Every notification not sent, in `--json` (see ``NotSentRuns/events(line:describe:)``).
    private func notSentEvents(_ runs: NotSentRuns) {
        for event in runs.events(naming: input, reportedID: reportedID) { console.print(event) }
    }

    func summaryJSON(_ report: SendReport, _ accounting: Accounting) -> String {
        var line = JSONLine("summary")
        line.add("sent", accounting.sent)
        line.add("accepted", accounting.accepted)
        line.add("rejected", accounting.rejected)
        line.add("resent", report.resent)
        line.add("connections", report.connections)
        line.add("seconds", (report.seconds * 1000).rounded() / 1000)
        line.add("unconfirmed", accounting.unknownFate.count)
        line.add("possibleDuplicates", report.possibleDuplicates)
        line.add("notSent", accounting.notSent)
        if let start = accounting.notSentRuns.resumeFrom, let number = input.line(of: UInt64(start)) {
            line.add("resumeFromLine", number)
        }
        if let failure = report.failure { line.add("failure", failure.reason) }
        return line.text
    }

    func summaryLines(_ report: SendReport, _ accounting: Accounting, endpoint: Endpoint) -> [String] {
        let rate = report.seconds > 0 ? Int(Double(accounting.accepted) / report.seconds) : 0
        let total = accounting.total
        var lines = [
            "sent \(accounting.sent) of \(total) notification\(total == 1 ? "" : "s") to \(endpoint) in "
                + "\(Self.format3(report.seconds)) s over \(report.connections) connection"
                + "\(report.connections == 1 ? "" : "s")\(rate > 0 ? " (\(rate) accepted/s)" : "")",
            "  accepted     \(accounting.accepted)",
            "  rejected     \(accounting.rejected)",
        ]
        if !accounting.unknownFate.isEmpty {
            lines.append("  unconfirmed  \(accounting.unknownFate.count) (written, then the connection was lost)")
            lines += listing(accounting.unknownFate)
        }
        if accounting.notSent > 0 {
            lines.append(accounting.notSentRuns.summaryLine { input.line(of: $0) })
            // The ones the resume line does not cover, by name.
            let covered = accounting.notSentRuns.resumeFrom ?? .max
            lines += listing(accounting.notWritten.filter { Int($0.position) < covered })
        }
        if report.resent > 0 { lines.append("  resent       \(report.resent)") }
        if report.possibleDuplicates > 0 {
            lines.append(
                "  \(report.possiblyDuplicated.count) notification\(report.possiblyDuplicated.count == 1 ? " was" : "s were") "
                    + "resent after a connection closed without an answer: devices may see "
                    + "\(report.possiblyDuplicated.count == 1 ? "it" : "them") twice (--json lists them)")
        }
        return lines
    }

    private func entry(_ event: String, _ unconfirmed: UnconfirmedNotification) -> String {
        var line = JSONLine(event)
        line.add("id", reportedID(identifier: unconfirmed.notification.identifier, position: unconfirmed.position))
        line.add("token", unconfirmed.notification.token.hexString)
        if let number = input.line(of: unconfirmed.position) { line.add("line", number) }
        return line.text
    }

    /// Up to 20 notifications, one a line, then how many more.
    private func listing(_ entries: [UnconfirmedNotification]) -> [String] {
        var lines = entries.prefix(20).map { entry in
            let id = reportedID(identifier: entry.notification.identifier, position: entry.position)
            return "    id \(id), token \(entry.notification.token.hexString)"
        }
        if entries.count > 20 { lines.append("    ... \(entries.count - 20) more (use --json for all)") }
        return lines
    }

    /// "1.234".
    static func format3(_ value: Double) -> String {
        let milliseconds = Int((value * 1000).rounded())
        let fraction = String(milliseconds % 1000)
        return "\(milliseconds / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}

/// One JSON object on one line, keys in the order they are added (strings escaped by APNsCore's
/// one JSON string writer).
struct JSONLine {
    private var bytes: [UInt8]
    private var isEmpty = false

    /// Starts `{"event":"<event>"`.
    init(_ event: String) {
        bytes = Array(#"{"event":"#.utf8)
        appendJSONString(event, to: &bytes)
    }

    /// Starts an object without an `event` key (`channels --json`).
    init() {
        bytes = [UInt8(ascii: "{")]
        isEmpty = true
    }

    private mutating func key(_ name: String) {
        if !isEmpty { bytes.append(UInt8(ascii: ",")) }
        isEmpty = false
        appendJSONString(name, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func add(_ name: String, _ value: some BinaryInteger) {
        key(name)
        bytes.append(contentsOf: String(value).utf8)
    }

    mutating func add(_ name: String, _ value: Double) {
        key(name)
        bytes.append(contentsOf: String(value).utf8)
    }

    mutating func add(_ name: String, _ value: Bool) {
        key(name)
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
    }

    mutating func add(_ name: String, _ value: String) {
        key(name)
        appendJSONString(value, to: &bytes)
    }

    /// The line (without a newline).
    var text: String { String(decoding: bytes + [UInt8(ascii: "}")], as: UTF8.self) }
}
