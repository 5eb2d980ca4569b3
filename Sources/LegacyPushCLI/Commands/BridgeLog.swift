import CommandLineKit
import LegacyBridge
import Synchronization

/// The bridge's log: one line per event on stderr (the quiet ones only with --json), or one JSON
/// object per event on stdout with `--json`, written out as it happens (never held in a buffer a
/// kill would lose). "not delivered" is never quiet.
///
/// In text, a sender's "connected" line waits for something to say about the connection: the
/// spare connection a sender such as `PushClient` opens and closes unused is not logged at all.
struct BridgeLog: Sendable {
    let console: Console
    let json: Bool
    let quiet: Bool
    /// "connected" lines not printed yet, by connection.
    private let pending = Pending()

    init(console: Console, json: Bool, quiet: Bool) {
        self.console = console
        self.json = json
        self.quiet = quiet
    }

    private final class Pending: Sendable {
        let lines = Mutex<[UInt64: String]>([:])
    }

    /// A line for the operator (stdout with --json as a JSON object, else stdout as text).
    func line(_ text: String) {
        if json {
            var bytes = Array(#"{"event":"status","message":"#.utf8)
            appendJSONString(text, to: &bytes)
            bytes.append(contentsOf: Array("}\n".utf8))
            console.write(bytes)
        } else {
            console.print(text)
        }
        console.flush()
    }

    func record(_ event: BridgeEvent) {
        if json {
            guard let object = Self.json(event) else { return }
            // Each event reaches the file or pipe as it happens: a bridge killed (SIGKILL, OOM)
            // loses nothing it has logged. Events are per connection and per failure, not per
            // delivered notification, so a write each is cheap.
            console.write(object)
            console.flush()
            return
        }
        switch event {
        case .senderConnected(let connection, _, _, _):
            if !quiet, let text = Self.text(event) { pending.lines.withLock { $0[connection] = text } }
            return
        case .senderDisconnected(let connection, let delivered, _):
            if let announced = pending.lines.withLock({ $0.removeValue(forKey: connection) }) {
                if delivered == 0 { return }  // an unused connection: nothing to say
                console.diagnostic(announced)
            }
        default:
            break
        }
        guard let text = Self.text(event) else { return }
        let loud: Bool
        switch event {
        case .notDelivered, .storeFailed, .upstreamUnavailable, .upstreamAvailable: loud = true
        default: loud = !quiet
        }
        guard loud else { return }
        if let connection = Self.connection(of: event),
            let announce = pending.lines.withLock({ $0.removeValue(forKey: connection) })
        {
            console.diagnostic(announce)
        }
        console.diagnostic(text)
    }

    /// The sender connection an event is about.
    private static func connection(of event: BridgeEvent) -> UInt64? {
        switch event {
        case .answered(let connection, _, _, _, _), .rejected(let connection, _, _, _, _),
            .acknowledgedResend(let connection, _), .possibleDuplicate(let connection, _, _),
            .notDelivered(let connection, _, _, _), .confirmationAnswered(let connection, _):
            return connection
        default:
            return nil
        }
    }

    static func text(_ event: BridgeEvent) -> String? {
        switch event {
        case .senderConnected(let connection, let client, _, let topic):
            return "sender \(connection) connected from \(client) (topic \(topic ?? "none: pass --topic"))"
        case .senderRefused(let client, let reason):
            return "refused \(client): \(reason)"
        case .senderDisconnected(let connection, let delivered, let reason):
            return "sender \(connection) done: \(delivered) delivered; \(reason)"
        case .answered(let connection, let response, let identifier, _, let reason):
            guard let response else {
                return "sender \(connection): closed without a word (a command-0 notification failed, or nothing "
                    + "was delivered to name) after: \(reason)"
            }
            // Status 10 names the last delivered notification, not the one that failed.
            let failing = identifier.flatMap { $0 == response.identifier ? nil : " (notification \($0) failed)" } ?? ""
            return "sender \(connection): answered \(response)\(failing): \(reason)"
        case .confirmationAnswered:
            return nil  // the sender's own end-of-send check, answered as Apple's gateway did
        case .rejected:
            return nil  // the answer names the one the sender hears of
        case .unregistered(let topic, let token, let seconds):
            return
                "unregistered: \(token.hexString) (\(topic)) since \(UTCTime.iso8601(Int64(seconds))); kept for feedback"
        case .acknowledgedResend:
            return nil
        case .possibleDuplicate(let connection, let identifier, let token):
            return "sender \(connection): notification \(identifier) to \(token.hexString) may have been delivered "
                + "already (an answer lost upstream, or a copy in flight when a bridge on this store stopped) and "
                + "goes again: a possible duplicate"
        case .notDelivered(let connection, let identifier, let token, let reason):
            return "not delivered: sender \(connection), notification \(identifier) to \(token.hexString): \(reason)"
        case .feedbackServed(let client, let topic, let count):
            return "feedback: \(count) tuple\(count == 1 ? "" : "s") of \(topic) served to \(client)"
        case .storeFailed(let reason):
            return "store: \(reason)"
        case .upstreamUnavailable(let reason):
            return "upstream unavailable: \(reason); refusing senders until it answers (they have sent nothing)"
        case .upstreamAvailable(let refused):
            return "upstream available again (\(refused) sender connection\(refused == 1 ? "" : "s") refused meanwhile)"
        case .upstream(let event):
            switch event {
            case .connected(let connection, let attempt):
                return "upstream \(connection) connected (attempt \(attempt))"
            case .connectionFailed(let connection, let reason, let delay):
                return "upstream \(connection) failed: \(reason)" + (delay.map { "; again in \($0)" } ?? "; giving up")
            case .connectionClosed(let connection, let reason):
                return "upstream \(connection) closed: \(reason)"
            case .goaway(let connection, let goaway):
                return "upstream \(connection): \(goaway)"
            default:
                return nil
            }
        }
    }

    static func json(_ event: BridgeEvent) -> [UInt8]? {
        var bytes: [UInt8] = []
        func field(_ name: String, _ value: String) {
            bytes.append(contentsOf: Array(",\"\(name)\":".utf8))
            appendJSONString(value, to: &bytes)
        }
        func number(_ name: String, _ value: UInt64) {
            bytes.append(contentsOf: Array(",\"\(name)\":\(value)".utf8))
        }
        func begin(_ name: String) { bytes.append(contentsOf: Array("{\"event\":\"\(name)\"".utf8)) }
        switch event {
        case .senderConnected(let connection, let client, let subject, let topic):
            begin("senderConnected")
            number("connection", connection)
            field("client", client)
            field("subject", subject)
            if let topic { field("topic", topic) }
        case .senderRefused(let client, let reason):
            begin("senderRefused")
            field("client", client)
            field("reason", reason)
        case .senderDisconnected(let connection, let delivered, let reason):
            begin("senderDisconnected")
            number("connection", connection)
            number("delivered", UInt64(delivered))
            field("reason", reason)
        case .answered(let connection, let response, let identifier, let token, let reason):
            begin("answered")
            number("connection", connection)
            if let response {
                number("status", UInt64(response.status.rawValue))
                number("id", UInt64(response.identifier))
            } else {
                bytes.append(contentsOf: Array(#","status":null"#.utf8))
            }
            if let identifier { number("failingId", UInt64(identifier)) }
            if let token { field("token", token.hexString) }
            field("reason", reason)
        case .rejected(let connection, let identifier, let token, let status, let reason):
            begin("rejected")
            number("connection", connection)
            number("id", UInt64(identifier))
            field("token", token.hexString)
            number("status", UInt64(status.rawValue))
            field("reason", reason)
        case .unregistered(let topic, let token, let seconds):
            begin("unregistered")
            field("topic", topic)
            field("token", token.hexString)
            number("time", UInt64(seconds))
        case .acknowledgedResend(let connection, let identifier):
            begin("acknowledgedResend")
            number("connection", connection)
            number("id", UInt64(identifier))
        case .possibleDuplicate(let connection, let identifier, let token):
            begin("possibleDuplicate")
            number("connection", connection)
            number("id", UInt64(identifier))
            field("token", token.hexString)
        case .confirmationAnswered(let connection, let identifier):
            begin("confirmationAnswered")
            number("connection", connection)
            number("id", UInt64(identifier))
        case .notDelivered(let connection, let identifier, let token, let reason):
            begin("notDelivered")
            number("connection", connection)
            number("id", UInt64(identifier))
            field("token", token.hexString)
            field("reason", reason)
        case .feedbackServed(let client, let topic, let count):
            begin("feedbackServed")
            field("client", client)
            field("topic", topic)
            number("count", UInt64(count))
        case .storeFailed(let reason):
            begin("storeFailed")
            field("reason", reason)
        case .upstreamUnavailable(let reason):
            begin("upstreamUnavailable")
            field("reason", reason)
        case .upstreamAvailable(let refused):
            begin("upstreamAvailable")
            number("refusedSenders", UInt64(refused))
        case .upstream(let event):
            guard let text = text(.upstream(event)) else { return nil }
            begin("upstream")
            field("message", text)
        }
        bytes.append(contentsOf: Array("}\n".utf8))
        return bytes
    }

    /// The last line with --json.
    static func summaryJSON(_ statistics: BridgeStatistics) -> String {
        let fields: [(String, Int)] = [
            ("senderConnections", statistics.senderConnections),
            ("resumedSenderConnections", statistics.resumedSenderConnections),
            ("refusedConnections", statistics.refusedConnections),
            ("received", statistics.received), ("forwarded", statistics.forwarded), ("accepted", statistics.accepted),
            ("unregistered", statistics.unregistered), ("rejected", statistics.rejected),
            ("acknowledgedResends", statistics.acknowledgedResends),
            ("possibleDuplicates", statistics.possibleDuplicates), ("unavailable", statistics.unavailable),
            ("notDelivered", statistics.notDelivered), ("errorResponses", statistics.errorResponses),
            ("confirmationBarriers", statistics.confirmationBarriers),
            ("dropped", statistics.dropped), ("feedbackServed", statistics.feedbackServed),
        ]
        return #"{"event":"summary","# + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }
}
