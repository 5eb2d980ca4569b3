internal import APNsRuntime

/// The owner of one connection slot of an HTTP/2 send: a single thread that runs the
/// ``ProviderConnectionMachine`` over a `Transport` (TLS in production) and nghttp2.
///
/// Each turn it asks the machine what to do and does it: connect (TLS with ALPN `h2`, then the
/// HTTP/2 preface), take work from the shared ``ProviderWorkQueue``, sign a token, submit requests
/// (many before one flush, so a TLS record carries many of them), reset a stream that waited too
/// long, PING, close. While waiting it reads the server's frames and writes what is pending in the
/// same poll, so a server that stops reading never stops this side from reading its answers. The
/// nghttp2 delegate turns frames into machine events. Not `Sendable`: one thread at a time owns
/// it.
///
/// Its connections come from a `TransportDialer`: TLS with ALPN `h2` (`TLSTransportDialer`), or in
/// the tests the HTTP/2 simulator's sans-IO connection in memory, with faults, so that this very
/// shell (batching, partial writes, GOAWAY, resets, timeouts) is driven without sockets.
///
/// A send that completes leaves its connection open when its client keeps connections
/// (``ProviderConnectionPool``): the next send's slot takes the object, with its TLS session,
/// HTTP/2 session and provider token, instead of dialing (``reuse(slot:delivery:queue:events:)``),
/// after checking that the server has not said GOAWAY or closed it meanwhile.
final class ProviderConnection: HTTP2SessionDelegate {
    struct Settings: Sendable {
        /// The server (its host is every request's `:authority`); the dialer connects to it.
        var endpoint: Endpoint
        var credentials: ProviderCredentials
        /// Seconds for the connection and its TLS handshake.
        var connectTimeout: Double
        /// Used for requests without a topic.
        var defaultTopic: String?
        var clock: any ProviderClock
    }

    /// A response being received on one stream.
    private struct Partial {
        var status = 0
        var apnsID: APNsID?
        var uniqueID: APNsID?
        var body: [UInt8] = []
    }

    /// The largest response body read (APNs sends a short JSON object).
    static let maximumBodySize = 4096

    private let settings: Settings
    private let dialer: any TransportDialer
    private var queue: ProviderWorkQueue
    private var events: (@Sendable (ProviderEvent) -> Void)?
    /// Whether a completed send leaves the connection open (its client keeps connections).
    private var keepsConnection = false
    /// When the connection was kept open after a completed send (nil while a send uses it).
    private var keptAt: Duration?
    /// The server said GOAWAY on this connection: it is not worth keeping.
    private var sawGoaway = false
    // The mutable state below is touched several times per notification, and only ever from this
    // connection's thread: `run()` and the HTTP2Session callbacks it causes (inside `receive` and
    // `send`, which hold no access to these properties). The dynamic exclusivity checks Swift
    // makes on a class's stored properties cannot find a conflict here and cost about 4 % of the
    // thread's time, so they are off for these properties (`@exclusivity(unchecked)`); every other
    // rule of the language still holds.
    @exclusivity(unchecked) private var machine: ProviderConnectionMachine
    @exclusivity(unchecked) private var transport: (any Transport)?
    @exclusivity(unchecked) private var session: HTTP2Session?
    @exclusivity(unchecked) private var output = ByteWriter(capacity: 64 * 1024)
    @exclusivity(unchecked) private var headers = HTTP2HeaderList(byteCapacity: 512, fieldCapacity: 12)
    /// Responses being read. Servers answer a stream's HEADERS (and DATA) before the next
    /// stream's, so the one being read is kept apart (`reading`, `readingStream`: no table work
    /// per header) and only one interrupted by another stream's frames is parked in `partials`.
    @exclusivity(unchecked) private var partials: StreamTable<Partial>
    @exclusivity(unchecked) private var reading = Partial()
    @exclusivity(unchecked) private var readingStream: Int32 = 0
    @exclusivity(unchecked) private var token: ProviderToken?
    /// When ``token`` was signed (the clock's time).
    private var tokenMintedAt: Duration?
    @exclusivity(unchecked) private var isFirstRequest = true
    private let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    /// Signalled by the queue when work arrives while this connection waits with free streams.
    private let wake = WakeSignal()

