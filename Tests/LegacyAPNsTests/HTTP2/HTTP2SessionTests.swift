import APNsCore
import APNsRuntime
import Testing

/// A client session and a server session talking in memory: requests out, responses back, limits,
/// GOAWAY, resets, PING and flow control, as scripts of events.
@Suite struct HTTP2SessionTests {
    static let topics = ["com.example.app", "com.example.app.voip"]

    /// A server that validates every request as APNs does (certificate auth) and answers.
    static func validatingPair(
        client: HTTP2Session.Options = .init(), server: HTTP2Session.Options = .init()
    ) throws -> HTTP2Pair {
        let pair = try HTTP2Pair(client: client, server: server)
        pair.serverAnswers { _, message in
            switch ProviderRequestValidator.validate(
                message.head, body: message.body, authorization: .certificate(topics: topics))
            {
            case .accepted(let request): (.success(apnsID: request.apnsID), [])
            case .rejected(let response): (response, [])
            }
        }
        return pair
    }

    @Test func requestsGoOutAndResponsesComeBackOnOddStreams() throws {
        let pair = try Self.validatingPair()
        let first = try pair.submit(HTTP2Pair.request(1), first: true)
        let second = try pair.submit(HTTP2Pair.request(2, topic: "com.other.app"))
        let third = try pair.submit(HTTP2Pair.request(3, topic: "com.example.app.voip", pushType: .voip))
        #expect([first, second, third] == [1, 3, 5])
        #expect(pair.client.pendingRequestCount == 3)
        try pair.exchange()

        let responses = pair.clientEvents.messages
        #expect(responses[1]?.response == .success(apnsID: APNsID(rawValue: 1)))
        #expect(responses[3]?.response == ProviderResponse(rejecting: .topicDisallowed, apnsID: APNsID(rawValue: 2)))
        #expect(responses[3]?.value("content-type") == "application/json")
        #expect(responses[5]?.response.status == 200)
        #expect(pair.clientEvents.closedStreams.map(\.0).sorted() == [1, 3, 5])
        #expect(pair.clientEvents.closedStreams.allSatisfy { $0.1 == .noError })
        #expect(pair.client.pendingRequestCount == 0)

        // What the server saw is the request the client built.
        let received = pair.serverEvents.messages[1]
        #expect(received?.value(":path") == "/3/device/" + HTTP2Pair.request(1).deviceToken.hexString)
        #expect(received?.body == HTTP2Pair.request(1).payload.bytes)
        #expect(!pair.client.wantsWrite && !pair.server.wantsWrite)
        #expect(pair.client.wantsRead && pair.server.wantsRead)
    }

    @Test func theServersStreamLimitHoldsRequestsBackUntilItIsRaisedMidConnection() throws {
        var serverOptions = HTTP2Session.Options()
        serverOptions.maximumConcurrentStreams = 1
        let pair = try HTTP2Pair(server: serverOptions)
        for index in 1...5 { try pair.submit(HTTP2Pair.request(index)) }

        // Before any SETTINGS the client assumes 100 and sends everything; the server refuses what
        // exceeds its (not yet acknowledged) limit of 1 with REFUSED_STREAM.
        try pair.exchange()
        #expect(pair.client.remoteMaxConcurrentStreams == 1)
        #expect(pair.clientEvents.events.contains(.settings(maxConcurrentStreams: 1)))
        #expect(pair.serverEvents.messages.keys.sorted() == [1])
        #expect(pair.clientEvents.closedStreams.map(\.0) == [3, 5, 7, 9])
        #expect(pair.clientEvents.closedStreams.allSatisfy { $0.1 == .refusedStream })

        // Now acknowledged: new requests wait in the client for the one open stream.
        for index in 6...9 { try pair.submit(HTTP2Pair.request(index)) }
        try pair.exchange()
        #expect(pair.serverEvents.messages.keys.sorted() == [1])
        #expect(!pair.client.wantsWrite)

        // Raised to 1000 mid-connection: the client sees the new limit and sends the rest at once.
        try pair.server.submitSettings([.maxConcurrentStreams(1000)])
        try pair.exchange()
        #expect(pair.client.remoteMaxConcurrentStreams == 1000)
        #expect(pair.clientEvents.settings.last?.maxConcurrentStreams == 1000)
        #expect(pair.server.localMaxConcurrentStreams == 1000)
        #expect(pair.serverEvents.messages.keys.sorted() == [1, 11, 13, 15, 17])
    }

