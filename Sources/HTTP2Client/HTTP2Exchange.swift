internal import APNsRuntime

/// One HTTP/2 connection that asks one question at a time: the transport under ``ChannelClient``
/// and ``BroadcastClient``, whose requests are few (a channel created, a broadcast sent) and each
/// answered before the next. A `Transport` from a `TransportDialer` (TLS with ALPN `h2`), an
/// ``HTTP2Session`` (nghttp2), a provider token per connection for token auth (renewed after 50
/// minutes). The connection stays open between requests; a kept connection the server closed or
/// said GOAWAY on meanwhile is replaced before the next request, and a request the server says it
/// never processed (a refused stream, one above a GOAWAY's last stream) goes again on a new one;
/// any other failure is thrown, never retried (a channel created twice is two channels).
///
/// Blocking: call ``perform(_:)`` on a thread of its own (the clients use `OSThread.run`), never on
/// Swift's cooperative pool. Not `Sendable`: its clients keep it behind a lock.
final class HTTP2Exchange: HTTP2SessionDelegate {
    struct Settings: Sendable {
        var endpoint: Endpoint
        var context: TLSContext
        var credentials: ProviderCredentials
        var timeout: Double
        var clock: any ProviderClock
        /// The proxy's tunnel, if connections go through one.
        var proxy: ProxyTunnel?
    }

    /// A request: its header fields (given the token to carry, if any) and its body.
    struct Request {
        var writeHeaders: (inout HTTP2HeaderList, _ authority: String, _ token: String?) -> Void
        var body: [UInt8]
    }

    /// The largest response body read.
    static let maximumBodySize = 1 << 20
    /// How long a provider token is used before a new one is signed.
    static let tokenLifetime: Duration = .seconds(50 * 60)

    private let settings: Settings
    private let dialer: any TransportDialer
    private var transport: (any Transport)?
    private var session: HTTP2Session?
    private var token: (text: String, signedAt: Duration)?
    private var output = ByteWriter(capacity: 16 * 1024)
    private var headers = HTTP2HeaderList(byteCapacity: 512, fieldCapacity: 12)
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    // The stream being answered.
    private var stream: Int32 = 0
    private var response = ChannelResponse(status: 0)
    private var body: [UInt8] = []
    private var closedWith: HTTP2ErrorCode?
    private var goaway: (lastStream: Int32, debug: String)?

    /// `dialer`: where connections come from; nil, TLS to the settings' endpoint.
    init(settings: Settings, dialer: (any TransportDialer)? = nil) {
        self.settings = settings
        self.dialer =
            dialer
            ?? TLSTransportDialer(
                endpoint: settings.endpoint, context: settings.context, proxy: settings.proxy,
                applicationProtocol: "h2")
    }

    deinit {
        close()
        readBuffer.deallocate()
    }

    /// Closes the connection (GOAWAY, close_notify), if open.
    func close() {
        if let session {
            try? session.terminate(errorCode: .noError)
            try? session.send(into: &output)
            if let transport { _ = output.withUnsafeReadableBytes { transport.writeAll($0, timeout: 1) } }
        }
        transport?.close()
        transport = nil
        session = nil
        output.clear()
        token = nil
    }

    /// Sends `request` and returns the answer.
    ///
    /// - Throws: ``LegacyAPNsError`` when the server cannot be reached, TLS fails, the server
    ///   speaks no HTTP/2, the connection breaks before the answer, or it takes longer than the
    ///   timeout.
    func perform(_ request: Request) throws -> ChannelResponse {
        if session != nil, !keptConnectionIsGood() { close() }
        do {
            return try attempt(request)
        } catch let error as LegacyAPNsError {
            // Only a request the server says it never processed goes again (a create sent twice
            // would make two channels): a refused stream, or one above a GOAWAY's last stream.
            let unprocessed = closedWith == .refusedStream || goaway.map { $0.lastStream < stream } == true
            close()
            guard unprocessed else { throw error }
            return try attempt(request)
        }
    }