    /// `dialer`: where connections come from (TLS with ALPN `h2` to the settings' endpoint).
    init(
        slot: Int, settings: Settings, dialer: any TransportDialer, delivery: ProviderConnectionMachine.Configuration,
        queue: ProviderWorkQueue, events: (@Sendable (ProviderEvent) -> Void)?, keepsConnection: Bool = false
    ) {
        self.settings = settings
        self.dialer = dialer
        self.queue = queue
        self.events = events
        self.keepsConnection = keepsConnection
        self.machine = ProviderConnectionMachine(configuration: delivery, connection: slot)
        partials = StreamTable(minimumCapacity: Swift.min(delivery.maximumStreams, 1024))
    }

    deinit {
        transport?.close()
        readBuffer.deallocate()
    }

    /// Takes a connection kept open by an earlier send (``isKept``) into slot `slot` of a new
    /// send; ``run()`` then uses it instead of dialing, if it is still good.
    func reuse(
        slot: Int, delivery: ProviderConnectionMachine.Configuration, queue: ProviderWorkQueue,
        events: (@Sendable (ProviderEvent) -> Void)?
    ) {
        self.queue = queue
        self.events = events
        self.keepsConnection = true
        machine = ProviderConnectionMachine(configuration: delivery, connection: slot)
    }

    /// Whether ``run()`` ended with the connection kept open for a later send.
    var isKept: Bool { keptAt != nil && transport != nil }

    /// Closes a kept connection (GOAWAY, close_notify, close) that no send will use.
    func discard() {
        keptAt = nil
        close()
    }

    /// Runs until the slot has nothing left to do.
    func run() -> ProviderSendReport {
        while true {
            let now = settings.clock.now()
            let action = machine.nextAction(now: now)
            publish()
            switch action {
            case .connect(let delay):
                if pause(delay) {
                    machine.connectionNotNeeded()
                } else {
                    open()
                }
            case .take(let maximum):
                switch queue.take(maximum: maximum, now: now) {
                case .entries(let entries): machine.took(entries, now: now)
                case .nothing(let retryAt): machine.nothingToTake(retryAt: retryAt, now: now)
                case .exhausted: machine.inputExhausted()
                case .stopped(let error): machine.stop(error)
                }
            case .mintToken:
                mintToken(now: now)
            case .submit(let entry):
                submit(entry, now: now)
            case .cancel(let stream):
                try? session?.submitRstStream(stream: stream, errorCode: .cancel)
                _ = takePartial(stream)
            case .ping:
                try? session?.submitPing()
            case .wait(let deadline):
                if queue.isAbandoned, transport != nil {
                    // Given up: what is in flight is lost with the connection (and, the send
                    // being stopped, not retried: unconfirmed, possibly delivered).
                    let reason = queue.stopReason ?? LegacyAPNsError(.cancelled, "the send was abandoned")
                    machine.stop(reason)
                    lost(LegacyAPNsError(.cancelled, "\(reason.reason): given up with requests in flight"))
                } else {
                    exchange(until: deadline)
                }
            case .close:
                if keepsConnection, machine.isClosingAfterCompletion, !sawGoaway, flush(), transport != nil {
                    // Idle, healthy and the send complete: left open for the client's next send.
                    queue.departing(wake)
                    keptAt = settings.clock.now()
                    machine.kept()
                } else {
                    close()
                    machine.closed()
                }
            case .finished:
                publish()
                if machine.report.failure != nil, let failure = machine.report.failure { queue.stop(failure) }
                return machine.report
            }
        }
    }

    private func publish() {
        queue.requeue(machine.takeRequeued())
        queue.finalized(machine.takeFinalizedCount())
        machine.drainEvents(events)
    }

