import APNsCore
import APNsCredentials
internal import APNsRuntime

/// What one read of the feedback service produced: every complete tuple received, and why the
/// read ended early, if it did.
///
/// The service forgets tuples once it has sent them, so records are returned even when the read
/// failed: a stream that ends inside a tuple, a malformed tuple or a reset connection still yields
/// every complete tuple before the problem, with ``failure`` saying what went wrong.
public struct FeedbackResult: Sendable {
    /// The complete tuples, in the order the service sent them.
    public var records: [FeedbackRecord]
    /// Why the read did not end with the service closing the connection after a whole tuple, or
    /// nil when it did. Codes:
    /// - ``LegacyAPNsError/Code-swift.struct/connectionFailed``, ``LegacyAPNsError/Code-swift.struct/timedOut``,
    ///   ``LegacyAPNsError/Code-swift.struct/handshakeFailed``: the network or the service failed;
    /// - ``LegacyAPNsError/Code-swift.struct/certificateRejected``, ``LegacyAPNsError/Code-swift.struct/serverUntrusted``:
    ///   a certificate problem that retrying will not fix;
    /// - ``LegacyAPNsError/Code-swift.struct/malformedFrame``: the stream ended inside a tuple, or
    ///   announced a token length outside 1...100;
    /// - ``LegacyAPNsError/Code-swift.struct/cancelled``: the task was cancelled;
    /// - whatever the raw sink threw (``LegacyAPNsError/Code-swift.struct/fileError`` for other
    ///   errors), when the read itself succeeded.
    public var failure: LegacyAPNsError?
    /// Bytes of complete tuples received (the bytes handed to the raw sink).
    public var byteCount: Int
    /// Seconds from the start of the connection attempt to the end of the read.
    public var seconds: Double

    /// Creates a result.
    public init(records: [FeedbackRecord], failure: LegacyAPNsError? = nil, byteCount: Int = 0, seconds: Double = 0) {
        self.records = records
        self.failure = failure
        self.byteCount = byteCount
        self.seconds = seconds
    }

    /// Whether the service closed the connection after a whole tuple (or sent none).
    public var isComplete: Bool { failure == nil }

    /// The records, or the failure thrown (the records are then lost to the caller: use
    /// ``records`` and ``failure`` to keep both).
    public func get() throws(LegacyAPNsError) -> [FeedbackRecord] {
        if let failure { throw failure }
        return records
    }
}

extension FeedbackResult: CustomStringConvertible {
    /// One line for logs: "3 tuples, complete, 0.004 s" or
    /// "2 tuples, then failed: the feedback service at ... closed the connection inside a tuple ...".
    public var description: String {
        let tuples = "\(records.count) tuple\(records.count == 1 ? "" : "s")"
        let time = SendReport.formatSeconds(seconds)
        guard let failure else { return "\(tuples), complete, \(time) s" }
        return "\(tuples), then failed after \(time) s: \(failure.reason)"
    }
}
