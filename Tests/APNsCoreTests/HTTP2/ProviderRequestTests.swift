import APNsCore
import Testing

@Suite struct ProviderRequestTests {
    static let token = try! DeviceToken(hexString: "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad")

    static func full() -> ProviderRequest {
        try! ProviderRequest(
            deviceToken: token, payload: try! Payload(json: #"{"aps":{"alert":"hi"}}"#), topic: "com.example.app",
            pushType: .alert, apnsID: APNsID("123e4567-e89b-12d3-a456-4266554400a0"),
            expiration: Expiration(rawValue: 1_700_000_000), priority: .conservePower, collapseID: "score",
            authorizationToken: "eyJ.e30.sig")
    }

    static func headers(_ request: ProviderRequest, first: Bool) -> HTTP2HeaderList {
        var headers = HTTP2HeaderList()
        request.writeHeaders(into: &headers, authority: "api.push.apple.com", isFirstOnConnection: first)
        return headers
    }

    @Test func theFirstRequestOnAConnectionIndexesTheChangingHeaderNames() {
        let headers = Self.headers(Self.full(), first: true)
        #expect(
            headers.description == """
                :method: POST
                :scheme: https
                :path: /3/device/740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad
                :authority: api.push.apple.com
                authorization: bearer eyJ.e30.sig
                apns-push-type: alert
                apns-id: 123e4567-e89b-12d3-a456-4266554400a0
                apns-expiration: 1700000000
                apns-priority: 5
                apns-topic: com.example.app
                apns-collapse-id: score
                """)
        let never = (0..<headers.count).filter { headers.fields[$0].indexing == .never }.map { headers.name(at: $0) }
        #expect(never == [":path", "authorization"])
    }

    @Test func laterRequestsSendChangingValuesWithoutIndexing() {
        let headers = Self.headers(Self.full(), first: false)
        let never = (0..<headers.count).filter { headers.fields[$0].indexing == .never }.map { headers.name(at: $0) }
        #expect(never == [":path", "authorization", "apns-id", "apns-expiration", "apns-collapse-id"])
    }

    @Test func absentFieldsAreNotSent() throws {
        let request = try ProviderRequest(deviceToken: Self.token, payload: Payload(unvalidatedBytes: [0x7B, 0x7D]))
        let headers = Self.headers(request, first: true)
        #expect((0..<headers.count).map { headers.name(at: $0) } == [":method", ":scheme", ":path", ":authority"])
        #expect(request.path == "/3/device/" + Self.token.hexString)
    }

    @Test func tokensShorterThan32BytesAreRefusedAndLongerOnesAccepted() throws {
        let short = try DeviceToken(bytes: [UInt8](repeating: 1, count: 31))
        #expect(throws: LegacyAPNsError(.invalidToken, "token has 31 bytes, the HTTP/2 API needs at least 32")) {
            try ProviderRequest(deviceToken: short, payload: Payload(unvalidatedBytes: []))
        }
        let long = try DeviceToken(bytes: [UInt8](repeating: 0xCD, count: 100))
        let request = try ProviderRequest(deviceToken: long, payload: Payload(unvalidatedBytes: []))
        #expect(
            Self.headers(request, first: true).value(forName: ":path") == "/3/device/"
                + String(repeating: "cd", count: 100))
    }

    @Test func unusualPrioritiesAreWrittenAsTheirNumber() throws {
        var request = try ProviderRequest(deviceToken: Self.token, payload: Payload(unvalidatedBytes: []))
        for (priority, text) in [(Priority.immediate, "10"), (.lowest, "1"), (Priority(rawValue: 7), "7")] {
            request.priority = priority
            #expect(Self.headers(request, first: false).value(forName: "apns-priority") == text)
        }
    }

    /// The client's headers, read back by a server and validated, give the same request.
    @Test(arguments: [true, false])
    func headersReadBackByAServerGiveTheSameRequest(tokenAuth: Bool) {
        var request = Self.full()
        if !tokenAuth { request.authorizationToken = nil }
        let headers = Self.headers(request, first: true)
        var head = ProviderRequestHead()
        for index in 0..<headers.count { head.add(name: headers.name(at: index), value: headers.value(at: index)) }
        let authorization: ProviderAuthorization =
            tokenAuth ? .token(.accepted(topics: nil)) : .certificate(topics: ["com.example.app"])
        #expect(
            ProviderRequestValidator.validate(head, body: request.payload.bytes, authorization: authorization)
                == .accepted(request))
    }
}

@Suite struct HTTP2HeaderListTests {
    @Test func everyWayOfAppendingKeepsOrderAndBytes() {
        var list = HTTP2HeaderList()
        list.append(name: ":status", value: "200")
        list.append(name: "a", decimal: 0)
        list.append(name: "b", decimal: UInt64.max, indexing: .never)
        list.append(name: "c", prefix: "bearer ", value: "t")
        Array("x-raw".utf8).withUnsafeBytes { name in
            Array("é".utf8).withUnsafeBytes { list.append(name: name, value: $0) }
        }
        list.append(name: "d", valueCount: 3) { $0.copyBytes(from: Array("xyz".utf8)) }
        #expect(list.count == 6)
        #expect(list.description == ":status: 200\na: 0\nb: 18446744073709551615\nc: bearer t\nx-raw: é\nd: xyz")
        #expect(list.fields.map(\.indexing) == [.automatic, .automatic, .never, .automatic, .automatic, .automatic])
    }

    @Test func removeAllKeepsTheStorage() {
        var list = HTTP2HeaderList(byteCapacity: 0, fieldCapacity: 0)
        for _ in 0..<10 { list.append(name: "apns-topic", value: "com.example.app") }
        let bytes = list.bytes.capacity
        let fields = list.fields.capacity
        list.removeAll()
        #expect(list.count == 0 && list.bytes.isEmpty)
        #expect(list.bytes.capacity == bytes && list.fields.capacity == fields)
    }
}

@Suite struct ProviderRequestHeadTests {
    @Test func keepsTheAPNsFieldsAndRemembersTheFirstDuplicate() {
        var head = ProviderRequestHead()
        head.add(name: ":method", value: "POST")
        head.add(name: "user-agent", value: "curl")
        head.add(name: "apns-topic", value: "first")
        head.add(name: "apns-topic", value: "second")
        head.add(name: "apns-id", value: "x")
        head.add(name: "apns-id", value: "y")
        #expect(head.string(.method) == "POST")
        #expect(head.string(.topic) == "first")
        #expect(head.duplicate == .topic)
        #expect(!head.contains(.path))
        head.reset()
        #expect(head.duplicate == nil && head.string(.method) == nil)
    }

    @Test(
        arguments: [
            ("bearer abc", "abc"), ("Bearer abc", "abc"), ("BEARER a.b.c", "a.b.c"), ("bearer ", nil),
            ("basic abc", nil),
            ("bearerXabc", nil), ("", nil),
        ] as [(String, String?)])
    func theBearerTokenIsReadForTheCallersCheck(value: String, token: String?) {
        var head = ProviderRequestHead()
        head.add(name: "authorization", value: value)
        #expect(head.bearerToken == token)
    }
}
