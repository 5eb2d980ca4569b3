import APNsCore
internal import CNGHTTP2

/// One HTTP/2 connection's protocol state, client or server, driven without I/O: bytes in with
/// ``receive(_:)``, bytes out with ``send(into:)``, events out through an ``HTTP2SessionDelegate``.
/// nghttp2 does the framing, HPACK, flow control and stream states; this class is the Swift shell.
///
/// ```
///          TLS read                                   TLS write
///   bytes ─────────► receive(_:) ──► nghttp2 ──► send(into: &writer) ─────► bytes
///                        │   callbacks │  ▲ submitRequest / submitResponse / submitGoaway ...
///                        ▼             ▼  │
///                     delegate: headers, data, stream closed, GOAWAY, SETTINGS, PING ack
/// ```
///
/// **Threading.** Not `Sendable`: one owner thread makes every call, and every delegate call
/// happens on it, inside ``receive(_:)`` or ``send(into:)``. The delegate is not retained (the
/// usual owner is a connection object that is also the delegate): it must outlive the session's
/// use.
///
/// **The owner's loop.** After every ``receive(_:)`` and every `submit...`, call
/// ``send(into:)`` and write what it appended; close the connection when neither ``wantsRead`` nor
/// ``wantsWrite`` holds. ``send(into:)`` appends about ``Options/maximumBufferedOutput`` bytes at
/// most per call (call again while ``wantsWrite``), to a writer the caller reuses, so the shell
/// writes large TLS records.
///
/// **Errors.** When the peer breaks the protocol, nghttp2 queues a GOAWAY and ignores further input:
/// ``receive(_:)`` throws a ``LegacyAPNsError`` with code `protocolViolation` naming nghttp2's
/// reason, ``wantsWrite`` stays true until that GOAWAY has been taken with ``send(into:)``, and then
/// the session wants nothing more. Errors after which nghttp2 cannot even say goodbye (no
/// connection preface, flooding) fail the session at once: ``wantsRead`` and ``wantsWrite`` turn
/// false. Arbitrary bytes may be fed to a server session: the worst outcome is such an error.
///
/// **Allocations.** Header fields reach the delegate as views into nghttp2's buffers (no `String`
/// per field); requests and responses are submitted from an ``HTTP2HeaderList`` through a reused
/// `nghttp2_nv` array; a body is retained, not copied, until its stream's DATA has been written,
/// and its bookkeeping slot is recycled. What remains per request is nghttp2's own.
package final class HTTP2Session {
    /// Which end of the connection this session is.
    package enum Role: Sendable {
        /// Sends the connection preface and requests.
        case client
        /// Expects the preface and answers requests.
        case server
    }

    /// A body waiting to be written as DATA, retained (not copied) until then.
    struct OutboundBody {
        var bytes: [UInt8]
        var offset: Int
    }

    /// The `nghttp2_session`.
    let pointer: OpaquePointer
    /// Which end this session is.
    package let role: Role
    let options: Options
    /// Unowned, not weak: the usual owner is a connection object that is also the delegate, and a
    /// weak reference gives that object a side table, which sends every retain and release of it
    /// (around each callback) down the slow path: about 6 % of a server's samples. Unowned (safe):
    /// a session used after its delegate is gone traps instead of calling into freed memory.
    private unowned var delegate: (any HTTP2SessionDelegate)?
    /// The delegate, held strongly while a receive or send runs (one load per call, not per
    /// callback).
    @exclusivity(unchecked) private var runningDelegate: (any HTTP2SessionDelegate)?
    /// The same delegate for the callbacks, without a checked load around each of them. Safe: set
    /// only while ``runningDelegate`` keeps it alive.
    unowned(unsafe) var activeDelegate: (any HTTP2SessionDelegate)?

    // The per-request state below is only touched from the thread that owns the session (its
    // methods and the nghttp2 callbacks they cause, which never overlap an access to the same
    // property): Swift's dynamic exclusivity checks on these class properties cannot find a
    // conflict and cost a few per cent per request, so they are off for them.

    /// Bodies by slot; the slot number + 1 travels as the data source and stream user data.
    @exclusivity(unchecked) var bodies: [OutboundBody] = []
    @exclusivity(unchecked) var freeBodySlots: [Int] = []
    /// Client: requests submitted and not yet closed.
    @exclusivity(unchecked) package private(set) var pendingRequestCount = 0
    /// Server: streams the peer opened that are not closed yet (nghttp2's count of incoming
    /// streams, which it compares with our SETTINGS_MAX_CONCURRENT_STREAMS).
    @exclusivity(unchecked) package internal(set) var openIncomingStreams = 0

    /// The reused array handed to nghttp2's submit functions.
    @exclusivity(unchecked) private var nameValues: UnsafeMutablePointer<nghttp2_nv>
    @exclusivity(unchecked) private var nameValueCapacity: Int

    /// What nghttp2 serialised while ``receive(_:)`` ran, handed out by the next ``send(into:)``.
    private var staged = ByteWriter(capacity: 4096)

    /// The size of the header block being received (RFC accounting).
    @exclusivity(unchecked) var headerBlockSize = 0
    /// GOAWAYs this side asked for, (error code, debug data), to tell them from nghttp2's own.
    var localGoaways: [(UInt32, [UInt8])] = []
    /// The last lib error nghttp2 reported through a callback, for wording a failure.
    var lastLibraryError: (code: Int32, message: String?)?
    /// Frames received whole so far, of every type (a server tells a peer that trickles a frame
    /// from one that sends nothing by it).
    @exclusivity(unchecked) package internal(set) var receivedFrameCount = 0
    /// Set when nghttp2 itself ended the connection (its GOAWAY went out).
    package private(set) var connectionError: LegacyAPNsError?
    /// Set when nghttp2 cannot continue at all.
    @exclusivity(unchecked) private var failure: LegacyAPNsError?
    @exclusivity(unchecked) private var isRunning = false

    /// Creates a session and queues its first SETTINGS frame (and, for a client, the connection
    /// preface) for the first ``send(into:)``.
    package init(role: Role, options: Options = Options(), delegate: any HTTP2SessionDelegate) throws {
        if let window = options.initialWindowSize, window > UInt32(CNGHTTP2_NGHTTP2_MAX_WINDOW_SIZE) {
            throw LegacyAPNsError(
                .invalidValue,
                "initial window size \(window) is larger than HTTP/2 allows (\(CNGHTTP2_NGHTTP2_MAX_WINDOW_SIZE))")
        }
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else {
            throw LegacyAPNsError(.protocolViolation, "cannot create an HTTP/2 session: out of memory")
        }
        defer { nghttp2_session_callbacks_del(callbacks) }
        Self.install(callbacks)

        var option: OpaquePointer?
        guard nghttp2_option_new(&option) == 0, let option else {
            throw LegacyAPNsError(.protocolViolation, "cannot create an HTTP/2 session: out of memory")
        }
        defer { nghttp2_option_del(option) }
        nghttp2_option_set_no_closed_streams(option, 1)
        nghttp2_option_set_max_outbound_ack(option, options.maximumOutboundAcks)
        nghttp2_option_set_max_settings(option, options.maximumSettingsEntries)
        nghttp2_option_set_max_continuations(option, options.maximumContinuations)
        if let peer = options.peerMaxConcurrentStreams {
            nghttp2_option_set_peer_max_concurrent_streams(option, peer)
        }
        if role == .server {
            nghttp2_option_set_stream_reset_rate_limit(option, options.streamResetBurst, options.streamResetRate)
        }

        var created: OpaquePointer?
        let result =
            role == .client
            ? nghttp2_session_client_new2(&created, callbacks, nil, option)
            : nghttp2_session_server_new2(&created, callbacks, nil, option)
        guard result == 0, let created else {
            throw LegacyAPNsError(
                .protocolViolation, "cannot create an HTTP/2 session: \(String(cString: nghttp2_strerror(result)))")
        }
        pointer = created
        self.role = role
        self.options = options
        self.delegate = delegate
        nameValueCapacity = 16
        nameValues = .allocate(capacity: nameValueCapacity)
        nghttp2_session_set_user_data(pointer, Unmanaged.passUnretained(self).toOpaque())
        try submitSettings(options.initialSettings(for: role))
        if let window = options.connectionWindowSize {
            let result = nghttp2_session_set_local_window_size(pointer, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, window)
            guard result == 0 else {
                throw LegacyAPNsError(
                    .invalidValue,
                    "connection window size \(window) is not possible: \(String(cString: nghttp2_strerror(result)))")
            }
        }
    }

    deinit {
        nghttp2_session_set_user_data(pointer, nil)
        nghttp2_session_del(pointer)
        nameValues.deallocate()
    }

    // MARK: - State

    /// Whether the session still expects bytes from the peer.
    package var wantsRead: Bool { failure == nil && nghttp2_session_want_read(pointer) != 0 }

    /// Whether the session has bytes for the peer (``send(into:)`` will append some).
    package var wantsWrite: Bool { failure == nil && (!staged.isEmpty || nghttp2_session_want_write(pointer) != 0) }

    /// The peer's current SETTINGS_MAX_CONCURRENT_STREAMS: how many streams this side may have open
    /// (before the peer's first SETTINGS: the assumption in ``Options/peerMaxConcurrentStreams``).
    package var remoteMaxConcurrentStreams: UInt32 {
        nghttp2_session_get_remote_settings(pointer, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
    }

    /// Our SETTINGS_MAX_CONCURRENT_STREAMS as the peer has acknowledged it.
    package var localMaxConcurrentStreams: UInt32 {
        nghttp2_session_get_local_settings(pointer, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)
    }

    /// The highest stream the peer opened that this side processed (a server's natural GOAWAY
    /// last-stream-id).
    package var lastProcessedStreamID: Int32 { nghttp2_session_get_last_proc_stream_id(pointer) }

    /// Client: whether a new request may start (no GOAWAY sent or received, identifiers left).
    package var canStartRequest: Bool { failure == nil && nghttp2_session_check_request_allowed(pointer) != 0 }

    // MARK: - Bytes in and out

    /// Feeds bytes read from the peer; delegate calls happen during it. Frames nghttp2 answers at
    /// once (SETTINGS and PING acknowledgements, window updates, responses the delegate submitted)
    /// are staged for the next ``send(into:)``.
    ///
    /// - Throws: ``LegacyAPNsError`` `protocolViolation` when the bytes break HTTP/2 (then send the
    ///   GOAWAY nghttp2 queued and close), and again on every later call.
    package func receive(_ bytes: UnsafeRawBufferPointer) throws {
        if let stop = failure ?? connectionError { throw stop }
        try beginRun()
        defer { endRun() }
        let result = nghttp2_session_mem_recv(
            pointer, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        if result < 0 { throw fail(code: Int32(result)) }
        try pump(into: &staged, limit: options.maximumBufferedOutput)
        if let connectionError { throw connectionError }
    }

    /// Appends what the session has to send to `writer`: first what ``receive(_:)`` staged, then
    /// frames from nghttp2 until it has nothing more or about ``Options/maximumBufferedOutput``
    /// bytes were appended (frames are not split). Delegate calls (streams closing as their last
    /// frame goes out) happen during it.
    ///
    /// - Throws: ``LegacyAPNsError`` `protocolViolation` only when nghttp2 fails internally (out of
    ///   memory); the session is then unusable.
    package func send(into writer: inout ByteWriter) throws {
        if let failure { throw failure }
        let limit = writer.count + options.maximumBufferedOutput
        if !staged.isEmpty {
            if writer.isEmpty {
                swap(&writer, &staged)
            } else {
                staged.withUnsafeReadableBytes { writer.writeBytes($0) }
                staged.clear()
            }
        }
        try beginRun()
        defer { endRun() }
        try pump(into: &writer, limit: limit)
    }

    /// Moves frames from nghttp2 into `writer` until nghttp2 has none or `writer` holds `limit`
    /// bytes (a frame is never split, so the last one may go past it).
    private func pump(into writer: inout ByteWriter, limit: Int) throws {
        while writer.count < limit {
            var data: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(pointer, &data)
            if count < 0 { throw fail(code: Int32(count)) }
            guard count > 0, let data else { return }
            writer.writeBytes(UnsafeRawBufferPointer(start: data, count: count))
        }
    }

    private func beginRun() throws {
        precondition(!isRunning, "HTTP2Session.receive or send called from one of the session's own delegate calls")
        isRunning = true
        runningDelegate = delegate
        activeDelegate = runningDelegate
    }

    private func endRun() {
        activeDelegate = nil
        runningDelegate = nil
        isRunning = false
    }

    /// Marks the session failed for good after a fatal nghttp2 error, worded for people.
    private func fail(code: Int32) -> LegacyAPNsError {
        let why: String
        switch code {
        case NGHTTP2_ERR_BAD_CLIENT_MAGIC.rawValue:
            why =
                "the client did not open with the HTTP/2 connection preface (\"PRI * HTTP/2.0\"): it does not speak HTTP/2"
        case NGHTTP2_ERR_FLOODED.rawValue:
            why =
                "the peer flooded the connection with frames that need answers (PING, SETTINGS) without reading the answers (more than \(options.maximumOutboundAcks) queued)"
        case NGHTTP2_ERR_TOO_MANY_CONTINUATIONS.rawValue:
            why = "the peer split one header block into more than \(options.maximumContinuations) CONTINUATION frames"
        case NGHTTP2_ERR_NOMEM.rawValue:
            why = "nghttp2 ran out of memory"
        default:
            why = "nghttp2 failed: \(String(cString: nghttp2_strerror(code)))"
        }
        let error = LegacyAPNsError(.protocolViolation, "HTTP/2 session failed: \(why)")
        failure = error
        return error
    }

    /// Records that nghttp2 ended the connection with its own GOAWAY (seen as the frame went out).
    func recordTermination(errorCode: UInt32, debugData: UnsafeRawBufferPointer) {
        guard connectionError == nil else { return }
        var why = String(decoding: UnsafeRawBufferPointer(rebasing: debugData.prefix(200)), as: UTF8.self)
        if why.isEmpty, let last = lastLibraryError {
            why = last.message ?? String(cString: nghttp2_strerror(last.code))
        }
        if why.isEmpty { why = "a protocol error" }
        connectionError = LegacyAPNsError(
            .protocolViolation,
            "the HTTP/2 peer broke the protocol: \(why) (GOAWAY \(HTTP2ErrorCode(rawValue: errorCode)) sent)")
    }

    // MARK: - Submitting

    /// Client: queues a request and returns its stream identifier. nghttp2 holds it back while the
    /// server's concurrent-stream limit is reached and sends it when a stream closes.
    ///
    /// - Parameters:
    ///   - headers: pseudo-headers first (see ``ProviderRequest`` for the APNs form).
    ///   - body: sent as DATA; retained, not copied, until written. Empty: the HEADERS end the stream.
    /// - Throws: `streamUnavailable` after GOAWAY, when identifiers are used up, or when
    ///   ``Options/maximumPendingRequests`` requests are already pending.
    package func submitRequest(headers: HTTP2HeaderList, body: [UInt8]) throws -> Int32 {
        precondition(role == .client, "only a client session submits requests")
        if let failure { throw failure }
        guard nghttp2_session_check_request_allowed(pointer) != 0 else {
            throw LegacyAPNsError(
                .streamUnavailable,
                "no new HTTP/2 request can start on this connection: it received or sent GOAWAY, or its stream identifiers are used up"
            )
        }
        guard pendingRequestCount < options.maximumPendingRequests else {
            throw LegacyAPNsError(
                .streamUnavailable,
                "\(pendingRequestCount) HTTP/2 requests are already waiting on this connection (the limit is \(options.maximumPendingRequests))"
            )
        }
        let slot = body.isEmpty ? nil : takeBodySlot(body)
        let stream = withNameValues(headers) { nameValues, count -> Int32 in
            guard let slot else {
                return nghttp2_submit_request(pointer, nil, nameValues, count, nil, nil)
            }
            var provider = nghttp2_data_provider(
                source: nghttp2_data_source(ptr: slot), read_callback: Self.readBody)
            return nghttp2_submit_request(pointer, nil, nameValues, count, &provider, slot)
        }
        guard stream > 0 else {
            if let slot { releaseBodySlot(slot) }
            throw submitError(stream, "request")
        }
        pendingRequestCount += 1
        return stream
    }

    /// Server: queues the response on `stream` (a request the peer opened).
    ///
    /// - Parameter body: sent as DATA after the headers; retained, not copied, until written.
    /// - Throws: `streamUnavailable` when the stream is closed or already answered.
    package func submitResponse(stream: Int32, headers: HTTP2HeaderList, body: [UInt8] = []) throws {
        precondition(role == .server, "only a server session submits responses")
        if let failure { throw failure }
        guard stream > 0, nghttp2_session_find_stream(pointer, stream) != nil else {
            throw LegacyAPNsError(.streamUnavailable, "cannot answer HTTP/2 stream \(stream): it is not open")
        }
        let slot = body.isEmpty ? nil : takeBodySlot(body)
        let result = withNameValues(headers) { nameValues, count -> Int32 in
            guard let slot else { return nghttp2_submit_response(pointer, stream, nameValues, count, nil) }
            var provider = nghttp2_data_provider(
                source: nghttp2_data_source(ptr: slot), read_callback: Self.readBody)
            return nghttp2_submit_response(pointer, stream, nameValues, count, &provider)
        }
        guard result == 0 else {
            if let slot { releaseBodySlot(slot) }
            throw submitError(result, "response on stream \(stream)")
        }
        // Only now, with the response accepted, may the stream point at the slot: its close frees it.
        if let slot { nghttp2_session_set_stream_user_data(pointer, stream, slot) }
    }

    /// Queues a GOAWAY: no stream above `lastStreamID` (default: the last one processed) will be
    /// processed. Streams at or below it continue; the connection ends when they are done.
    package func submitGoaway(
        lastStreamID: Int32? = nil, errorCode: HTTP2ErrorCode = .noError, debugData: [UInt8] = []
    ) throws {
        if let failure { throw failure }
        let last = lastStreamID ?? lastProcessedStreamID
        localGoaways.append((errorCode.rawValue, debugData))
        let result = debugData.withUnsafeBufferPointer {
            nghttp2_submit_goaway(pointer, 0, last, errorCode.rawValue, $0.baseAddress, $0.count)
        }
        guard result == 0 else {
            localGoaways.removeLast()
            throw submitError(result, "GOAWAY")
        }
    }

    /// Ends the connection: queues a GOAWAY with `errorCode` after which the session wants nothing
    /// more: the peer's later frames are ignored, open streams are abandoned. Its last-stream-id is
    /// the last stream processed. With `reason`, a GOAWAY carrying it as debug data goes first (the
    /// same code and last stream): nghttp2 ends a session only with a GOAWAY of its own, which
    /// carries none.
    package func terminate(errorCode: HTTP2ErrorCode = .noError, reason: String? = nil) throws {
        if let failure { throw failure }
        if let reason { try submitGoaway(errorCode: errorCode, debugData: Array(reason.utf8)) }
        localGoaways.append((errorCode.rawValue, []))
        let result = nghttp2_session_terminate_session(pointer, errorCode.rawValue)
        guard result == 0 else {
            localGoaways.removeLast()
            throw submitError(result, "GOAWAY")
        }
    }

    /// Queues a PING with an 8-byte payload; the peer's acknowledgement arrives as
    /// ``HTTP2SessionDelegate/didReceivePingAck(_:)``.
    package func submitPing(_ payload: UInt64 = 0) throws {
        if let failure { throw failure }
        let result = withUnsafeBytes(of: payload.bigEndian) { raw in
            nghttp2_submit_ping(pointer, 0, raw.baseAddress?.assumingMemoryBound(to: UInt8.self))
        }
        guard result == 0 else { throw submitError(result, "PING") }
    }

    /// Queues a SETTINGS frame, e.g. a new SETTINGS_MAX_CONCURRENT_STREAMS mid-connection (it
    /// applies to the peer once acknowledged).
    package func submitSettings(_ settings: [HTTP2Setting]) throws {
        if let failure { throw failure }
        let entries = settings.map {
            nghttp2_settings_entry(settings_id: Int32($0.identifier.rawValue), value: $0.value)
        }
        let result = entries.withUnsafeBufferPointer {
            nghttp2_submit_settings(pointer, 0, $0.baseAddress, $0.count)
        }
        guard result == 0 else { throw submitError(result, "SETTINGS") }
    }

    /// Queues an RST_STREAM: `stream` ends at once with `errorCode` (a server refusing work says
    /// `.refusedStream`: "not processed, send it again").
    package func submitRstStream(stream: Int32, errorCode: HTTP2ErrorCode) throws {
        if let failure { throw failure }
        let result = nghttp2_submit_rst_stream(pointer, 0, stream, errorCode.rawValue)
        guard result == 0 else { throw submitError(result, "RST_STREAM on stream \(stream)") }
    }

    private func submitError(_ code: Int32, _ what: String) -> LegacyAPNsError {
        let text = String(cString: nghttp2_strerror(code))
        switch code {
        case NGHTTP2_ERR_STREAM_CLOSED.rawValue, NGHTTP2_ERR_INVALID_ARGUMENT.rawValue,
            NGHTTP2_ERR_DATA_EXIST.rawValue, NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue,
            NGHTTP2_ERR_START_STREAM_NOT_ALLOWED.rawValue, NGHTTP2_ERR_SESSION_CLOSING.rawValue:
            return LegacyAPNsError(.streamUnavailable, "cannot submit the HTTP/2 \(what): \(text)")
        default:
            return LegacyAPNsError(.protocolViolation, "cannot submit the HTTP/2 \(what): \(text)")
        }
    }

    // MARK: - Header fields and bodies

    /// Fills the reused `nghttp2_nv` array from `headers` for the duration of `body` (nghttp2
    /// copies names and values while submitting).
    private func withNameValues<Result>(
        _ headers: HTTP2HeaderList, _ body: (UnsafeMutablePointer<nghttp2_nv>, Int) -> Result
    ) -> Result {
        let count = headers.count
        if count > nameValueCapacity {
            nameValues.deallocate()
            nameValueCapacity = max(count, nameValueCapacity * 2)
            nameValues = .allocate(capacity: nameValueCapacity)
        }
        let noIndex = UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue)
        return headers.bytes.withUnsafeBufferPointer { bytes in
            let base = UnsafeMutablePointer(mutating: bytes.baseAddress)
            for index in 0..<count {
                let field = headers.fields[index]
                nameValues[index] = nghttp2_nv(
                    name: base.map { $0 + Int(field.nameStart) }, value: base.map { $0 + Int(field.valueStart) },
                    namelen: Int(field.nameCount), valuelen: Int(field.valueCount),
                    flags: field.indexing == .never ? noIndex : 0)
            }
            return body(nameValues, count)
        }
    }

    /// Stores `bytes` in a free slot; returns the slot's token (slot + 1 as a pointer bit pattern).
    private func takeBodySlot(_ bytes: [UInt8]) -> UnsafeMutableRawPointer {
        let slot: Int
        if let free = freeBodySlots.popLast() {
            slot = free
            bodies[slot] = OutboundBody(bytes: bytes, offset: 0)
        } else {
            slot = bodies.count
            bodies.append(OutboundBody(bytes: bytes, offset: 0))
        }
        return UnsafeMutableRawPointer(bitPattern: slot + 1)!
    }

    /// Frees the slot `token` names and drops its body.
    func releaseBodySlot(_ token: UnsafeMutableRawPointer) {
        let slot = Int(bitPattern: token) - 1
        bodies[slot] = OutboundBody(bytes: [], offset: 0)
        freeBodySlots.append(slot)
    }

    /// A client request finished (closed).
    func requestClosed() {
        if role == .client, pendingRequestCount > 0 { pendingRequestCount -= 1 }
    }
}