    @Test func aClientAssumingOneStreamSendsOneRequestUntilTheServersSettingsArrive() throws {
        // APNs with token auth allows one stream until a valid token was seen.
        var clientOptions = HTTP2Session.Options()
        clientOptions.peerMaxConcurrentStreams = 1
        let pair = try HTTP2Pair(client: clientOptions)
        for index in 1...3 { try pair.submit(HTTP2Pair.request(index)) }
        #expect(pair.client.remoteMaxConcurrentStreams == 1)
        try pair.flushClient()
        #expect(pair.serverEvents.messages.keys.sorted() == [1])
        try pair.exchange()  // the server's SETTINGS (1000) arrive: the rest follow
        #expect(pair.client.remoteMaxConcurrentStreams == 1000)
        #expect(pair.serverEvents.messages.keys.sorted() == [1, 3, 5])
    }

    @Test func aStreamBeyondTheAcknowledgedLimitEndsTheConnection() throws {
        // A hostile client ignores the limit: nghttp2 answers GOAWAY PROTOCOL_ERROR, as APNs
        // answers "Maximum active streams violated".
        var options = HTTP2Session.Options()
        options.maximumConcurrentStreams = 1
        let recorder = HTTP2Recorder()
        let server = try HTTP2Session(role: .server, options: options, delegate: recorder)
        var output = ByteWriter()
        try server.send(into: &output)  // its SETTINGS, which the client acknowledges below
        let opening = RawFrames.preface + RawFrames.settings() + RawFrames.settings(ack: true)
        try opening.withUnsafeBytes { try server.receive($0) }
        #expect(server.localMaxConcurrentStreams == 1)

        let flood = Self.headersFrame(stream: 1) + Self.headersFrame(stream: 3)
        let error = #expect(throws: LegacyAPNsError.self) { try flood.withUnsafeBytes { try server.receive($0) } }
        #expect(error?.code == .protocolViolation)
        #expect(
            error?.reason
                == "the HTTP/2 peer broke the protocol: request HEADERS: max concurrent streams exceeded (GOAWAY PROTOCOL_ERROR sent)"
        )
        #expect(recorder.messages.keys.sorted() == [1])
        #expect(!server.wantsRead && server.wantsWrite)  // the GOAWAY waits to be sent
        output.clear()
        try server.send(into: &output)
        #expect(RawFrames.types(output.bytes) == [0x4, 0x7])  // SETTINGS ACK, GOAWAY
        #expect(!server.wantsWrite)
    }

    /// A HEADERS frame opening `stream` with a minimal GET, HPACK static-table indexes only.
    static func headersFrame(stream: UInt32) -> [UInt8] {
        // :method GET (2), :scheme https (7), :path / (4), :authority a (literal, name index 1)
        RawFrames.frame(type: 0x1, flags: 0x4, stream: stream, payload: [0x82, 0x87, 0x84, 0x41, 0x01, 0x61])
    }

    @Test func goawayWithShutdownLetsLowerStreamsFinishAndRefusesTheRest() throws {
        let pair = try HTTP2Pair()
        for index in 1...3 { try pair.submit(HTTP2Pair.request(index)) }
        try pair.exchange()
        #expect(pair.serverEvents.messages.keys.sorted() == [1, 3, 5])

        try pair.server.submitGoaway(lastStreamID: 3, debugData: Array(#"{"reason":"Shutdown"}"#.utf8))
        for stream: Int32 in [1, 3] {
            var headers = HTTP2HeaderList()
            ProviderResponse.success(apnsID: nil).writeHeaders(into: &headers)
            try pair.server.submitResponse(stream: stream, headers: headers)
        }
        // The GOAWAY and a new request cross on the wire.
        let inFlight = try pair.takeServerOutput()
        let late = try pair.submit(HTTP2Pair.request(4))
        try pair.flushClient()
        #expect(pair.serverEvents.messages[late] == nil)  // after its GOAWAY the server ignores new streams
        try pair.deliverToClient(inFlight)
        try pair.exchange()

        let goaways = pair.clientEvents.events.compactMap { event -> ProviderGoaway? in
            guard case .goaway(let last, let code, let debug) = event else { return nil }
            return debug.withUnsafeBytes { ProviderGoaway(lastStreamID: last, errorCode: code, debugData: $0) }
        }
        #expect(goaways.count == 1)
        let goaway = try #require(goaways.first)
        #expect(goaway.lastStreamID == 3 && goaway.errorCode == .noError && goaway.reason == .shutdown)
        #expect(goaway.advice == .retryOnNewConnection)  // graceful: a new connection at once
        #expect(goaway.wasProcessed(stream: 3) && !goaway.wasProcessed(stream: 5))

        let closed = Dictionary(uniqueKeysWithValues: pair.clientEvents.closedStreams.map { ($0.0, $0.1) })
        #expect(closed == [1: .noError, 3: .noError, 5: .refusedStream, late: .refusedStream])
        #expect(pair.clientEvents.messages[1]?.response.status == 200)
        #expect(pair.clientEvents.messages[3]?.response.status == 200)
        #expect(pair.clientEvents.messages[5]?.complete != true)  // never answered: send it again elsewhere

        #expect(!pair.client.canStartRequest)
        let refused = #expect(throws: LegacyAPNsError.self) { try pair.submit(HTTP2Pair.request(9)) }
        #expect(refused?.code == .streamUnavailable)
        #expect(!pair.client.wantsRead && !pair.client.wantsWrite)  // nothing open: the connection is done
    }

    @Test func refusedStreamResetReachesTheClientBeforeTheClose() throws {
        let pair = try HTTP2Pair()
        try pair.submit(HTTP2Pair.request(1))
        try pair.exchange()
        try pair.server.submitRstStream(stream: 1, errorCode: .refusedStream)
        try pair.exchange()
        #expect(
            pair.clientEvents.events.suffix(2) == [.rst(stream: 1, .refusedStream), .closed(stream: 1, .refusedStream)])
        #expect(pair.serverEvents.closedStreams.map(\.0) == [1])
        #expect(pair.client.pendingRequestCount == 0)
    }

    @Test func answeringAStreamThatIsNotOpenIsRefused() throws {
        let pair = try HTTP2Pair()
        try pair.submit(HTTP2Pair.request(1))
        try pair.exchange()
        try pair.server.submitRstStream(stream: 1, errorCode: .cancel)
        try pair.exchange()
        var headers = HTTP2HeaderList()
        ProviderResponse.success(apnsID: nil).writeHeaders(into: &headers)
        for stream: Int32 in [1, 3, 0] {
            let error = #expect(throws: LegacyAPNsError.self) {
                try pair.server.submitResponse(stream: stream, headers: headers, body: [1, 2, 3])
            }
            #expect(error?.reason == "cannot answer HTTP/2 stream \(stream): it is not open")
            #expect(error?.code == .streamUnavailable)
        }
    }

    @Test func pingIsAcknowledgedWithItsPayloadBothWays() throws {
        let pair = try HTTP2Pair()
        try pair.client.submitPing(0x0102_0304_0506_0708)
        try pair.server.submitPing(42)
        try pair.exchange()
        #expect(pair.clientEvents.events.contains(.pingAck(0x0102_0304_0506_0708)))
        #expect(pair.serverEvents.events.contains(.pingAck(42)))
    }

    @Test func bodiesLargerThanTheInitialWindowFlowBothWays() throws {
        let requestBody = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let responseBody = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        let pair = try HTTP2Pair()
        pair.serverAnswers { _, message in
            #expect(message.body == requestBody)
            return (.success(apnsID: nil), responseBody)
        }
        let stream = try pair.client.submitRequest(headers: Self.postHeaders(), body: requestBody)
        let rounds = try pair.exchange()
        #expect(pair.clientEvents.messages[stream]?.body == responseBody)
        #expect(pair.clientEvents.closedStreams.map(\.1) == [.noError])
        #expect(rounds > 3)  // it took window updates, not one flight
    }

    static func postHeaders(path: StaticString = "/3/device/ab") -> HTTP2HeaderList {
        var headers = HTTP2HeaderList()
        headers.append(name: ":method", value: "POST")
        headers.append(name: ":scheme", value: "https")
        headers.append(name: ":path", value: path)
        headers.append(name: ":authority", value: "localhost")
        return headers
    }

    @Test func anOversizedHeaderListResetsOnlyThatStream() throws {
        let pair = try HTTP2Pair()
        var headers = Self.postHeaders()
        headers.append(name: "apns-topic", value: String(repeating: "x", count: 20_000))
        let big = try pair.client.submitRequest(headers: headers, body: [1])
        let small = try pair.submit(HTTP2Pair.request(1))
        pair.serverAnswers { _, _ in (.success(apnsID: nil), []) }
        try pair.exchange()
        #expect(pair.clientEvents.events.contains(.rst(stream: big, .enhanceYourCalm)))
        #expect(pair.clientEvents.messages[small]?.response.status == 200)
        #expect(pair.server.wantsRead)
    }

    @Test func pendingRequestsAreBoundedOnTheClient() throws {
        var options = HTTP2Session.Options()
        options.maximumPendingRequests = 2
        let pair = try HTTP2Pair(client: options)
        try pair.submit(HTTP2Pair.request(1))
        try pair.submit(HTTP2Pair.request(2))
        let error = #expect(throws: LegacyAPNsError.self) { try pair.submit(HTTP2Pair.request(3)) }
        #expect(error?.code == .streamUnavailable)
        #expect(error?.reason == "2 HTTP/2 requests are already waiting on this connection (the limit is 2)")
        pair.serverAnswers { _, _ in (.success(apnsID: nil), []) }
        try pair.exchange()
        try pair.submit(HTTP2Pair.request(3))  // room again once answered
    }

    @Test func bytesDripFedOneAtATimeGiveTheSameRequests() throws {
        let pair = try HTTP2Pair()
        for index in 1...3 { try pair.submit(HTTP2Pair.request(index), first: index == 1) }
        var wire = ByteWriter()
        try pair.client.send(into: &wire)

        let whole = HTTP2Recorder()
        let wholeServer = try HTTP2Session(role: .server, delegate: whole)
        try wire.withUnsafeReadableBytes { try wholeServer.receive($0) }
        let dripped = HTTP2Recorder()
        let drippedServer = try HTTP2Session(role: .server, delegate: dripped)
        for byte in wire.bytes { try [byte].withUnsafeBytes { try drippedServer.receive($0) } }

        #expect(whole.messages.keys.sorted() == [1, 3, 5])
        for stream in whole.messages.keys {
            #expect(whole.messages[stream]?.fields.map(\.value) == dripped.messages[stream]?.fields.map(\.value))
            #expect(whole.messages[stream]?.body == dripped.messages[stream]?.body)
        }
        #expect(whole.events == dripped.events)
    }

    @Test func headersArriveAsViewsInOrderWithPseudoHeadersFirst() throws {
        let pair = try HTTP2Pair()
        var request = HTTP2Pair.request(7)
        request.authorizationToken = "eyJhbGciOiJFUzI1NiJ9.e30.sig"
        request.expiration = Expiration(rawValue: 1_700_000_000)
        request.priority = .conservePower
        request.collapseID = "group"
        try pair.submit(request, first: true)
        try pair.exchange()
        let fields = try #require(pair.serverEvents.messages[1]).fields
        #expect(
            fields.map(\.name) == [
                ":method", ":scheme", ":path", ":authority", "authorization", "apns-push-type", "apns-id",
                "apns-expiration", "apns-priority", "apns-topic", "apns-collapse-id",
            ])
        #expect(fields.first { $0.name == "authorization" }?.value == "bearer eyJhbGciOiJFUzI1NiJ9.e30.sig")
        #expect(fields.first { $0.name == "apns-expiration" }?.value == "1700000000")
        #expect(pair.serverEvents.headerCount == fields.count)
    }
}
