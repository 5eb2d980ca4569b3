import Testing

@testable import APNsCore

@Suite struct ProviderResponseTests {
    static func decode(_ text: String) -> Result<ProviderResponse.Body, LegacyAPNsError> {
        ProviderResponse.decodeBody(Array(text.utf8))
    }

    @Test func failureBodyEncodesAndDecodesBack() {
        let response = ProviderResponse(rejecting: .badDeviceToken)
        #expect(String(decoding: response.bodyBytes, as: UTF8.self) == #"{"reason":"BadDeviceToken"}"#)
        #expect(Self.decode(#"{"reason":"BadDeviceToken"}"#) == .success(.init(reason: .badDeviceToken)))
    }

    @Test func unregisteredCarriesItsTimestampInMilliseconds() {
        let response = ProviderResponse(rejecting: .unregistered, timestamp: 1_700_000_000_123)
        #expect(response.status == 410)
        let body = String(decoding: response.bodyBytes, as: UTF8.self)
        #expect(body == #"{"reason":"Unregistered","timestamp":1700000000123}"#)
        #expect(Self.decode(body) == .success(.init(reason: .unregistered, timestamp: 1_700_000_000_123)))
        #expect(response.description == "410 Unregistered (since 1700000000123 ms)")
    }

    @Test func successHasNoBody() {
        let response = ProviderResponse.success(apnsID: APNsID(rawValue: 5))
        #expect(!response.hasBody)
        #expect(response.bodyBytes.isEmpty)
        #expect(response.isSuccess && response.retryAdvice == .delivered)
    }

