import APNsCore

/// Notifications encoded ahead of the send, as the frames that will carry them: the input of
/// ``PushClient/send(frames:)``.
///
/// ```swift
/// var batch = FrameBatch(format: .enhanced)
/// for notification in notifications { try batch.append(notification) }   // checked here
/// let report = await client.send(frames: [batch])
/// ```
///
/// Each notification is checked against the format's limits and encoded once, when it is
/// appended; the connection then copies its frame straight into the TLS write buffer with the
/// wire identifier patched in, and keeps only its address while the frame waits for a verdict, so
/// nothing is allocated or reference-counted per notification on the way to the gateway. The
/// verdicts and the report are exactly those of ``PushClient/send(_:)-7u9fj`` for the same
/// notifications; a report that names a notification (a rejection, an unconfirmed one) rebuilds
/// it from its frame. A batch is a value: appending to a copy never changes a batch already handed
/// to a send.
public struct FrameBatch: Sendable {
    /// The frame format every notification of the batch is encoded in.
    public let format: FrameFormat
    /// The limits each notification is checked against when it is appended.
    public let encoder: FrameEncoder
    private var storage: Storage

    /// Bytes reserved when a batch is created without a capacity: room for about 400 notifications
    /// with 100-byte payloads.
    public static let defaultCapacity = 64 * 1024

    /// Creates an empty batch of frames of `format`, checked against `encoder`'s limits, with room
    /// for `capacity` bytes of frames before it grows.
    public init(
        format: FrameFormat = .enhanced, encoder: FrameEncoder = FrameEncoder(), capacity: Int = Self.defaultCapacity
    ) {
        self.format = format
        self.encoder = encoder
        storage = Storage(capacity: Swift.max(256, capacity))
    }

    /// Notifications in the batch.
    public var count: Int { storage.count }

    /// Whether the batch holds no notification.
    public var isEmpty: Bool { storage.count == 0 }

    /// Checks `notification` against the format's limits and adds it, encoded.
    ///
    /// - Throws: ``LegacyAPNsError`` when the gateway would refuse it (a token of the wrong size
    ///   for the format, an empty or oversized payload), with the reason in words.
    public mutating func append(_ notification: PushNotification) throws {
        try encoder.validate(notification, format: format)
        let size = FrameRecord.size(of: notification, format: format)
        reserve(size)
        FrameRecord.write(notification, format: format, to: storage.base + storage.used)
        storage.used += size
        storage.count += 1
    }

    /// The notifications of the batch, rebuilt from their frames (allocates: for inspection and
    /// tests, not for sending).
    public var notifications: [PushNotification] {
        var result: [PushNotification] = []
        result.reserveCapacity(count)
        forEachRecord { result.append($0.notification) }
        return result
    }

    // MARK: - Package API

    /// The records, one after the other (see ``FrameRecord``).
    package var records: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: storage.base, count: storage.used)
    }

    /// Calls `body` with every record, in order.
    package func forEachRecord(_ body: (FrameRecord.Reference) -> Void) {
        var offset = 0
        while offset < storage.used {
            let record = FrameRecord.Reference(storage.base + offset)
            body(record)
            offset += record.recordSize
        }
    }

    /// Lets `body` fill the free bytes at the end of the batch (at least `minimum` of them) with
    /// whole records or the start of one; `body` returns how many bytes it wrote. The whole
    /// records among them become part of the batch; the bytes of an unfinished last record are
    /// returned (as a range of the batch's free bytes, now past its end) for the caller to carry
    /// over to the next batch. For readers of record files (the spool of `send --input`).
    package mutating func fill(
        minimum: Int, _ body: (UnsafeMutableRawBufferPointer) throws -> Int
    ) rethrows -> UnsafeRawBufferPointer {
        reserve(minimum)
        let free = UnsafeMutableRawBufferPointer(
            start: storage.base + storage.used, count: storage.capacity - storage.used)
        let written = try body(free)
        var offset = 0
        var records = 0
        while let size = FrameRecord.size(ofRecordAt: UnsafeRawBufferPointer(rebasing: free[offset..<written])) {
            offset += size
            records += 1
        }
        storage.used += offset
        storage.count += records
        return UnsafeRawBufferPointer(rebasing: free[offset..<written])
    }

    /// Bytes of records in the batch.
    package var byteCount: Int { storage.used }

    /// A batch of the `count` whole records in `records`, which stay where they are: `owner` keeps
    /// them alive and unchanged for as long as the batch (or a copy of it) exists. Appending to
    /// the batch copies them first. For record stores in memory (the spool of `send --input`), so
    /// the send reads the records where the check wrote them.
    package init(
        format: FrameFormat, encoder: FrameEncoder, records: UnsafeRawBufferPointer, count: Int,
        owner: some AnyObject & Sendable
    ) {
        self.format = format
        self.encoder = encoder
        storage = Storage(borrowing: records, count: count, owner: owner)
    }

    /// Makes room for `additional` bytes (copying the batch if it is shared).
    private mutating func reserve(_ additional: Int) {
        let needed = storage.used + additional
        if !isKnownUniquelyReferenced(&storage) || needed > storage.capacity {
            storage = storage.copy(capacity: Swift.max(needed, storage.capacity * (needed > storage.capacity ? 2 : 1)))
        }
    }

    /// The bytes of a batch: allocated once (or borrowed from an owner), never moved while
    /// anything refers to them.
    private final class Storage: @unchecked Sendable {
        // @unchecked: a batch mutates its storage only while it holds the only reference to it
        // (copy on write), so shared storage is never written; borrowed storage is full
        // (capacity == used), so it is copied before anything is appended.
        let base: UnsafeMutableRawPointer
        let capacity: Int
        var used = 0
        var count = 0
        /// What keeps borrowed bytes alive (nil: the storage allocated them and frees them).
        private let owner: AnyObject?

        init(capacity: Int) {
            self.capacity = capacity
            base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
            owner = nil
        }

        init(borrowing records: UnsafeRawBufferPointer, count: Int, owner: AnyObject) {
            base = UnsafeMutableRawPointer(mutating: records.baseAddress ?? UnsafeRawPointer(bitPattern: 16)!)
            capacity = records.count
            used = records.count
            self.count = count
            self.owner = owner
        }

        deinit { if owner == nil { base.deallocate() } }

        func copy(capacity: Int) -> Storage {
            let copy = Storage(capacity: capacity)
            copy.base.copyMemory(from: base, byteCount: used)
            copy.used = used
            copy.count = count
            return copy
        }
    }
}