    /// Reads what the server sent on the kept connection since the last answer, without waiting:
    /// false when it closed the connection or said GOAWAY meanwhile (a new one is opened then).
    private func keptConnectionIsGood() -> Bool {
        guard let transport, let session else { return false }
        goaway = nil
        while true {
            switch transport.read(into: readBuffer) {
            case .done(let count):
                guard (try? session.receive(UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]))) != nil else {
                    return false
                }
            case .wantRead, .wantWrite:
                return goaway == nil && session.canStartRequest
            case .closed, .failed:
                return false
            }
        }
    }

    private func attempt(_ request: Request) throws -> ChannelResponse {
        if session == nil || !(session?.canStartRequest ?? false) {
            close()
            try open()
        }
        guard let session, let transport else { throw LegacyAPNsError(.connectionFailed, "not connected") }
        response = ChannelResponse(status: 0)
        body = []
        closedWith = nil
        goaway = nil
        headers.removeAll()
        request.writeHeaders(&headers, settings.endpoint.host, try currentToken())
        stream = try session.submitRequest(headers: headers, body: request.body)
        let deadline = Monotonic.now() + settings.timeout
        while closedWith == nil {
            try write()
            let remaining = deadline - Monotonic.now()
            guard remaining > 0 else {
                throw LegacyAPNsError(
                    .timedOut, "\(transport.peer) did not answer within \(formatSeconds(settings.timeout))")
            }
            switch transport.read(into: readBuffer, waitingUpTo: min(remaining, 0.5)) {
            case .done(let count):
                try session.receive(UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]))
            case .wantRead, .wantWrite:
                continue
            case .closed:
                throw LegacyAPNsError(.connectionFailed, "\(transport.peer) closed the connection before answering")
            case .failed(let error):
                throw error
            }
        }
        try write()
        guard closedWith == .noError, response.status != 0 else {
            if let goaway {
                throw LegacyAPNsError(
                    .connectionFailed, "\(transport.peer) said GOAWAY before answering: \(goaway.debug)")
            }
            throw LegacyAPNsError(
                .connectionFailed, "\(transport.peer) reset the request (\(closedWith ?? .internalError))")
        }
        response.takeBody(body)
        return response
    }

    private func open() throws {
        let connection = try dialer.connect(timeout: settings.timeout)
        var options = HTTP2Session.Options()
        options.peerMaxConcurrentStreams = 1
        session = try HTTP2Session(role: .client, options: options, delegate: self)
        transport = connection
        token = nil
    }

    private func currentToken() throws -> String? {
        guard case .token(let key, let keyID, let teamID) = settings.credentials else { return nil }
        let now = settings.clock.now()
        if let token, now - token.signedAt < Self.tokenLifetime { return token.text }
        let signed = try key.signProviderToken(keyID: keyID, teamID: teamID, issuedAt: settings.clock.unixTime())
        token = (signed.compactSerialization, now)
        return signed.compactSerialization
    }

    private func write() throws {
        guard let session, let transport else { return }
        while session.wantsWrite {
            output.clear()
            try session.send(into: &output)
            if output.isEmpty { break }
            if let error = output.withUnsafeReadableBytes({ transport.writeAll($0, timeout: settings.timeout) }) {
                throw error
            }
        }
        output.clear()
    }

    // MARK: - Session delegate

    func didReceiveHeader(stream: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        guard stream == self.stream else { return }
        response.takeHeader(name: name, value: value)
    }

    func didReceiveData(stream: Int32, bytes: UnsafeRawBufferPointer) {
        guard stream == self.stream, body.count + bytes.count <= Self.maximumBodySize else { return }
        body.append(contentsOf: bytes)
    }

    func didCloseStream(stream: Int32, errorCode: HTTP2ErrorCode) {
        guard stream == self.stream else { return }
        closedWith = errorCode
    }

    func didReceiveGoaway(lastStreamID: Int32, errorCode: HTTP2ErrorCode, debugData: UnsafeRawBufferPointer) {
        goaway = (lastStreamID, String(decoding: debugData, as: UTF8.self))
    }
}
