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

    /// Creates a record.
    public init(request: ProviderRequest, apnsID: APNsID, connection: Int) {
        self.request = request
        self.apnsID = apnsID
        self.connection = connection
    }

    /// Appends the record as one JSON object (no newline), the shape of `legacy-push serve --http2
    /// --record`: `{"token":"<hex>","topic":"...","pushType":"...","priority":10,"expiration":0,
    /// "collapseId":null,"apnsId":"<uuid>","payload":"<text>"}`. Headers the request did not
    /// carry are null (APNs then applies its defaults: priority 10, its storage policy).
    public func appendJSON(to bytes: inout [UInt8]) {
        bytes.append(contentsOf: #"{"token":""#.utf8)
        request.deviceToken.withUnsafeBytes { token in
            let start = bytes.count
            bytes.append(contentsOf: repeatElement(0, count: 2 * token.count))
            bytes.withUnsafeMutableBytes { raw in
                _ = DeviceToken.writeHex(token, into: UnsafeMutableRawBufferPointer(rebasing: raw[start...]))
            }
        }
        bytes.append(contentsOf: #"","topic":"#.utf8)
        appendOptionalString(request.topic, to: &bytes)
        bytes.append(contentsOf: #","pushType":"#.utf8)
        appendOptionalString(request.pushType?.rawValue, to: &bytes)
        bytes.append(contentsOf: #","priority":"#.utf8)
        appendOptionalNumber(request.priority.map { UInt64($0.rawValue) }, to: &bytes)
        bytes.append(contentsOf: #","expiration":"#.utf8)
        appendOptionalNumber(request.expiration.map { UInt64($0.rawValue) }, to: &bytes)
        bytes.append(contentsOf: #","collapseId":"#.utf8)
        appendOptionalString(request.collapseID, to: &bytes)
        bytes.append(contentsOf: #","apnsId":""#.utf8)
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: APNsID.textCount))
        bytes.withUnsafeMutableBytes { raw in
            apnsID.write(into: UnsafeMutableRawBufferPointer(rebasing: raw[start...]))
        }
        bytes.append(contentsOf: #"","payload":"#.utf8)
        appendJSONString(request.payload.bytes, to: &bytes)
        bytes.append(UInt8(ascii: "}"))
    }

    private func appendOptionalString(_ text: String?, to bytes: inout [UInt8]) {
        if let text { appendJSONString(text, to: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
    }

    private func appendOptionalNumber(_ value: UInt64?, to bytes: inout [UInt8]) {
        if let value { appendDecimal(value, to: &bytes) } else { bytes.append(contentsOf: "null".utf8) }
    }
}

/// Where ``ProviderSimulator`` records accepted requests. It calls ``record(_:)`` with a batch
/// (a connection's accepted requests of up to ``ProviderSimulator/Configuration/recordingInterval``,
/// in order), never per request, and from the connection threads.
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
    private let buffer = Mutex<[UInt8]>([])

    /// Records to `descriptor`, which stays owned by the caller (it is not closed).
    public init(fileDescriptor descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Writes the batch as JSON lines.
    public func record(_ requests: [AcceptedRequest]) {
        buffer.withLock { bytes in
            bytes.removeAll(keepingCapacity: true)
            bytes.reserveCapacity(requests.count * 320)
            for request in requests {
                request.appendJSON(to: &bytes)
                bytes.append(0x0A)
            }
            // Written under the lock, so the lines of different connections never interleave.
            FileDescriptor.writeAll(bytes, to: descriptor)
            if bytes.capacity > 1 << 20 { bytes = [] }
        }
    }

    /// Nothing is buffered between batches.
    public func flush() {}
}