    /// Waits `delay` before reconnecting, unless the send stops (then the connection attempt
    /// finds out) or is over meanwhile: then true, and there is nothing to connect for (a bridge
    /// stopping while its upstream connection backs off does not wait the backoff out).
    private func pause(_ delay: Duration) -> Bool {
        let end = Monotonic.now() + delay.inSeconds
        while true {
            let remaining = end - Monotonic.now()
            guard remaining > 0 else { return false }
            switch queue.waitForStopOrEnd(timeout: remaining) {
            case .stopped: return false
            case .over: return true
            case .timedOut: continue
            }
        }
    }

    // MARK: - Connecting

    private func open() {
        let now = settings.clock.now()
        if keptAt != nil {
            if resumeKept(now: now) { return }
            discard()
        }
        do {
            let connection = try dialer.connect(timeout: settings.connectTimeout)
            var options = HTTP2Session.Options()
            // One stream until the server's SETTINGS say how many, whatever the authentication: APNs
            // ends the connection for a stream beyond its limit, even one opened before its
            // SETTINGS arrived (the machine holds to this too).
            options.peerMaxConcurrentStreams = 1
            options.maximumPendingRequests = Swift.max(1, machine.configuration.maximumStreams)
            let session = try HTTP2Session(role: .client, options: options, delegate: self)
            transport = connection
            self.session = session
            partials.removeAll()
            readingStream = 0
            token = nil
            tokenMintedAt = nil
            sawGoaway = false
            isFirstRequest = true
            output.clear()
            machine.connected(now: now)
            flush()
        } catch let error as LegacyAPNsError {
            machine.connectFailed(error, now: now)
        } catch {
            machine.connectFailed(LegacyAPNsError(.connectionFailed, "\(error)", underlying: error), now: now)
        }
    }

    /// Takes up the connection an earlier send kept open, unless it is no longer good: the server
    /// said GOAWAY or closed it meanwhile (what it sent is read first), or it sat idle for as long
    /// as the machine would have waited before a PING. True when the machine has it.
    private func resumeKept(now: Duration) -> Bool {
        guard let keptAt, now - keptAt < machine.configuration.pingInterval else { return false }
        self.keptAt = nil
        readAvailable()
        guard !sawGoaway, flush(), let session else { return false }
        machine.resumed(
            now: now, serverStreamLimit: Int(session.remoteMaxConcurrentStreams), tokenMintedAt: tokenMintedAt)
        return true
    }

    private func close() {
        if let session {
            try? session.terminate(errorCode: .noError)
            flush()
        }
        transport?.close()
        transport = nil
        session = nil
        output.clear()
        queue.departing(wake)
    }

    /// The connection broke: tell the machine and forget it.
    private func lost(_ error: LegacyAPNsError) {
        transport?.close()
        transport = nil
        session = nil
        output.clear()
        queue.departing(wake)
        machine.connectionLost(error, now: settings.clock.now())
    }

    // MARK: - Requests

    private func mintToken(now: Duration) {
        guard case .token(let key, let keyID, let teamID) = settings.credentials else {
            machine.tokenMinted(now: now)
            return
        }
        do {
            token = try key.signProviderToken(keyID: keyID, teamID: teamID, issuedAt: settings.clock.unixTime())
            tokenMintedAt = now
            machine.tokenMinted(now: now)
        } catch {
            let failure = (error as? LegacyAPNsError) ?? LegacyAPNsError(.invalidValue, "\(error)")
            machine.stop(failure)
            queue.stop(failure)
        }
    }

    private func submit(_ entry: consuming ProviderEntry, now: Duration) {
        // The client's defaults and the connection's token are applied as the headers are written,
        // without a copy of the request.
        let topic = entry.request.topic ?? settings.defaultTopic
        let pushType = entry.request.pushType ?? .inferred(for: entry.request.payload)
        if let (reason, _) = ProviderRequest.problem(
            payloadCount: entry.request.payload.count, pushType: pushType, priority: entry.request.priority,
            topic: topic, collapseID: entry.request.collapseID, usesTokens: settings.credentials.usesTokens)
            ?? pushType.problem(payload: entry.request.payload)
        {
            machine.refused(entry, reason: reason)
            return
        }
        guard let session else {
            machine.submitFailed(entry, now: now)
            return
        }
        headers.removeAll()
        entry.request.writeHeaders(
            into: &headers, authority: settings.endpoint.host, isFirstOnConnection: isFirstRequest, topic: topic,
            pushType: pushType, authorizationToken: token?.compactSerialization)
        do {
            let stream = try session.submitRequest(headers: headers, body: entry.request.payload.bytes)
            isFirstRequest = false
            machine.submitted(entry, stream: stream, now: now)
        } catch {
            machine.submitFailed(entry, now: now)
        }
        // Many requests go into one TLS record: flush only when a good amount is waiting.
        if output.count >= 16 * 1024 || session.wantsWrite { collectOutput() }
        if output.count >= 16 * 1024 { flush() }
    }

