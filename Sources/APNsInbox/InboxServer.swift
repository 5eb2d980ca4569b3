import APNsCore
internal import APNsRuntime
import Synchronization

/// Serves a ``PushInbox`` over plain HTTP/1.1: a page for a browser and a JSON API for tests.
/// `legacy-push serve --inbox`, `serve --http2 --inbox` and `bridge --inbox` run one.
///
/// | request | answer |
/// | --- | --- |
/// | `GET /` | the page: every notification kept, newest first, updated live (served from the binary: no CDN, no fonts) |
/// | `GET /api/v1/notifications` | `{"notifications":[...]}` newest first (``InboxNotification/json``); query `token`, `topic`, `status` (`accepted`, `rejected` or a verdict), `fate`, `since` (RFC 3339 or UNIX milliseconds), `limit` |
/// | `GET /api/v1/notifications/ID` | one notification, or 404 |
/// | `DELETE /api/v1/notifications` | 204: the inbox is emptied |
/// | `GET /api/v1/status` | `{"kept":N,"capacity":N,"latestId":N,"streams":N}`: how many are kept, of how many, the newest id, and how many event streams are open (a test can wait for a browser to be watching) |
/// | `GET /api/v1/stream` | `text/event-stream`: one `data:` line of JSON per notification as it arrives (`id:` is its id; `?after=ID` or `Last-Event-ID` resumes; at most ``streamBatchLimit`` per 0.2 s, a `: skipped N` comment for the rest), and an `event: update` with the notification as it is now when its fate changes |
/// | `POST /api/v1/devices/TOKEN/offline`, `.../online` | 204: the device goes offline (pushes to it are stored) or comes online (what is stored is delivered); HTTP/2 simulator only |
/// | `GET /api/v1/devices` | `{"offline":["<token>",...],"stored":[{"id":N,"token":"<hex>","topic":"..."},...]}` |
/// | `GET /api/v1/deliveries/UNIQUE-ID` | the delivery log of the push answered with that `apns-unique-id` (``InboxNotification/appendDeliveryLog(to:)``), or 404 |
///
/// The runtime's small HTTP server serves it, bounded as APNsMetrics's `MetricsServer` is (16 connections,
/// 8 KiB request heads, 10 s per request), bound to 127.0.0.1 unless you pass another host. A
/// payload is whatever a sender sent: the page puts it into the document as text only (never as
/// markup), under a content security policy that allows no script but its own.
public final class InboxServer: Sendable {
    private let inbox: PushInbox
    private let service: HTTPService
    private let streams = Streams()

    /// The number of event streams open now (``InboxServer`` answers it in `GET /api/v1/status`).
    final class Streams: Sendable {
        let open = Atomic<Int>(0)
    }

    /// How often a stream looks for new notifications, in seconds.
    static let streamInterval = 0.2

    /// The most notifications a stream sends per look (the newest; 5,000 a second): a sender
    /// faster than that makes a stream skip some (it says how many, in a comment line), so that
    /// a page left open costs the simulator a bounded amount of work.
    public static let streamBatchLimit = 1000

    /// A server for `inbox` on `host:port` (port 0: a free one, reported by ``start()``).
    public init(inbox: PushInbox, host: String = "127.0.0.1", port: UInt16) {
        self.inbox = inbox
        var limits = HTTPServer.Limits()
        limits.methods.insert("POST")
        self.service = HTTPService(host: host, port: port, limits: limits)
    }

    /// Binds and starts serving; returns the address (the real port when 0 was asked for).
    /// - Throws: ``LegacyAPNsError`` when the address cannot be bound.
    public func start() async throws -> Endpoint {
        let inbox = self.inbox
        let streams = self.streams
        return try service.start { request in Self.answer(request, inbox: inbox, streams: streams) }
    }

    /// Stops serving (requests being answered finish first; streams end).
    public func stop() async {
        await service.stop()
    }

