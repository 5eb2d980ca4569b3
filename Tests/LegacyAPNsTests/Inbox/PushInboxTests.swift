import APNsCore
import Foundation
import GatewaySimulator
import Synchronization
import Testing

@testable import APNsInbox

/// The inbox as a library: bounded, newest first, filtered, cleared, and subscribed to.
@Suite struct PushInboxTests {
    static func frame(_ byte: UInt8, _ alert: String) throws -> Frame {
        let token = try Self.token(byte)
        let payload = try Payload(json: #"{"aps":{"alert":"\#(alert)"}}"#)
        return .notification(
            PushNotification(token: token, payload: payload, identifier: UInt32(byte)), command: .enhanced)
    }

    static func token(_ byte: UInt8) throws -> DeviceToken {
        try DeviceToken(bytes: [UInt8](repeating: byte, count: 32))
    }

    @Test func keepsOnlyTheNewestCapacityNotificationsNewestFirst() throws {
        let inbox = PushInbox(capacity: 3)
        for byte in UInt8(1)...5 { inbox.add(frames: [try Self.frame(byte, "n\(byte)")], connection: 1) }
        #expect(inbox.count == 3)
        #expect(inbox.latestID == 5)
        #expect(inbox.notifications().map(\.id) == [5, 4, 3])
        #expect(inbox.notification(id: 2) == nil)
        #expect(inbox.notification(id: 4)?.token == (try Self.token(4)))
        #expect(inbox.notifications(matching: InboxFilter(limit: 2)).map(\.id) == [5, 4])
        #expect(inbox.notifications(matching: InboxFilter(after: 4)).map(\.id) == [5])
        #expect(inbox.notifications(matching: InboxFilter(token: String(repeating: "03", count: 32))).map(\.id) == [3])
        inbox.removeAll()
        #expect(inbox.notifications().isEmpty)
        inbox.add(frames: [try Self.frame(9, "after")], connection: 2)
        #expect(inbox.notifications().map(\.id) == [6])
    }

    @Test func rejectionsComeFromTheEventsAndFilterByVerdict() throws {
        let inbox = PushInbox()
        let token = try Self.token(7)
        inbox.add(frames: [try Self.frame(1, "ok")], connection: 1)
        inbox.add(
            SimulatorEvent.rejected(
                connection: 1, response: ErrorResponse(status: .invalidToken, identifier: 2), token: token,
                reason: "bad"))
        inbox.add(SimulatorEvent.confirmationAnswered(connection: 1, identifier: 3, accepted: 1))
        #expect(inbox.count == 2)
        let rejected = inbox.notifications(matching: InboxFilter(status: "rejected"))
        #expect(rejected.map(\.status) == ["8 bad"])
        #expect(rejected.first?.payload == nil)
        #expect(inbox.notifications(matching: InboxFilter(status: "accepted")).map(\.id) == [1])
        #expect(inbox.notifications(matching: InboxFilter(status: "8 bad")).map(\.id) == [2])
    }

    @Test func theJSONOfABinaryFrameCarriesItsHexAndPayload() throws {
        let inbox = PushInbox()
        let frame = try Self.frame(1, "</script><img src=x onerror=alert(1)>")
        inbox.add(frames: [frame], connection: 4)
        let item = try #require(inbox.notification(id: 1))
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(item.json.utf8)) as? [String: Any])
        #expect(object["protocol"] as? String == "binary")
        #expect(object["connection"] as? Int == 4)
        #expect(object["status"] as? String == "accepted")
        #expect((object["payload"] as? String)?.contains("</script><img src=x onerror=alert(1)>") == true)
        var writer = ByteWriter()
        try FrameEncoder().encode(
            PushNotification(
                token: try Self.token(1),
                payload: try Payload(json: #"{"aps":{"alert":"</script><img src=x onerror=alert(1)>"}}"#),
                identifier: 1), as: .enhanced, into: &writer)
        #expect(object["frameHex"] as? String == writer.bytes.map { String(format: "%02x", $0) }.joined())
        #expect((object["received"] as? String)?.hasSuffix("Z") == true)
    }