    // MARK: - Reading and writing

    /// Moves what nghttp2 wants to send into `output`.
    private func collectOutput() {
        guard let session else { return }
        do {
            while session.wantsWrite {
                let before = output.count
                try session.send(into: &output)
                if output.count == before { break }
            }
        } catch {
            lost(LegacyAPNsError(.protocolViolation, "\(error)", underlying: error as? LegacyAPNsError))
        }
    }

    /// Writes what it can of `output` without blocking. False when the connection broke.
    @discardableResult
    private func flush() -> Bool {
        collectOutput()
        guard let transport else { return false }
        while !output.isEmpty {
            let result = output.withUnsafeReadableBytes { transport.write($0) }
            switch result {
            case .done(let count):
                output.removeFirst(count)
            case .wantRead, .wantWrite:
                return true  // the rest goes when the socket takes it (exchange waits for that)
            case .closed:
                lostWhileWriting(LegacyAPNsError(.connectionFailed, "\(transport.peer) closed the connection"))
                return false
            case .failed(let error):
                lostWhileWriting(error)
                return false
            }
        }
        return true
    }

    /// A write failed: the server may have answered, and said GOAWAY, before it closed (a server
    /// that closes on a client still writing resets the connection). Whatever of that is still
    /// readable is handled first, so answered streams count as answered and the GOAWAY's
    /// last-stream-id tells which of the rest were never processed; only then is it lost.
    private func lostWhileWriting(_ error: LegacyAPNsError) {
        output.clear()
        readAvailable()
        if transport != nil { lost(error) }
    }

    /// Flushes, then waits for the server (and for the socket to take pending output) until
    /// `deadline`, handling what arrives.
    private func exchange(until deadline: Duration?) {
        guard flush(), let transport else { return }
        let now = settings.clock.now()
        var timeout = deadline.map { Swift.max(0, ($0 - now).inSeconds) } ?? 1.0
        timeout = Swift.min(timeout, 1.0)
        let wanted: Readiness = output.isEmpty ? .readable : [.readable, .writable]
        if machineWantsInput() {
            // Wake as soon as the producer has something, not at the next look at the queue.
            guard queue.sleep(wake) else {
                machine.inputMayHaveArrived(now: now)
                return
            }
            let ready = transport.wait(for: wanted, timeout: timeout, wake: wake)
            queue.awake(wake)
            guard ready else { return }
            machine.inputMayHaveArrived(now: settings.clock.now())
        } else {
            guard transport.wait(for: wanted, timeout: timeout) else { return }
        }
        readAvailable()
        flush()
    }

    /// ``ProviderConnectionMachine/wantsInput`` read in place: a plain `machine.wantsInput` copies
    /// the whole machine out of this class first (a getter on a class's stored struct cannot
    /// borrow it), a retain for every array it holds, once per wait.
    private func machineWantsInput() -> Bool {
        withUnsafeMutablePointer(to: &machine) { $0.pointee.wantsInput }
    }

    /// Reads and hands to nghttp2 everything the server has sent so far.
    private func readAvailable() {
        while let transport, let session {
            switch transport.read(into: readBuffer) {
            case .done(let count):
                do {
                    try session.receive(UnsafeRawBufferPointer(rebasing: readBuffer[0..<count]))
                } catch {
                    flush()  // nghttp2's GOAWAY, if it wrote one
                    lost((error as? LegacyAPNsError) ?? LegacyAPNsError(.protocolViolation, "\(error)"))
                    return
                }
            case .wantRead, .wantWrite:
                return
            case .closed:
                lost(
                    LegacyAPNsError(
                        .connectionFailed, "\(transport.peer) closed the connection",
                        underlying: session.connectionError))
                return
            case .failed(let error):
                lost(error)
                return
            }
        }
    }

