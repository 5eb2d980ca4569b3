import APNsCore
import GatewaySimulator

extension FuzzTargets {
    // MARK: - channel-api

    /// The channel management and broadcast APIs on hostile headers and bodies: APNsCore's
    /// `ChannelRequestValidator` with a ``ChannelStore`` behind it, the answer written and read
    /// back as a client reads it, and the client's readers of a channel's body, a list and a Live
    /// Activity payload.
    ///
    /// ```
    /// byte 0   bit 0 certificate auth (topics com.example.app), else token auth; bit 1 production;
    ///          bit 2 broadcast disabled for com.example.app; bit 3 one channel made first, with
    ///          storage policy bit 4
    /// then     header lines "name: value" ending in LF, up to an empty line; the rest is the body
    ///          ("@CHANNEL" in a value stands for the id of the channel made first)
    /// ```
    ///
    /// Properties: no crash; a refusal's reason is one Apple lists, with its status; a create is
    /// only accepted for a JSON object holding policy 0 or 1 and push type LiveActivity, a broadcast
    /// only for a body of 1 to 5120 bytes on a channel that exists, expiration 0 on a policy-0
    /// channel; the answer's headers and body read back (``ChannelResponse``) as written; a parsed
    /// JSON value writes back to text that parses to the same value; the readers of a configuration,
    /// a list and a Live Activity payload give an answer for any bytes.
    public static func channelAPI(_ data: UnsafeRawBufferPointer) {
        guard let mode = data.first else { return }
        let environment: ProviderSimulator.Environment = mode & 2 != 0 ? .production : .development
        let store = ChannelStore(maximumChannelsPerApp: 3)
        let bundle = "com.example.app"
        let made =
            mode & 8 != 0
            ? store.create(
                bundleID: bundle, policy: MessageStoragePolicy(rawValue: Int(mode >> 4) & 1),
                environment: environment) : nil
        let authorization: ProviderAuthorization =
            mode & 1 != 0 ? .certificate(topics: [bundle]) : .token(.accepted(topics: nil))
        let disabled = mode & 4 != 0

        // Header lines, then the body.
        var head = ProviderRequestHead()
        var index = 1
        while index < data.count {
            let end = data[index...].firstIndex(of: 0x0A) ?? data.count
            let line = Array(data[index..<end])
            index = end + 1
            if line.isEmpty { break }
            guard let colon = line.dropFirst().firstIndex(of: UInt8(ascii: ":")) else { continue }
            var value = Array(line[(colon + 1)...].drop { $0 == 0x20 })
            if let made, value.elementsEqual("@CHANNEL".utf8) { value = Array(made.rawValue.utf8) }
            line[..<colon].withUnsafeBytes { name in value.withUnsafeBytes { head.add(name: name, value: $0) } }
        }
        let body = index < data.count ? Array(data[index...]) : []

        let lookup = ChannelRequestValidator.ChannelLookup(
            policy: { store.policy(of: $1, bundleID: $0, environment: environment) }, isEnabled: { _ in !disabled })
        let outcome = ChannelRequestValidator.validate(head, body: body, authorization: authorization, lookup: lookup)
        var response: ChannelResponse
        switch outcome.result {
        case .failure(let refusal):
            check(refusal.reason.status != nil, "refused with \(refusal.reason), which Apple does not list")
            response = ChannelResponse(rejecting: refusal.reason, requestID: outcome.requestID)
        case .success(.create(let bundleID, let policy)):
            check(policy.isKnown, "created a channel with policy \(policy)")
            check(
                body.withUnsafeBytes { (try? JSONScanner.objectMembers($0)) != nil },
                "created a channel from a body that is not a JSON object")
            let id = store.create(bundleID: bundleID, policy: policy, environment: environment)
            response =
                id.map { ChannelResponse(status: 201, channelID: $0) }
                ?? ChannelResponse(rejecting: .cannotCreateChannelConfig)
        case .success(.read(let bundleID, let id)):
            let policy = store.policy(of: id, bundleID: bundleID, environment: environment)
            check(policy != nil, "read a channel that does not exist")
            response = ChannelResponse(
                status: 200, body: policy.map { ChannelConfiguration(storagePolicy: $0).json } ?? [])
        case .success(.delete(let bundleID, let id)):
            check(
                store.delete(id, bundleID: bundleID, environment: environment), "deleted a channel that did not exist")
            response = ChannelResponse(status: 204)
        case .success(.list(let bundleID)):
            response = ChannelResponse(
                status: 200, body: ChannelID.listJSON(store.channels(bundleID: bundleID, environment: environment)))
        case .success(.broadcast(let request, let policy)):
            check(
                !body.isEmpty && body.count <= PushType.broadcastMaximumPayloadSize,
                "a broadcast of \(body.count) bytes")
            check(made == request.channelID, "a broadcast on a channel that does not exist")
            check(policy != .noMessageStored || request.expiration.rawValue == 0, "a policy-0 broadcast that expires")
            response = ChannelResponse(status: 200, uniqueID: APNsID(rawValue: 7))
        }

        // The answer as the client reads it.
        var headers = HTTP2HeaderList()
        response.writeHeaders(into: &headers)
        var read = ChannelResponse(status: 0)
        for field in 0..<headers.count {
            var name = headers.name(at: field)
            var value = headers.value(at: field)
            name.withUTF8 { name in
                value.withUTF8 {
                    read.takeHeader(name: UnsafeRawBufferPointer(name), value: UnsafeRawBufferPointer($0))
                }
            }
        }
        read.takeBody(response.bodyBytes)
        check(read.status == response.status, "status \(response.status) read back as \(read.status)")
        check(read.reason == response.reason, "reason \(String(describing: response.reason)) read back differently")
        check(read.channelID == response.channelID && read.requestID == response.requestID, "ids read back differently")
        if response.status == 200, !response.body.isEmpty {
            check(
                ChannelConfiguration(json: response.body) != nil || ChannelID.list(fromJSON: response.body) != nil,
                "a read or list body the client cannot read")
        }

        // The client's readers, and the JSON parser, on the raw body.
        _ = ChannelConfiguration(json: body)
        _ = ChannelID.list(fromJSON: body)
        _ = LiveActivityPayload.problem(inPayload: Payload(unvalidatedBytes: body), forBroadcast: mode & 16 != 0)
        _ = PushType.liveActivity.problem(payload: Payload(unvalidatedBytes: body))
        _ = PushType.widgets.problem(payload: Payload(unvalidatedBytes: body))
        if let value = try? JSONValue(parsing: body) {
            // Written, parsed and written again, the text stays the same (a whole double is
            // written as an integer, so the values may differ in case, never in meaning).
            var writer = JSONWriter()
            if (try? writer.write(value)) != nil {
                var again = JSONWriter()
                let reparsed = try? JSONValue(parsing: writer.bytes)
                check(reparsed != nil && (try? again.write(reparsed!)) != nil, "written JSON does not parse")
                check(again.bytes == writer.bytes, "a JSON value does not survive writing")
            }
        }
    }
}
