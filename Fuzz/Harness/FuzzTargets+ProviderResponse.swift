import APNsCore

extension FuzzTargets {
    // MARK: - provider-response

    /// What an HTTP/2 client makes of a server's answer, on hostile bytes: the `:status` and
    /// `apns-id` header values (``ProviderResponse/takeHeader(name:value:)``), the JSON body
    /// (``ProviderResponse/decodeBody(_:)``, `takeBody`), the same bytes as a GOAWAY's debug data
    /// (``ProviderGoaway``), and the advice drawn from the result (``RetryAdvice``).
    ///
    /// ```
    /// byte 0   length of the :status value (mod 8)
    /// byte 1   length of the apns-id value (mod 48)
    /// byte 2   GOAWAY error code
    /// then     the :status value, the apns-id value, and the rest is the body
    /// ```
    ///
    /// Properties: no crash; `:status` is taken exactly when it is three ASCII digits, as their
    /// number, and refused naming the value otherwise (the status is then left as it was); an
    /// `apns-id` is kept only when it is 8-4-4-4-12 hex digits, and writes back as the same text in
    /// lowercase; a body is either a failure naming an offset inside it, or members that encode back
    /// to a body decoding to the same members (so a reason nobody knows survives as itself), the
    /// same with whitespace around it, and the same through `takeBody`; the GOAWAY reads the same
    /// reason, or keeps a bounded text; the advice is total, and a 200 is always delivered.
    public static func providerResponse(_ data: UnsafeRawBufferPointer) {
        guard data.count >= 3 else { return }
        let statusCount = min(Int(data[0]) % 8, data.count - 3)
        let idCount = min(Int(data[1]) % 48, data.count - 3 - statusCount)
        let status = UnsafeRawBufferPointer(rebasing: data[3..<(3 + statusCount)])
        let id = UnsafeRawBufferPointer(rebasing: data[(3 + statusCount)..<(3 + statusCount + idCount)])
        let body = UnsafeRawBufferPointer(rebasing: data[(3 + statusCount + idCount)...])

        var response = ProviderResponse(status: 599)
        let statusError = ":status".utf8CString.withUnsafeBytes { name in
            response.takeHeader(name: UnsafeRawBufferPointer(rebasing: name.dropLast()), value: status)
        }
        let isThreeDigits = status.count == 3 && status.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
        if isThreeDigits {
            check(statusError == nil, "three-digit :status refused")
            let expected = status.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            check(response.status == expected, ":status \(expected) read as \(response.status)")
        } else {
            check(statusError?.code == .malformedResponse, "a :status that is not three digits was taken")
            check(response.status == 599, "a refused :status changed the status")
        }

        _ = "apns-id".utf8CString.withUnsafeBytes { name in
            response.takeHeader(name: UnsafeRawBufferPointer(rebasing: name.dropLast()), value: id)
        }
        if let apnsID = response.apnsID {
            check(id.count == APNsID.textCount, "an apns-id of \(id.count) bytes was kept")
            let lowercase = id.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }
            check(Array(apnsID.description.utf8) == lowercase, "apns-id does not write back as its text")
            check(APNsID(apnsID.description) == apnsID, "apns-id does not round-trip")
        } else {
            check(
                APNsID(String(decoding: id, as: UTF8.self)) == nil || !id.allSatisfy { $0 < 0x80 },
                "the header and text parsers disagree on an apns-id")
        }

        switch ProviderResponse.decodeBody(body) {
        case .success(let members):
            var encoded = ProviderResponse(status: 400, reason: members.reason, timestamp: members.timestamp)
            let again = ProviderResponse.decodeBody(encoded.bodyBytes)
            check(bodyMembers(of: again) == members, "body members do not survive encoding: \(members)")
            let padded = [0x20, 0x0A] + Array(body) + [0x09, 0x0D]
            check(
                bodyMembers(of: ProviderResponse.decodeBody(padded)) == members, "whitespace around the body changed it"
            )
            let taken = encoded.takeBody(body)
            check(taken == nil && encoded.reason == members.reason, "takeBody disagrees with decodeBody")
            response.reason = members.reason
            response.timestamp = members.timestamp
        case .failure(let error):
            check(error.code == .malformedResponse, "body failure with code \(error.code)")
            check(error.reason.hasPrefix("response body is not a JSON object"), "body failure unnamed: \(error.reason)")
            check(byteOffset(in: error.reason).map { $0 <= body.count } ?? false, "no offset inside the body")
            var copy = response
            check(copy.takeBody(body) != nil, "takeBody took a body decodeBody refused")
        }

        let goaway = ProviderGoaway(
            lastStreamID: 7, errorCode: HTTP2ErrorCode(rawValue: UInt32(data[2])), debugData: body)
        if case .success(let members) = ProviderResponse.decodeBody(body) {
            check(goaway.reason == members.reason && goaway.debugText == nil, "GOAWAY reads another reason")
        } else {
            check(goaway.reason == nil, "GOAWAY found a reason in a malformed body")
            check(body.isEmpty || (goaway.debugText?.utf8.count ?? 0) <= 256 * 3, "GOAWAY text unbounded")
        }
        _ = goaway.advice
        _ = goaway.description

        let advice = response.retryAdvice
        if response.status == 200 { check(advice == .delivered, "a 200 is not delivered") }
        if advice == .delivered { check(response.isSuccess, "\(response) is delivered") }
        _ = response.description
    }

    /// The N of "... at byte N".
    static func byteOffset(in message: String) -> Int? {
        let marker = " at byte "
        guard let last = message.split(separator: " ").last, message.dropLast(last.count).hasSuffix(marker) else {
            return nil
        }
        return Int(last)
    }

    static func bodyMembers(of result: Result<ProviderResponse.Body, LegacyAPNsError>) -> ProviderResponse.Body? {
        if case .success(let body) = result { return body }
        return nil
    }
}
