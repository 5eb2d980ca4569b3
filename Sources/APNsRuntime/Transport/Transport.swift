import APNsCore

/// What a non-blocking read or write did.
package enum IOResult: Equatable {
    /// This many bytes were read or written.
    case done(Int)
    /// Nothing can be read now; wait for readability.
    case wantRead
    /// Nothing can be written now; wait for writability.
    case wantWrite
    /// The peer closed the connection (close_notify or end of stream).
    case closed
    /// The connection failed.
    case failed(LegacyAPNsError)
}

/// What a transport can wait for.
package struct Readiness: OptionSet, Sendable {
    package let rawValue: UInt8
    package init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Bytes (or the end of the stream) can be read.
    package static let readable = Readiness(rawValue: 1)
    /// Bytes can be written.
    package static let writable = Readiness(rawValue: 2)
}

/// The byte pipe under a connection shell: a TLS session over a non-blocking socket
/// (``TLSSession``), a plain TCP socket (``TCPTransport``), or an in-memory peer that tests drive
/// deterministically (the binary client's model gateway, the HTTP/2 simulator's sans-IO
/// connection). Every connection shell reads, writes and waits through it: the binary client's
/// `GatewayConnection`, the HTTP/2 client's `ProviderConnection` and `HTTP2Exchange`, the feedback
/// reader, the bridge's `SenderSession`, the HTTP/2 simulator's connection loop and the HTTP/1.1
/// server.
///
/// Reads and writes never block. The one place that waits is ``wait(for:timeout:)``, and the
/// loops that need waiting (write everything, read with a deadline, drain before closing) are
/// written once, below, for every transport: no connection shell, simulator or reader polls a
/// socket itself. An event loop that owns many sessions (the simulator's) waits for all of them at
/// once with a ``Poller`` instead, and drives each without blocking.
package protocol Transport: AnyObject {
    /// "host:port" of the other side, for messages.
    var peer: String { get }
    /// Reads what is available into `buffer`, without blocking.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult
    /// Writes what fits now (a partial write returns how many bytes were taken), without blocking.
    func write(_ bytes: UnsafeRawBufferPointer) -> IOResult
    /// Waits until one of `events` is possible (or the connection hung up or failed, which the
    /// next read or write reports), for at most `timeout` seconds. False when the time ran out.
    func wait(for events: Readiness, timeout: Double) -> Bool
    /// The same, also returning as soon as `wake` is signalled (another thread has something for
    /// this one: a producer's work for a connection waiting with free streams). An in-memory
    /// transport, which never blocks, may ignore it.
    func wait(for events: Readiness, timeout: Double, wake: WakeSignal) -> Bool
    /// Closes at once (a TLS close_notify when possible, never blocking).
    func close()
    /// A server's goodbye: ends the stream (TLS close_notify, FIN), then reads and discards what
    /// the peer still sends for up to `drainTimeout` seconds before closing. Closing with unread
    /// input would make the kernel send a reset, and a reset destroys an answer the peer has not
    /// read yet (the binary protocol's error response).
    func closeGently(drainTimeout: Double)
}

extension Transport {
    /// Writes every byte, waiting for the peer as needed; each wait lasts at most `timeout`
    /// seconds. Returns nil on success, or why it failed (closed, broken, stalled).
    package func writeAll(_ bytes: UnsafeRawBufferPointer, timeout: Double) -> LegacyAPNsError? {
        var offset = 0
        while offset < bytes.count {
            let result = write(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            switch result {
            case .done(let count):
                offset += count
            case .wantWrite, .wantRead:
                guard wait(for: result == .wantWrite ? .writable : .readable, timeout: timeout) else {
                    return LegacyAPNsError(.timedOut, "\(peer) accepted no data for \(formatSeconds(timeout))")
                }
            case .closed:
                return LegacyAPNsError(.connectionFailed, "\(peer) closed the connection")
            case .failed(let error):
                return error
            }
        }
        return nil
    }

    /// Writes every byte of `bytes`; see ``writeAll(_:timeout:)-(UnsafeRawBufferPointer,_)``.
    package func writeAll(_ bytes: [UInt8], timeout: Double) -> LegacyAPNsError? {
        bytes.withUnsafeBytes { writeAll($0, timeout: timeout) }
    }

    /// Reads what arrives within `timeout` seconds: ``IOResult/wantRead`` when nothing did.
    package func read(into buffer: UnsafeMutableRawBufferPointer, waitingUpTo timeout: Double) -> IOResult {
        let deadline = Monotonic.now() + timeout
        while true {
            let result = read(into: buffer)
            switch result {
            case .wantRead, .wantWrite:
                let remaining = deadline - Monotonic.now()
                guard remaining > 0, wait(for: result == .wantWrite ? .writable : .readable, timeout: remaining)
                else { return .wantRead }
            case .done, .closed, .failed:
                return result
            }
        }
    }

    /// Reads and throws away what the peer sends until it closes or `timeout` seconds pass.
    package func discardInput(for timeout: Double, into scratch: UnsafeMutableRawBufferPointer) {
        let deadline = Monotonic.now() + timeout
        while true {
            let remaining = deadline - Monotonic.now()
            guard remaining > 0 else { return }
            switch read(into: scratch, waitingUpTo: remaining) {
            case .done, .wantRead, .wantWrite: continue
            case .closed, .failed: return
            }
        }
    }
}