    static func answer(_ request: HTTPRequest, inbox: PushInbox, streams: Streams) -> HTTPResponse {
        let path = request.path
        if request.method == "POST" {
            return devices(path, inbox: inbox)
        }
        if request.method == "DELETE" {
            guard path == "/api/v1/notifications" else {
                return .text(405, "\(path.prefix(200)) is read with GET (DELETE empties /api/v1/notifications)")
            }
            inbox.removeAll()
            return HTTPResponse(status: 204, contentType: "text/plain; charset=utf-8", body: [])
        }
        switch path {
        case "/", "/index.html":
            return asset(InboxPage.html, type: "text/html; charset=utf-8")
        case "/inbox.js":
            return asset(InboxPage.script, type: "text/javascript; charset=utf-8")
        case "/inbox.css":
            return asset(InboxPage.style, type: "text/css; charset=utf-8")
        case "/initial.js":
            // The page's first list, as a script the page loads with itself: JSON is JavaScript, and
            // a file of script is never parsed as HTML, so nothing in a payload can end it.
            var body = Array("inboxStart(".utf8)
            appendList(inbox.notifications(matching: InboxFilter(limit: InboxPage.shown)), to: &body)
            body.append(contentsOf: ");\n".utf8)
            return asset(body, type: "text/javascript; charset=utf-8")
        case "/api/v1/notifications":
            let filter: InboxFilter
            do {
                filter = try Self.filter(request)
            } catch {
                return .text(400, error.reason)
            }
            var body: [UInt8] = []
            appendList(inbox.notifications(matching: filter), to: &body)
            body.append(0x0A)
            return json(body)
        case "/api/v1/stream":
            let resume = request.field("last-event-id") ?? request.queryItem("after")
            var cursor = inbox.cursor
            if let id = resume.flatMap({ Int($0) }) { cursor.id = id }
            let after = cursor
            return .stream(contentType: "text/event-stream") { writer in
                streams.open.add(1, ordering: .relaxed)
                defer { streams.open.subtract(1, ordering: .relaxed) }
                stream(inbox, after: after, to: writer)
            }
        case "/api/v1/status":
            let status =
                #"{"kept":\#(inbox.count),"capacity":\#(inbox.capacity),"latestId":\#(inbox.latestID),"#
                + #""streams":\#(streams.open.load(ordering: .relaxed))}"# + "\n"
            return json(Array(status.utf8))
        case "/api/v1/devices":
            var body = Array(#"{"offline":["#.utf8)
            for (index, token) in inbox.offlineDevices.map(\.hexString).sorted().enumerated() {
                if index > 0 { body.append(UInt8(ascii: ",")) }
                appendJSONString(token, to: &body)
            }
            body.append(contentsOf: #"],"stored":["#.utf8)
            for (index, push) in inbox.storedPushes.enumerated() {
                if index > 0 { body.append(UInt8(ascii: ",")) }
                body.append(contentsOf: #"{"id":\#(push.id),"token":"\#(push.token.hexString)","topic":"#.utf8)
                appendJSONString(push.topic, to: &body)
                body.append(UInt8(ascii: "}"))
            }
            body.append(contentsOf: "]}\n".utf8)
            return json(body)
        default:
            let deliveries = "/api/v1/deliveries/"
            if path.hasPrefix(deliveries) {
                let text = path.dropFirst(deliveries.count)
                guard let uniqueID = APNsID(String(text)), let notification = inbox.notification(uniqueID: uniqueID)
                else {
                    return .text(
                        404,
                        "no push with apns-unique-id \(text.prefix(40)) in the inbox (serve --http2 answers one in "
                            + "development)")
                }
                var body: [UInt8] = []
                notification.appendDeliveryLog(to: &body)
                body.append(0x0A)
                return json(body)
            }
            let prefix = "/api/v1/notifications/"
            if path.hasPrefix(prefix) {
                guard let id = Int(path.dropFirst(prefix.count)), let notification = inbox.notification(id: id) else {
                    return .text(404, "no notification \(path.dropFirst(prefix.count).prefix(40)) in the inbox")
                }
                var body: [UInt8] = []
                notification.appendJSON(to: &body)
                body.append(0x0A)
                return json(body)
            }
            return .text(404, "not found: \(path.prefix(200)) (try /, /api/v1/notifications, /api/v1/stream)")
        }
    }

    /// `{"notifications":[...]}`.
    private static func appendList(_ notifications: [InboxNotification], to body: inout [UInt8]) {
        body.append(contentsOf: #"{"notifications":["#.utf8)
        for (index, notification) in notifications.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            notification.appendJSON(to: &body)
        }
        body.append(contentsOf: "]}".utf8)
    }

    private static func asset(_ text: String, type: String) -> HTTPResponse {
        asset(Array(text.utf8), type: type)
    }

    private static func asset(_ body: [UInt8], type: String) -> HTTPResponse {
        HTTPResponse(
            status: 200, contentType: type, body: body,
            fields: [
                (
                    "Content-Security-Policy",
                    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'"
                ),
                ("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-cache"),
            ])
    }

    private static func json(_ body: [UInt8]) -> HTTPResponse {
        HTTPResponse(
            status: 200, contentType: "application/json", body: body,
            fields: [("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff")])
    }

    /// `POST /api/v1/devices/TOKEN/offline` and `/online`.
    private static func devices(_ path: String, inbox: PushInbox) -> HTTPResponse {
        let prefix = "/api/v1/devices/"
        let parts = path.hasPrefix(prefix) ? path.dropFirst(prefix.count).split(separator: "/") : []
        guard parts.count == 2, parts[1] == "offline" || parts[1] == "online" else {
            return .text(
                405, "\(path.prefix(200)) is read with GET (POST takes /api/v1/devices/TOKEN/offline or /online)")
        }
        guard inbox.simulatesDevices else {
            return .text(404, "devices are simulated by serve --http2 only (this inbox has no devices)")
        }
        guard let token = try? DeviceToken(hexString: parts[0]) else {
            return .text(400, "\(parts[0].prefix(200)) is not a device token (hexadecimal, an even number of digits)")
        }
        if parts[1] == "offline" { inbox.setOffline(token) } else { inbox.setOnline(token) }
        return HTTPResponse(status: 204, contentType: "text/plain; charset=utf-8", body: [])
    }

    /// Writes what arrives after `after`, oldest first, and what changes, until the client leaves
    /// or the server stops.
    private static func stream(_ inbox: PushInbox, after: PushInbox.Cursor, to writer: HTTPStreamWriter) {
        var cursor = after
        guard writer.write(Array(": inbox stream\nretry: 1000\n\n".utf8)) else { return }
        repeat {
            let now = inbox.cursor
            if now.id > cursor.id || now.revision > cursor.revision || inbox.simulatesDevices {
                let (added, updated, skipped, next) = inbox.changes(since: cursor, limit: streamBatchLimit)
                cursor = next
                var bytes: [UInt8] = []
                if skipped > 0 {
                    bytes.append(contentsOf: ": skipped \(skipped) (not kept, or too many at once)\n\n".utf8)
                }
                for notification in added {
                    bytes.append(contentsOf: "id: \(notification.id)\ndata: ".utf8)
                    notification.appendJSON(to: &bytes)
                    bytes.append(contentsOf: "\n\n".utf8)
                }
                for notification in updated {
                    bytes.append(contentsOf: "event: update\ndata: ".utf8)
                    notification.appendJSON(to: &bytes)
                    bytes.append(contentsOf: "\n\n".utf8)
                }
                if !bytes.isEmpty, !writer.write(bytes) { return }
            }
        } while writer.pause(streamInterval)
    }

    /// The filter a list request's query asks for.
    static func filter(_ request: HTTPRequest) throws(LegacyAPNsError) -> InboxFilter {
        var filter = InboxFilter()
        for (name, value) in request.queryItems {
            switch name {
            case "token": filter.token = value.lowercased()
            case "topic": filter.topic = value
            case "status": filter.status = value
            case "fate":
                guard let fate = InboxNotification.Fate(rawValue: value) else {
                    throw LegacyAPNsError(.invalidValue, "fate must be delivered, stored, replaced or expired")
                }
                filter.fate = fate
            case "since":
                guard let since = Int64(value) ?? parseRFC3339(value) else {
                    throw LegacyAPNsError(
                        .invalidValue, "since must be RFC 3339 (2026-01-31T12:00:00Z) or UNIX milliseconds")
                }
                filter.sinceMilliseconds = since
            case "limit":
                guard let limit = Int(value), limit > 0 else {
                    throw LegacyAPNsError(.invalidValue, "limit must be a positive number")
                }
                filter.limit = limit
            default:
                throw LegacyAPNsError(
                    .invalidValue, "unknown parameter \(name.prefix(40)) (token, topic, status, fate, since, limit)")
            }
        }
        return filter
    }

    /// UNIX milliseconds of `2026-01-31T12:00:00Z` (fractions of a second and `+hh:mm` allowed).
    static func parseRFC3339(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        func number(_ start: Int, _ count: Int) -> Int64? {
            guard start + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[start..<start + count] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard bytes.count >= 20, let year = number(0, 4), bytes[4] == UInt8(ascii: "-"), let month = number(5, 2),
            bytes[7] == UInt8(ascii: "-"), let day = number(8, 2), bytes[10] | 0x20 == UInt8(ascii: "t"),
            let hour = number(11, 2), bytes[13] == UInt8(ascii: ":"), let minute = number(14, 2),
            bytes[16] == UInt8(ascii: ":"), let second = number(17, 2), (1...12).contains(month),
            (1...31).contains(day),
            hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var milliseconds: Int64 = 0
        if bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale: Int64 = 100
            while index < bytes.count, let digit = number(index, 1) {
                milliseconds += digit * scale
                scale /= 10
                index += 1
            }
        }
        guard index < bytes.count else { return nil }
        var offset: Int64 = 0
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            guard index + 1 == bytes.count else { return nil }
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard index + 6 == bytes.count, let hours = number(index + 1, 2), bytes[index + 3] == UInt8(ascii: ":"),
                let minutes = number(index + 4, 2)
            else { return nil }
            offset = (hours * 60 + minutes) * 60 * (bytes[index] == UInt8(ascii: "+") ? 1 : -1)
        default:
            return nil
        }
        let seconds = UTCTime.seconds(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        return (seconds - offset) * 1000 + milliseconds
    }
}
