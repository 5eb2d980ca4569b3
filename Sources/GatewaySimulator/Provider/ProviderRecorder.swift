import APNsCore
import APNsCredentials
internal import APNsRuntime
import Synchronization

/// One request ``ProviderSimulator`` accepted (answered 200): what the client sent, the
/// `apns-id` it was answered with (its own, or one the simulator made up) and the connection.
public struct AcceptedRequest: Sendable, Hashable {
    /// The request as validated (the `authorization` value is not kept: it is a credential).
    public var request: ProviderRequest
    /// The `apns-id` of the response.
    public var apnsID: APNsID
    /// The simulator's number for the connection (1 for the first).
    public var connection: Int
    /// The `apns-unique-id` of the response (development only), the key of its delivery log.
    public var uniqueID: APNsID?

    /// Creates a record.
    public init(request: ProviderRequest, apnsID: APNsID, connection: Int, uniqueID: APNsID? = nil) {
        self.request = request
        self.apnsID = apnsID
        self.connection = connection
        self.uniqueID = uniqueID
    }

    /// Appends the record as one JSON object (no newline), the shape of `legacy-push serve --http2
    /// --record`: `{"token":"<hex>","topic":"...","pushType":"...","priority":10,"expiration":0,
    /// "collapseId":null,"apnsId":"<uuid>","payload":"<text>"}`. Headers the request did not
    /// carry are null (APNs then applies its defaults: priority 10, its storage policy).
    public func appendJSON(to bytes: inout [UInt8]) {
        var writer = ByteWriter()
        Self.writeJSON(request, apnsID: apnsID, into: &writer)
        writer.withUnsafeReadableBytes { bytes.append(contentsOf: $0) }
    }

    /// Writes the record of `request` answered with `apnsID` (``appendJSON(to:)``'s line, no
    /// newline) into `writer`, straight from the request: the simulator's JSON Lines recording
    /// does this for each request it accepts, without making an ``AcceptedRequest`` of it.
    static func writeJSON(_ request: ProviderRequest, apnsID: APNsID, into writer: inout ByteWriter) {
        // The literals and four nulls take 113 bytes; 160 leaves room.
        let bound =
            160 + 2 * request.deviceToken.count + APNsID.textCount + 2 * JSONCursor.decimalBound
            + JSONCursor.stringBound(request.topic?.utf8.count ?? 0)
            + JSONCursor.stringBound(request.pushType?.rawValue.utf8.count ?? 0)
            + JSONCursor.stringBound(request.collapseID?.utf8.count ?? 0)
            + JSONCursor.stringBound(request.payload.count)
        writer.writeWithUnsafeMutableBytes(upTo: bound) { room in
            var cursor = JSONCursor(room.baseAddress!)
            cursor.write(#"{"token":""#)
            request.deviceToken.withUnsafeBytes { token in
                cursor.fill(2 * token.count) { _ = DeviceToken.writeHex(token, into: $0) }
            }
            cursor.write(#"","topic":"#)
            cursor.writeString(orNull: request.topic)
            cursor.write(#","pushType":"#)
            cursor.writeString(orNull: request.pushType?.rawValue)
            cursor.write(#","priority":"#)
            cursor.writeDecimal(orNull: request.priority.map { UInt64($0.rawValue) })
            cursor.write(#","expiration":"#)
            cursor.writeDecimal(orNull: request.expiration.map { UInt64($0.rawValue) })
            cursor.write(#","collapseId":"#)
            cursor.writeString(orNull: request.collapseID)
            cursor.write(#","apnsId":""#)
            cursor.fill(APNsID.textCount) { apnsID.write(into: $0) }
            cursor.write(#"","payload":"#)
            request.payload.bytes.withUnsafeBytes { cursor.writeString($0) }
            cursor.write(byte: UInt8(ascii: "}"))
            return cursor.written
        }
    }
}

/// Where ``ProviderSimulator`` records accepted requests. It calls ``record(_:)`` with a batch
/// (a connection's accepted requests of up to ``ProviderSimulator/Configuration/recordingInterval``,
/// in order), never per request, and from the connection threads. (``JSONLinesProviderRecorder``
/// is handed the batch's lines instead, which the connection writes as it accepts each request.)
public protocol ProviderRecorder: Sendable {
    /// Records accepted requests of one connection, in the order they were accepted.
    func record(_ requests: [AcceptedRequest])
    /// Writes out anything buffered (called when the simulator stops).
    func flush()
}

/// Keeps accepted requests in memory, for tests and embedding programs.
public final class MemoryProviderRecorder: ProviderRecorder {
    private let requests = Mutex<[AcceptedRequest]>([])

    /// Creates an empty recorder.
    public init() {}

    /// Records accepted requests.
    public func record(_ requests: [AcceptedRequest]) {
        self.requests.withLock { $0.append(contentsOf: requests) }
    }

    /// Nothing to write out: everything is in memory.
    public func flush() {}

    /// Every accepted request so far, in the order the simulator handed them over (per
    /// connection, the order of acceptance).
    public var accepted: [AcceptedRequest] { requests.withLock { $0 } }

    /// How many requests were accepted.
    public var count: Int { requests.withLock { $0.count } }
}

/// Appends accepted requests to a file descriptor as JSON Lines (``AcceptedRequest/appendJSON(to:)``),
/// one write per batch, so the file is current within the recording interval. No fsync.
public final class JSONLinesProviderRecorder: ProviderRecorder {
    private let descriptor: Int32
    private let buffer = Mutex<ByteWriter>(ByteWriter())

    /// Records to `descriptor`, which stays owned by the caller (it is not closed).
    public init(fileDescriptor descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Writes the batch as JSON lines.
    public func record(_ requests: [AcceptedRequest]) {
        buffer.withLock { writer in
            writer.clear()
            for request in requests {
                AcceptedRequest.writeJSON(request.request, apnsID: request.apnsID, into: &writer)
                writer.writeInteger(UInt8(0x0A))
            }
            writeOut(writer)
            if writer.capacity > 1 << 20 { writer = ByteWriter() }
        }
    }

    /// Writes lines already made (the simulator's connections make them as they accept, with
    /// ``AcceptedRequest/writeJSON(_:apnsID:into:)``), in one write.
    func write(lines: ByteWriter) {
        buffer.withLock { _ in writeOut(lines) }
    }

    /// Under the lock, so the lines of different connections never interleave.
    private func writeOut(_ lines: ByteWriter) {
        _ = lines.withUnsafeReadableBytes { FileDescriptor.writeAll($0, to: descriptor) }
    }

    /// Nothing is buffered between batches.
    public func flush() {}
}