    @Test func aStreamReaderGetsTheNewestUpToItsLimitAndIsToldWhatItSkipped() throws {
        let inbox = PushInbox(capacity: 5)
        let start = inbox.cursor
        for byte in UInt8(1)...8 { inbox.add(frames: [try Self.frame(byte, "n\(byte)")], connection: 1) }
        let few = inbox.changes(since: start, limit: 2)
        #expect(few.added.map(\.id) == [7, 8])
        #expect(few.skipped == 6)
        #expect(few.cursor.id == 8)
        // Without a limit, what the ring no longer keeps is skipped.
        let all = inbox.changes(since: start)
        #expect(all.added.map(\.id) == [4, 5, 6, 7, 8])
        #expect(all.skipped == 3)
        #expect(inbox.changes(since: all.cursor).added.isEmpty)
    }

    @Test func aSubscriberSeesWhatIsAddedAfterIt() async throws {
        let inbox = PushInbox()
        let updates = inbox.updates()
        inbox.add(frames: [try Self.frame(1, "a"), try Self.frame(2, "b")], connection: 1)
        var seen: [Int] = []
        for await notification in updates {
            seen.append(notification.id)
            if seen.count == 2 { break }
        }
        #expect(seen == [1, 2])
    }

    @Test(arguments: [
        ("2026-01-31T12:00:00Z", Int64(1_769_860_800_000)),
        ("2026-01-31T12:00:00.25Z", Int64(1_769_860_800_250)),
        ("2026-01-31T13:00:00+01:00", Int64(1_769_860_800_000)),
    ])
    func sinceTakesRFC3339(text: String, milliseconds: Int64) {
        #expect(InboxServer.parseRFC3339(text) == milliseconds)
    }
}

/// The HTTP/2 simulator's inbox with devices: fates decided as pushes arrive and devices come
/// and go, each change seen by a stream reader, and the delivery log by `apns-unique-id`.
@Suite struct PushInboxDeviceTests {
    final class Clock: Sendable {
        let now = Mutex<Int64>(1_000_000)
        func advance(_ milliseconds: Int64) { now.withLock { $0 += milliseconds } }
    }

    static func accepted(_ byte: UInt8, topic: String = "com.example.app", expiration: UInt32? = nil, unique: UInt128)
        throws -> AcceptedRequest
    {
        let request = try ProviderRequest(
            deviceToken: try PushInboxTests.token(byte), payload: try Payload(json: #"{"aps":{"alert":"hi"}}"#),
            topic: topic, expiration: expiration.map { Expiration(rawValue: $0) })
        return AcceptedRequest(
            request: request, apnsID: APNsID(rawValue: unique), connection: 1, uniqueID: APNsID(rawValue: unique + 1000)
        )
    }

    @Test func fatesChangeAsDevicesComeAndGoAndStreamsSeeTheChanges() throws {
        let clock = Clock()
        let offline = try PushInboxTests.token(1)
        let inbox = PushInbox(simulatesDevices: true, offline: [offline], clock: { clock.now.withLock { $0 } })
        let start = inbox.cursor
        inbox.add(requests: [try Self.accepted(1, unique: 1), try Self.accepted(2, unique: 2)])
        #expect(inbox.notification(id: 1)?.fate == .stored)
        #expect(inbox.notification(id: 2)?.fate == .delivered)

        // A newer push for the same app replaces the stored one; a push with expiration 0 expires.
        inbox.add(requests: [
            try Self.accepted(1, unique: 3), try Self.accepted(1, topic: "b", expiration: 0, unique: 4),
        ])
        #expect(inbox.notifications().map { $0.fate } == [.expired, .stored, .delivered, .replaced])
        let first = inbox.changes(since: start)
        #expect(first.added.map(\.id) == [1, 2, 3, 4])
        #expect(first.updated.isEmpty)  // push 1 was replaced before the reader saw it: it reads it as it is now

        // Online: push 3 is delivered; a reader that saw everything before sees that update alone.
        clock.advance(5_000)
        inbox.setOnline(offline)
        let second = inbox.changes(since: first.cursor)
        #expect(second.added.isEmpty)
        #expect(second.updated.map(\.id) == [3])
        #expect(second.updated.first?.fate == .delivered)
        #expect(inbox.changes(since: second.cursor).updated.isEmpty)
        #expect(inbox.notifications(matching: InboxFilter(fate: .delivered)).map(\.id) == [3, 2])

        // The delivery log, by apns-unique-id: accepted, stored, delivered 5 s later.
        let log = try #require(inbox.notification(uniqueID: APNsID(rawValue: 1003)))
        #expect(log.deliveryEvents.map(\.event) == ["accepted", "stored", "delivered"])
        #expect(log.deliveryEvents.map(\.milliseconds).last! - log.receivedMilliseconds == 5_000)
        var bytes: [UInt8] = []
        log.appendDeliveryLog(to: &bytes)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(object["fate"] as? String == "delivered")
        #expect(
            (object["events"] as? [[String: Any]])?.compactMap { $0["event"] as? String } == [
                "accepted", "stored", "delivered",
            ])
        // Delivered at once: accepted and delivered at the same time.
        let direct = try #require(inbox.notification(uniqueID: APNsID(rawValue: 1002)))
        #expect(direct.deliveryEvents.map(\.event) == ["accepted", "delivered"])
    }

