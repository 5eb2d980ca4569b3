import APNsCore
internal import CNGHTTP2

/// nghttp2's callbacks: `@convention(c)` functions without captures, reaching their session
/// through `user_data` (an unretained pointer to it, set after creation and cleared before
/// `nghttp2_session_del`, so no callback can outlive it). They translate frames into delegate
/// calls and return 0, except where a return value steers nghttp2 (noted).
extension HTTP2Session {
    static func install(_ callbacks: OpaquePointer) {
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, onBeginHeaders)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeader)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrameReceived)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunk)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamClose)
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, onFrameSent)
        nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(callbacks, onInvalidFrame)
        nghttp2_session_callbacks_set_error_callback2(callbacks, onError)
    }

    @inline(__always)
    private static func session(_ userData: UnsafeMutableRawPointer?) -> HTTP2Session? {
        guard let userData else { return nil }
        return Unmanaged<HTTP2Session>.fromOpaque(userData).takeUnretainedValue()
    }

    private static let onBeginHeaders: nghttp2_on_begin_headers_callback = { _, frame, userData in
        guard let session = session(userData), let frame else { return 0 }
        session.headerBlockSize = 0
        if session.role == .server, frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST {
            session.openIncomingStreams += 1
        }
        session.activeDelegate?.didBeginHeaders(stream: frame.pointee.hd.stream_id)
        return 0
    }

    /// Enforces ``Options/maximumHeaderListSize``: past it, the stream is reset with
    /// ENHANCE_YOUR_CALM and nghttp2 is told to skip the rest of the block
    /// (NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE resets the stream; the RST_STREAM submitted first sets
    /// its code).
    private static let onHeader: nghttp2_on_header_callback = {
        sessionPointer, frame, name, nameCount, value, valueCount, _, userData in
        guard let session = session(userData), let frame else { return 0 }
        let stream = frame.pointee.hd.stream_id
        session.headerBlockSize += nameCount + valueCount + 32
        if session.headerBlockSize > session.options.maximumHeaderListSize {
            _ = nghttp2_submit_rst_stream(sessionPointer, 0, stream, HTTP2ErrorCode.enhanceYourCalm.rawValue)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue
        }
        session.activeDelegate?.didReceiveHeader(
            stream: stream, name: UnsafeRawBufferPointer(start: name, count: nameCount),
            value: UnsafeRawBufferPointer(start: value, count: valueCount))
        return 0
    }

    private static let onFrameReceived: nghttp2_on_frame_recv_callback = { _, frame, userData in
        guard let session = session(userData) else { return 0 }
        session.receivedFrameCount &+= 1
        guard let frame, let delegate = session.activeDelegate else { return 0 }
        let header = frame.pointee.hd
        let endStream = header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        let isAck = header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0
        switch UInt32(header.type) {
        case NGHTTP2_HEADERS.rawValue:
            delegate.didEndHeaders(stream: header.stream_id, endStream: endStream)
        case NGHTTP2_DATA.rawValue:
            if endStream { delegate.didEndData(stream: header.stream_id) }
        case NGHTTP2_SETTINGS.rawValue where !isAck:
            let settings = frame.pointee.settings
            var received = HTTP2Settings()
            for index in 0..<settings.niv {
                let entry = settings.iv[index]
                received.take(
                    HTTP2Setting(
                        HTTP2Setting.Identifier(rawValue: UInt16(truncatingIfNeeded: entry.settings_id)), entry.value))
            }
            delegate.didReceiveSettings(received)
        case NGHTTP2_PING.rawValue where isAck:
            let payload = withUnsafeBytes(of: frame.pointee.ping.opaque_data) {
                UInt64(bigEndian: $0.loadUnaligned(as: UInt64.self))
            }
            delegate.didReceivePingAck(payload)
        case NGHTTP2_RST_STREAM.rawValue:
            delegate.didReceiveRstStream(
                stream: header.stream_id, errorCode: HTTP2ErrorCode(rawValue: frame.pointee.rst_stream.error_code))
        case NGHTTP2_GOAWAY.rawValue:
            let goaway = frame.pointee.goaway
            delegate.didReceiveGoaway(
                lastStreamID: goaway.last_stream_id, errorCode: HTTP2ErrorCode(rawValue: goaway.error_code),
                debugData: UnsafeRawBufferPointer(start: goaway.opaque_data, count: goaway.opaque_data_len))
        default:
            break
        }
        return 0
    }

    private static let onDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, stream, data, count, userData in
        guard let session = session(userData) else { return 0 }
        session.activeDelegate?.didReceiveData(stream: stream, bytes: UnsafeRawBufferPointer(start: data, count: count))
        return 0
    }

    /// Frees the stream's body slot (its stream user data), then tells the delegate.
    private static let onStreamClose: nghttp2_on_stream_close_callback = {
        sessionPointer, stream, errorCode, userData in
        guard let session = session(userData) else { return 0 }
        if let slot = nghttp2_session_get_stream_user_data(sessionPointer, stream) {
            session.releaseBodySlot(slot)
        }
        session.requestClosed()
        if session.role == .server, stream & 1 == 1, session.openIncomingStreams > 0 {
            session.openIncomingStreams -= 1
        }
        session.activeDelegate?.didCloseStream(stream: stream, errorCode: HTTP2ErrorCode(rawValue: errorCode))
        return 0
    }

    /// Watches GOAWAYs going out: one this side did not ask for is nghttp2 ending the connection
    /// because the peer broke the protocol, with its reason in the debug data.
    private static let onFrameSent: nghttp2_on_frame_send_callback = { _, frame, userData in
        guard let session = session(userData), let frame, UInt32(frame.pointee.hd.type) == NGHTTP2_GOAWAY.rawValue
        else { return 0 }
        let goaway = frame.pointee.goaway
        let debug = UnsafeRawBufferPointer(start: goaway.opaque_data, count: goaway.opaque_data_len)
        if let mine = session.localGoaways.firstIndex(where: { $0.0 == goaway.error_code && $0.1.elementsEqual(debug) })
        {
            session.localGoaways.remove(at: mine)
        } else {
            session.recordTermination(errorCode: goaway.error_code, debugData: debug)
        }
        return 0
    }

    /// Keeps the error for wording a failure, and tells a server's delegate of a stream beyond
    /// the concurrent-stream limit: nghttp2 calls this for the request HEADERS it is about to refuse
    /// (over a limit not yet acknowledged: REFUSED_STREAM) or to end the connection for (over the
    /// acknowledged limit: PROTOCOL_ERROR, with the incoming streams at the limit).
    private static let onInvalidFrame: nghttp2_on_invalid_frame_recv_callback = { _, frame, code, userData in
        guard let session = session(userData) else { return 0 }
        session.lastLibraryError = (code, nil)
        guard session.role == .server, let frame, UInt32(frame.pointee.hd.type) == NGHTTP2_HEADERS.rawValue else {
            return 0
        }
        let overLimit =
            code == NGHTTP2_ERR_REFUSED_STREAM.rawValue
            || (code == NGHTTP2_ERR_PROTO.rawValue
                && session.openIncomingStreams >= Int(session.localMaxConcurrentStreams))
        if overLimit { session.activeDelegate?.didExceedStreamLimit(stream: frame.pointee.hd.stream_id) }
        return 0
    }

    /// Keeps nghttp2's explanation for wording a later failure, except for header-field messages,
    /// which quote the field (it could be an `authorization` value: reasons never carry secrets).
    private static let onError: nghttp2_error_callback2 = { _, code, message, count, userData in
        guard let session = session(userData) else { return 0 }
        guard code != NGHTTP2_ERR_HTTP_HEADER.rawValue, let message else {
            session.lastLibraryError = (code, nil)
            return 0
        }
        let text = String(decoding: UnsafeRawBufferPointer(start: message, count: min(count, 300)), as: UTF8.self)
        session.lastLibraryError = (code, text)
        return 0
    }

    /// The data source of every body: copies the next piece of the slot's bytes into nghttp2's
    /// frame buffer, sets EOF with the last piece and lets go of the bytes then.
    static let readBody: nghttp2_data_source_read_callback = {
        _, _, buffer, length, flags, source, userData in
        guard let session = session(userData), let buffer, let flags, let token = source?.pointee.ptr else {
            return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue)
        }
        let slot = Int(bitPattern: token) - 1
        let copied = session.bodies[slot].bytes.withUnsafeBytes { bytes -> Int in
            let offset = session.bodies[slot].offset
            let count = min(length, bytes.count - offset)
            if count > 0 {
                buffer.update(from: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + offset, count: count)
            }
            return count
        }
        session.bodies[slot].offset += copied
        if session.bodies[slot].offset >= session.bodies[slot].bytes.count {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            session.bodies[slot].bytes = []
        }
        return copied
    }
}
