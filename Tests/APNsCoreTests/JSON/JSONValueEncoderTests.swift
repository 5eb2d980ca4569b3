import APNsCore
import TestSupport
import Testing

/// Issue #14: custom payload data from any `Encodable`, and literals that interpolate.
@Suite struct JSONValueEncoderTests {
    struct Order: Encodable {
        var id: Int
        var items: [String]
        var note: String?
        var total: Double
        var customer: Customer
    }

    struct Customer: Encodable {
        var name: String
        var vip: Bool
    }

    @Test func structsEncodeInDeclarationOrderWithoutNilOptionals() throws {
        let order = Order(
            id: 7, items: ["tea", "cake"], note: nil, total: 4.5, customer: .init(name: "Bob", vip: true))
        let value = try JSONValue(encoding: order)
        #expect(
            value
                == [
                    "id": 7, "items": ["tea", "cake"], "total": 4.5, "customer": ["name": "Bob", "vip": true],
                ])
        var builder = PayloadBuilder(alert: "Order \(order.id)")
        try builder.setCustomKey("order", encoding: order)
        #expect(
            try builder.build().string
                == #"{"aps":{"alert":"Order 7"},"order":{"id":7,"items":["tea","cake"],"total":4.5,"customer":{"name":"Bob","vip":true}}}"#
        )
    }

    @Test func collectionsOptionalsAndScalarsEncodeAsJSON() throws {
        #expect(try JSONValue(encoding: [1, 2, 3]) == [1, 2, 3])
        #expect(try JSONValue(encoding: ["a": 1]) == ["a": 1])
        #expect(try JSONValue(encoding: [String?.none, "x"]) == [nil, "x"])
        #expect(try JSONValue(encoding: Float(0.1)) == .double(0.1))
        #expect(try JSONValue(encoding: UInt8(200)) == 200)
        #expect(try JSONValue(encoding: "text") == "text")
        #expect(try JSONValue(encoding: Int?.none) == nil)
    }

    @Test func valuesJSONCannotHoldAreRefusedNamingThePath() throws {
        struct Reading: Encodable { var level: Double }
        let error = try #require(throws: LegacyAPNsError.self) {
            try JSONValue(encoding: ["sensor": Reading(level: .infinity)])
        }
        #expect(error.code == .invalidPayload)
        #expect(error.reason.hasPrefix("cannot encode 'sensor.level' as JSON: JSON cannot hold inf"))
        #expect(throws: LegacyAPNsError.self) { try JSONValue(encoding: [UInt64.max]) }
    }

    @Test func customEncodingsAreFollowed() throws {
        enum Kind: String, Encodable { case reminder }
        struct Event: Encodable {
            var kind: Kind
            enum CodingKeys: String, CodingKey { case kind = "event-kind" }
        }
        #expect(try JSONValue(encoding: Event(kind: .reminder)) == ["event-kind": "reminder"])
    }

    @Test func alertsAndJSONValuesTakeInterpolatedStrings() throws {
        let i = 3
        let name = "Ann \"A\""
        #expect(PayloadBuilder(alert: "Message \(i)").alert == .text("Message 3"))
        let value: JSONValue = "Hello \(name)"
        #expect(value == .string(#"Hello Ann "A""#))
        var builder = PayloadBuilder(alert: "Message \(i)", badge: i)
        builder.setCustomKey("from", to: "\(name)")
        #expect(try builder.build().string == #"{"aps":{"alert":"Message 3","badge":3},"from":"Ann \"A\""}"#)
    }

    @Test func reportsPrintAsOneLine() {
        var report = SendReport()
        report.sent = 3
        report.accepted = 3
        report.connections = 1
        report.seconds = 0.0123
        #expect(report.description == "3 sent: 3 accepted, 0 rejected, 0 unconfirmed, 0 resent, 1 connection, 0.012 s")
        report.accepted = 0
        report.failure = LegacyAPNsError(.connectionFailed, "cannot connect to 127.0.0.1:1: Connection refused")
        report.connections = 0
        report.seconds = 1.5
        let token = try! DeviceToken(hexString: String(repeating: "ab", count: 32))
        report.unconfirmed = (1...3).map {
            UnconfirmedNotification(
                position: UInt64($0),
                notification: PushNotification(token: token, payload: Payload(unvalidatedBytes: [])),
                wasWritten: false)
        }
        #expect(
            report.description
                == "3 sent: 0 accepted, 0 rejected, 3 unconfirmed, 0 resent, 0 connections, 1.5 s; unconfirmed: 0 "
                + "unknown fate, 3 not sent; stopped: cannot connect to 127.0.0.1:1: Connection refused")
    }
}