    @Test func reasonsWithQuotesAreEscaped() {
        let body = ProviderResponse(status: 400, reason: ProviderReason(rawValue: #"Odd "one"\"#)).bodyBytes
        #expect(String(decoding: body, as: UTF8.self) == #"{"reason":"Odd \"one\"\\"}"#)
        #expect(ProviderResponse.decodeBody(body) == .success(.init(reason: ProviderReason(rawValue: #"Odd "one"\"#))))
    }

    @Test(
        arguments: [
            (#"{"reason":"BrandNewReason"}"#, ProviderReason(rawValue: "BrandNewReason"), nil),
            (#" { "timestamp" : 12 , "reason" : "Unregistered" } "#, .unregistered, 12),
            (#"{"reason":"Bad\u0054opic","extra":{"nested":[1,2,{"x":null}]}}"#, .badTopic, nil),
            (#"{"reason":5,"timestamp":"12"}"#, nil, nil),
            (#"{"reason":"A","reason":"B"}"#, ProviderReason(rawValue: "B"), nil),
            (#"{"timestamp":-5}"#, nil, nil),
            (#"{"timestamp":1.5}"#, nil, nil),
            (#"{"timestamp":1e3}"#, nil, nil),
            (#"{"timestamp":99999999999999999999999}"#, nil, nil),
            (#"{"\u0072eason":"Shutdown"}"#, .shutdown, nil),
            ("{}", nil, nil),
        ] as [(String, ProviderReason?, UInt64?)])
    func bodiesAreReadLeniently(text: String, reason: ProviderReason?, timestamp: UInt64?) {
        #expect(Self.decode(text) == .success(.init(reason: reason, timestamp: timestamp)))
    }

    @Test(arguments: [
        ("", "response body is not a JSON object: no JSON value at byte 0"),
        ("   ", "response body is not a JSON object: no JSON value at byte 3"),
        ("[]", "response body is not a JSON object: found '[' where '{' should start at byte 0"),
        (#""Shutdown""#, "response body is not a JSON object: found '\"' where '{' should start at byte 0"),
        ("{", "response body is not a JSON object: unexpected end of JSON in an object at byte 1"),
        (#"{"reason":}"#, "response body is not a JSON object: unexpected '}', expected a JSON value at byte 10"),
        ("{} x", "response body is not a JSON object: unexpected 'x' after the JSON value at byte 3"),
        ("<html>503</html>", "response body is not a JSON object: unexpected '<', expected a JSON value at byte 0"),
    ])
    func garbageIsAFailureValueNamingTheProblem(text: String, message: String) {
        #expect(Self.decode(text) == .failure(LegacyAPNsError(.malformedResponse, message)))
    }

    @Test func hostileBytesNeverCrashTheDecoder() {
        let deep = String(repeating: #"{"a":"#, count: 10_000) + "1" + String(repeating: "}", count: 10_000)
        guard case .failure(let error) = Self.decode(deep) else {
            Issue.record("nesting 10 000 deep must fail")
            return
        }
        #expect(error.reason.contains("nested deeper than 256 levels"))
        let invalidUTF8: [UInt8] = Array(#"{"reason":""#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8)
        #expect(throws: Never.self) { _ = ProviderResponse.decodeBody(invalidUTF8) }
        guard case .failure = ProviderResponse.decodeBody(invalidUTF8) else {
            Issue.record("invalid UTF-8 must fail")
            return
        }
        var generator = SplitMix64(seed: 99)
        for _ in 0..<2000 {
            let bytes = (0..<Int(generator.next() % 40)).map { _ in
                Array(#"{}[]":,"reason0 9.e-\"#.utf8)[Int(generator.next() % 21)]
            }
            _ = ProviderResponse.decodeBody(bytes)
        }
    }

    @Test func serverHeadersNameStatusIdsAndContentType() {
        var headers = HTTP2HeaderList()
        ProviderResponse(rejecting: .badTopic, apnsID: APNsID(rawValue: 1)).writeHeaders(into: &headers)
        #expect(
            headers.description == """
                :status: 400
                apns-id: 00000000-0000-0000-0000-000000000001
                content-type: application/json
                """)
        headers.removeAll()
        ProviderResponse.success(apnsID: APNsID(rawValue: 2), apnsUniqueID: APNsID(rawValue: 3)).writeHeaders(
            into: &headers)
        #expect(headers.value(forName: ":status") == "200")
        #expect(headers.value(forName: "apns-unique-id") == "00000000-0000-0000-0000-000000000003")
        #expect(headers.value(forName: "content-type") == nil)
        #expect(headers.fields[1].indexing == .never)
    }

    @Test func aClientAssemblesTheResponseFromHeadersAndBody() {
        var response = ProviderResponse(status: 0)
        func take(_ name: String, _ value: String) -> LegacyAPNsError? {
            Array(name.utf8).withUnsafeBytes { name in
                Array(value.utf8).withUnsafeBytes { value in response.takeHeader(name: name, value: value) }
            }
        }
        #expect(take(":status", "410") == nil)
        #expect(take("apns-id", "00000000-0000-0000-0000-00000000000A") == nil)
        #expect(take("apns-id-other", "x") == nil)
        #expect(
            take(":status", "41")
                == LegacyAPNsError(.malformedResponse, "response :status is '41', expected three digits"))
        #expect(
            Array(#"{"reason":"Unregistered","timestamp":7}"#.utf8).withUnsafeBytes { response.takeBody($0) } == nil)
        #expect(
            response == ProviderResponse(status: 410, reason: .unregistered, timestamp: 7, apnsID: APNsID(rawValue: 10))
        )
        #expect(response.retryAdvice == .discardDeviceToken)
    }

    /// The header-name compare (word loads for 4 to 16 bytes): equal only to the same bytes, at
    /// every length the headers use and around the word sizes, with any one byte changed or the
    /// length one off.
    @Test func headerNamesCompareByteForByte() {
        let names: [StaticString] = [
            "", "a", ":st", "POST", ":path", "apns-id", ":method", "apns-ids", ":authority", "apns-priority",
            "authorization", "apns-push-type", "apns-expiration", "apns-collapse-id", "apns-collapse-idx",
            "a-header-name-longer-than-sixteen",
        ]
        for name in names {
            let bytes = name.withUTF8Buffer { Array($0) }
            #expect(bytes.withUnsafeBytes { ProviderResponse.equals($0, name) }, "\(name)")
            for index in bytes.indices {
                var changed = bytes
                changed[index] ^= 0x01
                #expect(!changed.withUnsafeBytes { ProviderResponse.equals($0, name) }, "\(name) at \(index)")
            }
            #expect(!(bytes + [0x61]).withUnsafeBytes { ProviderResponse.equals($0, name) })
            if !bytes.isEmpty { #expect(!bytes.dropLast().withUnsafeBytes { ProviderResponse.equals($0, name) }) }
        }
    }
}