    @Test func aStoredPushExpiresWhenItsTimeHasComeAsOfTheNextRead() throws {
        let clock = Clock()
        let offline = try PushInboxTests.token(1)
        let inbox = PushInbox(simulatesDevices: true, offline: [offline], clock: { clock.now.withLock { $0 } })
        inbox.add(requests: [try Self.accepted(1, expiration: 1_010, unique: 1)])  // expires at 1,010,000 ms
        #expect(inbox.notification(id: 1)?.fate == .stored)
        let cursor = inbox.cursor
        clock.advance(20_000)
        #expect(inbox.notification(id: 1)?.fate == .expired)
        #expect(inbox.notification(id: 1)?.deliveryLog.last?.milliseconds == 1_010_000)
        #expect(inbox.changes(since: cursor).updated.map(\.id) == [1])
        #expect(inbox.storedPushes.isEmpty)
    }

    @Test func pushesKeptAsTheirBatchWhileEveryDeviceIsOnlineReadAsDelivered() throws {
        let clock = Clock()
        let inbox = PushInbox(simulatesDevices: true, clock: { clock.now.withLock { $0 } })
        inbox.add(requests: [try Self.accepted(1, unique: 1), try Self.accepted(2, unique: 2)])
        #expect(inbox.notifications().map(\.id) == [2, 1])
        #expect(inbox.notifications().map(\.fate) == [.delivered, .delivered])
        #expect(inbox.notification(id: 2)?.request?.authorizationToken == nil)
        let found = try #require(inbox.notification(uniqueID: APNsID(rawValue: 1001)))
        #expect(found.id == 1)
        #expect(found.deliveryEvents.map(\.event) == ["accepted", "delivered"])
        // A device goes offline: the next push to it is stored, the earlier ones stay delivered.
        inbox.setOffline(try PushInboxTests.token(1))
        inbox.add(requests: [try Self.accepted(1, unique: 3)])
        #expect(inbox.notifications().map(\.fate) == [.stored, .delivered, .delivered])
        #expect(inbox.notification(uniqueID: APNsID(rawValue: 1003))?.id == 3)
    }

    @Test func anInboxWithoutDevicesGivesNoFates() throws {
        let inbox = PushInbox()
        inbox.add(requests: [try Self.accepted(1, unique: 1)])
        #expect(inbox.notification(id: 1)?.fate == nil)
        #expect(!inbox.simulatesDevices)
    }
}
