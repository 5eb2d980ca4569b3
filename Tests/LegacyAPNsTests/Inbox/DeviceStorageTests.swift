import APNsInbox
import Testing

/// Apple's store-and-forward as a value, event by event: a push in, a device offline or online,
/// time passing; the fates it decides out.
@Suite struct DeviceStorageTests {
    static let device = try! DeviceToken(bytes: [UInt8](repeating: 0xAB, count: 32))
    static let other = try! DeviceToken(bytes: [UInt8](repeating: 0xCD, count: 32))

    static func push(
        _ id: Int, _ token: DeviceToken = device, topic: String = "com.example.app", collapse: String? = nil,
        expiration: UInt64? = nil
    ) -> DeviceStorage.Push {
        DeviceStorage.Push(id: id, token: token, topic: topic, collapseID: collapse, expiration: expiration)
    }

    @Test func aPushToAnOnlineDeviceIsDeliveredAtOnce() {
        var storage = DeviceStorage()
        #expect(storage.isIdle)
        #expect(storage.receive(Self.push(1), now: 1_000) == [.init(id: 1, fate: .delivered, milliseconds: 1_000)])
        #expect(storage.isIdle)
    }

    @Test func anOfflineDeviceKeepsOnePushPerAppANewerOneReplacesIt() {
        var storage = DeviceStorage(offline: [Self.device])
        #expect(storage.receive(Self.push(1), now: 1_000).map(\.fate) == [.stored])
        let second = storage.receive(Self.push(2), now: 2_000)
        #expect(second.map(\.id) == [1, 2])
        #expect(second.map(\.fate) == [.replaced, .stored])
        #expect(second[0].detail?.contains("one notification per app") == true)
        // Another app on the same device is stored beside it; the same app on another device
        // (online) is delivered.
        #expect(storage.receive(Self.push(3, topic: "com.example.other"), now: 3_000).map(\.fate) == [.stored])
        #expect(storage.receive(Self.push(4, Self.other), now: 3_500).map(\.fate) == [.delivered])
        #expect(storage.storedPushes.map(\.id) == [2, 3])
        // Online: what is stored is delivered, oldest first, at that time.
        let online = storage.setOnline(Self.device, now: 4_000)
        #expect(
            online == [
                .init(id: 2, fate: .delivered, milliseconds: 4_000, detail: "the device came online"),
                .init(id: 3, fate: .delivered, milliseconds: 4_000, detail: "the device came online"),
            ])
        #expect(storage.isIdle)
        #expect(storage.receive(Self.push(5), now: 5_000).map(\.fate) == [.delivered])
    }

    @Test func theSameCollapseIDCoalesces() {
        var storage = DeviceStorage(offline: [Self.device])
        _ = storage.receive(Self.push(1, collapse: "score"), now: 1_000)
        let changes = storage.receive(Self.push(2, collapse: "score"), now: 2_000)
        #expect(changes.map(\.fate) == [.replaced, .stored])
        #expect(changes[0].detail?.contains("same apns-collapse-id") == true)
    }

    @Test func expirationZeroIsNeverStoredAndAPastOneExpiresAtOnce() {
        var storage = DeviceStorage(offline: [Self.device])
        let once = storage.receive(Self.push(1, expiration: 0), now: 1_000)
        #expect(once.map(\.fate) == [.expired])
        #expect(once[0].detail?.contains("never stored") == true)
        #expect(storage.receive(Self.push(2, expiration: 1), now: 5_000).map(\.fate) == [.expired])
        #expect(storage.storedPushes.isEmpty)
        // Expiration 0 to an online device: delivered (it is delivered once, if it can be).
        #expect(storage.receive(Self.push(3, Self.other, expiration: 0), now: 5_000).map(\.fate) == [.delivered])
    }

    @Test func aStoredPushExpiresWhenItsExpirationPassesAtThatTime() {
        var storage = DeviceStorage(offline: [Self.device])
        #expect(storage.receive(Self.push(1, expiration: 10), now: 1_000).map(\.fate) == [.stored])
        #expect(storage.expire(now: 9_999).isEmpty)
        let expired = storage.expire(now: 12_345)
        #expect(expired.count == 1)
        #expect(expired.first?.fate == .expired)
        #expect(expired.first?.milliseconds == 10_000)
        #expect(storage.storedPushes.isEmpty)
        // Coming online later delivers nothing.
        #expect(storage.setOnline(Self.device, now: 20_000).isEmpty)
    }

    @Test func expiriesDueComeFirstWhenAnythingHappens() {
        var storage = DeviceStorage(offline: [Self.device, Self.other])
        _ = storage.receive(Self.push(1, expiration: 2), now: 1_000)
        _ = storage.receive(Self.push(2, Self.other), now: 1_500)
        // A push to another app at 3 s: push 1 expired at 2 s, first.
        let changes = storage.receive(Self.push(3, topic: "com.example.other"), now: 3_000)
        #expect(changes.map(\.id) == [1, 3])
        #expect(changes.map(\.fate) == [.expired, .stored])
        #expect(changes.map(\.milliseconds) == [2_000, 3_000])
        // Going offline twice, online for an online device: nothing.
        #expect(storage.setOffline(Self.device, now: 3_100).isEmpty)
        #expect(storage.setOnline(try! DeviceToken(bytes: [UInt8](repeating: 1, count: 32)), now: 3_200).isEmpty)
        #expect(storage.setOnline(Self.other, now: 4_000).map(\.id) == [2])
    }
}
