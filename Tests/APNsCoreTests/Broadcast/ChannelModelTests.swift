import APNsCore
import Testing

/// Channel ids, storage policies, the bodies of reads and lists, broadcast requests and the
/// answers, as values.
@Suite struct ChannelModelTests {
    @Test func channelIDsAreBase64() {
        for good in ["dHN0LXU2Cg==", "YQ==", "YWI=", "abcd", "a+/9"] { #expect(ChannelID(good) != nil, "\(good)") }
        for bad in ["", "===", "a=b", "ab===", "no spaces", "é", String(repeating: "a", count: 257)] {
            #expect(ChannelID(bad) == nil, "\(bad)")
        }
        var generator = SystemRandomNumberGenerator()
        let id = ChannelID.random(using: &generator)
        #expect(id.rawValue.count == 24 && id.rawValue.hasSuffix("==") && ChannelID(id.rawValue) == id)
    }

    @Test func readAndListBodiesRoundTripAndAnEmptyListBodyIsNoChannels() throws {
        let configuration = ChannelConfiguration(storagePolicy: .mostRecentMessageStored)
        #expect(
            String(decoding: configuration.json, as: UTF8.self)
                == #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#)
        #expect(ChannelConfiguration(json: configuration.json) == configuration)
        #expect(ChannelConfiguration(json: Array("{}".utf8)) == nil)
        let ids = [ChannelID("YQ==")!, ChannelID("YWI=")!]
        #expect(String(decoding: ChannelID.listJSON(ids), as: UTF8.self) == #"{"channels":["YQ==","YWI="]}"#)
        #expect(ChannelID.list(fromJSON: ChannelID.listJSON(ids)) == ids)
        #expect(ChannelID.list(fromJSON: []) == [])
        #expect(ChannelID.list(fromJSON: Array(" \n".utf8)) == [])
        #expect(ChannelID.list(fromJSON: Array(#"{"channels":[1]}"#.utf8)) == nil)
        #expect(ChannelID.list(fromJSON: Array("[]".utf8)) == nil)
    }

    @Test func requestsFollowApplesPathsAndHeaders() throws {
        let id = ChannelID("dHN0LXU2Cg==")!
        let create = ChannelRequest(bundleID: "com.example.app", operation: .create(.noMessageStored))
        #expect(create.method == "POST" && create.path == "/1/apps/com.example.app/channels")
        #expect(
            String(decoding: create.body, as: UTF8.self) == #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#)
        let read = ChannelRequest(bundleID: "com.example.app", operation: .read(id))
        #expect(read.method == "GET" && read.path == "/1/apps/com.example.app/channels" && read.body.isEmpty)
        #expect(ChannelRequest(bundleID: "com.example.app", operation: .delete(id)).method == "DELETE")
        #expect(
            ChannelRequest(bundleID: "com.example.app", operation: .list).path == "/1/apps/com.example.app/all-channels"
        )

        let payload = try Payload(json: #"{"aps":{"event":"update","timestamp":1,"content-state":{}}}"#)
        let broadcast = BroadcastRequest(bundleID: "com.example.app", channelID: id, payload: payload)
        #expect(broadcast.path == "/4/broadcasts/apps/com.example.app" && broadcast.problem() == nil)
        #expect(broadcast.pushType.rawValue == "liveactivity" && broadcast.expiration.rawValue == 0)
        var suffixed = broadcast
        suffixed.bundleID += ".push-type.liveactivity"
        #expect(suffixed.problem()?.reason == .topicDisallowed)
        var large = broadcast
        large.payload = Payload(unvalidatedBytes: [UInt8](repeating: 0x20, count: 5121))
        #expect(large.problem()?.reason == .payloadTooLarge)
        var start = broadcast
        start.payload = try Payload(
            json:
                #"{"aps":{"event":"start","timestamp":1,"content-state":{},"alert":"a","attributes-type":"T","attributes":{}}}"#
        )
        #expect(start.problem()?.explanation.contains("cannot start") == true)
    }

    @Test func answersCarryTheRequestIDAndAFailureItsReason() {
        let refused = ChannelResponse(rejecting: .channelNotRegistered, requestID: APNsID(rawValue: 5))
        #expect(refused.status == 400 && !refused.isSuccess)
        #expect(String(decoding: refused.bodyBytes, as: UTF8.self) == #"{"reason":"ChannelNotRegistered"}"#)
        var read = ChannelResponse(status: 400)
        read.takeBody(refused.bodyBytes)
        #expect(read.reason == .channelNotRegistered)
        var success = ChannelResponse(status: 200)
        success.takeBody(refused.bodyBytes)
        #expect(success.reason == nil && success.body == refused.bodyBytes)
        #expect(ChannelResponse(status: 201, channelID: ChannelID("YQ==")).description == "201")
        #expect(MessageStoragePolicy.mostRecentMessageStored.description == "1 (most recent message stored)")
    }
}