    // MARK: - HTTP2SessionDelegate

    func didBeginHeaders(stream: Int32) {
        guard stream != readingStream else { return }  // trailers: the same response goes on
        if readingStream != 0 { partials[readingStream] = reading }
        reading = partials.removeValue(forKey: stream) ?? Partial()
        readingStream = stream
    }

    /// The response read on `stream` so far, changed in place.
    private func withPartial(_ stream: Int32, _ body: (inout Partial) -> Void) {
        if stream == readingStream {
            body(&reading)
        } else {
            partials.update(stream, body)
        }
    }

    /// Removes and returns the response read on `stream`, if any.
    private func takePartial(_ stream: Int32) -> Partial? {
        guard stream == readingStream else { return partials.removeValue(forKey: stream) }
        readingStream = 0
        defer { reading = Partial() }
        return reading
    }

    func didReceiveHeader(stream: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        if Self.equals(name, ":status") {
            var status = 0
            for byte in value where byte >= 0x30 && byte <= 0x39 { status = status * 10 + Int(byte - 0x30) }
            withPartial(stream) { $0.status = value.count == 3 ? status : 0 }
        } else if Self.equals(name, "apns-id") {
            withPartial(stream) { $0.apnsID = APNsID(utf8: value) }
        } else if Self.equals(name, "apns-unique-id") {
            withPartial(stream) { $0.uniqueID = APNsID(utf8: value) }
        }
    }

    func didReceiveData(stream: Int32, bytes: UnsafeRawBufferPointer) {
        withPartial(stream) { partial in
            let room = Self.maximumBodySize - partial.body.count
            if room > 0 { partial.body.append(contentsOf: bytes.prefix(room)) }
        }
    }

    func didCloseStream(stream: Int32, errorCode: HTTP2ErrorCode) {
        let now = settings.clock.now()
        guard let partial = takePartial(stream), partial.status != 0 else {
            machine.streamClosed(stream, errorCode: errorCode, now: now)
            return
        }
        var response = ProviderResponse(status: partial.status, apnsID: partial.apnsID, apnsUniqueID: partial.uniqueID)
        if !partial.body.isEmpty, case .success(let body) = ProviderResponse.decodeBody(partial.body) {
            response.reason = body.reason
            response.timestamp = body.timestamp
        }
        if partial.status != 200 && response.reason == nil && errorCode != .noError {
            // Headers came, then the stream was reset before the body: no verdict to trust.
            machine.streamClosed(stream, errorCode: errorCode, now: now)
            return
        }
        machine.received(response, on: stream, now: now)
    }

    func didReceiveGoaway(lastStreamID: Int32, errorCode: HTTP2ErrorCode, debugData: UnsafeRawBufferPointer) {
        sawGoaway = true
        machine.receivedGoaway(
            ProviderGoaway(lastStreamID: lastStreamID, errorCode: errorCode, debugData: debugData),
            now: settings.clock.now())
    }

    func didReceiveSettings(_ settings: HTTP2Settings) {
        // Every SETTINGS, even one that names no limit: the first lifts the one-stream rule, and
        // nghttp2 has applied it (no limit named in the first means none).
        guard let session else { return }
        machine.settingsChanged(
            maximumConcurrentStreams: Int(session.remoteMaxConcurrentStreams), now: self.settings.clock.now())
    }

    func didReceivePingAck(_ payload: UInt64) {
        machine.pingAcknowledged(now: settings.clock.now())
    }

    private static func equals(_ bytes: UnsafeRawBufferPointer, _ text: StaticString) -> Bool {
        text.withUTF8Buffer { expected in
            expected.count == bytes.count && expected.elementsEqual(bytes)
        }
    }
}
