import LegacyBridge

/// The bridge's log: one line per event on stderr (the quiet ones only with --json), or one JSON
/// object per event on stdout with `--json`. "not delivered" is never quiet.
struct BridgeLog: Sendable {
    let console: Console
    let json: Bool
    let quiet: Bool

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
            console.write(object)
            return
        }
        guard let text = Self.text(event) else { return }
        switch event {
        case .notDelivered, .storeFailed:
            console.diagnostic(text)
        default:
            if !quiet { console.diagnostic(text) }
        }
    }

    static func text(_ event: BridgeEvent) -> String? {
        switch event {
        case .senderConnected(let connection, let client, let subject, let topic):
            return "sender \(connection) connected from \(client): \(subject), topic \(topic ?? "(none)")"
        case .senderRefused(let client, let reason):
            return "refused \(client): \(reason)"
        case .senderDisconnected(let connection, let delivered, let reason):
            return "sender \(connection) done: \(delivered) delivered; \(reason)"
        case .answered(let connection, let response, let identifier, _, let reason):
            guard let response else {
                return "sender \(connection): closed without a word (command 0) after: \(reason)"
            }
            let named = identifier.map { " (failing notification \($0))" } ?? ""
            return "sender \(connection): error response \(response)\(named): \(reason)"
        case .rejected:
            return nil  // the answer names the one the sender hears of
        case .unregistered(let topic, let token, let seconds):
            return
                "unregistered: \(token.hexString) (\(topic)) since \(UTCTime.iso8601(Int64(seconds))); kept for feedback"
        case .acknowledgedResend:
            return nil
        case .possibleDuplicate(let connection, let identifier, let token):
            return "sender \(connection): notification \(identifier) to \(token.hexString) may have been delivered "
                + "upstream (its answer was lost); the sender will resend it: a possible duplicate"
        case .notDelivered(let connection, let identifier, let token, let reason):
            return "not delivered: sender \(connection), notification \(identifier) to \(token.hexString): \(reason)"
        case .feedbackServed(let client, let topic, let count):
            return "feedback: \(count) tuple\(count == 1 ? "" : "s") of \(topic) served to \(client)"
        case .storeFailed(let reason):
            return "store: \(reason)"
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
            ("senderConnections", statistics.senderConnections), ("refusedConnections", statistics.refusedConnections),
            ("received", statistics.received), ("forwarded", statistics.forwarded), ("accepted", statistics.accepted),
            ("unregistered", statistics.unregistered), ("rejected", statistics.rejected),
            ("acknowledgedResends", statistics.acknowledgedResends),
            ("possibleDuplicates", statistics.possibleDuplicates), ("unavailable", statistics.unavailable),
            ("notDelivered", statistics.notDelivered), ("errorResponses", statistics.errorResponses),
            ("dropped", statistics.dropped), ("feedbackServed", statistics.feedbackServed),
        ]
        return #"{"event":"summary","# + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }
}
