import APNsCore
import APNsCredentials

/// The requests a connection is receiving, in reusable slots: a slot's head and body buffers
/// keep their storage, so a long connection allocates nothing per request once the slots have
/// grown, and there is no dictionary per stream (one map from stream id to slot, with its
/// capacity reserved, plus a one-entry cache for the stream whose frames are arriving).
///
/// A slot lives from a stream's first HEADERS until its request is complete (or the stream
/// closes): answered, stalled and delayed requests hold no slot. The number of slots is bounded
/// by the concurrent-stream limit nghttp2 enforces.
struct ProviderStreamTable {
    struct Slot {
        var stream: Int32 = 0
        var head = ProviderRequestHead()
        var body: [UInt8] = []
        /// Body bytes received beyond what is kept (a body larger than any push type allows).
        var discarded = 0
        /// When the first HEADERS arrived (monotonic seconds).
        var startedAt = 0.0
    }

    /// The largest body kept: one byte more than any push type allows, so the validator still
    /// answers PayloadTooLarge.
    static let maximumKeptBody = PushType.voipMaximumPayloadSize + 1

    private(set) var slots: [Slot] = []
    private var free: [Int32] = []
    private var byStream: [Int32: Int32] = [:]
    private var cachedStream: Int32 = 0
    private var cachedSlot: Int32 = -1

    init(capacity: Int) {
        byStream.reserveCapacity(min(capacity, 4096))
    }

    /// How many requests are being received.
    var count: Int { byStream.count }

    /// The slot for a new stream (its buffers emptied), or the existing one for trailers.
    mutating func open(_ stream: Int32, now: Double) -> Int32 {
        if let existing = slot(for: stream) { return existing }
        let index: Int32
        if let reused = free.popLast() {
            index = reused
        } else {
            index = Int32(slots.count)
            slots.append(Slot())
        }
        slots.withUnsafeMutableBufferPointer { slots in
            slots[Int(index)].stream = stream
            slots[Int(index)].head.reset()
            slots[Int(index)].body.removeAll(keepingCapacity: true)
            slots[Int(index)].discarded = 0
            slots[Int(index)].startedAt = now
        }
        byStream[stream] = index
        cachedStream = stream
        cachedSlot = index
        return index
    }

    /// The slot receiving `stream`, if any.
    @inline(__always)
    mutating func slot(for stream: Int32) -> Int32? {
        if stream == cachedStream, cachedSlot >= 0 { return cachedSlot }
        guard let index = byStream[stream] else { return nil }
        cachedStream = stream
        cachedSlot = index
        return index
    }

    /// Takes a header field.
    mutating func addHeader(_ index: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        slots.withUnsafeMutableBufferPointer { $0[Int(index)].head.add(name: name, value: value) }
    }

    /// Takes body bytes, keeping at most ``maximumKeptBody``.
    mutating func addBody(_ index: Int32, _ bytes: UnsafeRawBufferPointer) {
        slots.withUnsafeMutableBufferPointer { slots in
            let room = Self.maximumKeptBody - slots[Int(index)].body.count
            if room >= bytes.count {
                slots[Int(index)].body.append(contentsOf: bytes)
            } else {
                if room > 0 { slots[Int(index)].body.append(contentsOf: bytes.prefix(room)) }
                slots[Int(index)].discarded += bytes.count - max(0, room)
            }
        }
    }

    /// Frees the slot of `stream` (its request is complete, or the stream closed).
    mutating func release(_ stream: Int32) {
        guard let index = byStream.removeValue(forKey: stream) else { return }
        if cachedStream == stream { cachedSlot = -1 }
        free.append(index)
    }

    /// The request that has been arriving longest: its stream and when its first HEADERS came.
    var oldest: (stream: Int32, startedAt: Double)? {
        var oldest: (stream: Int32, startedAt: Double)?
        for (stream, index) in byStream {
            let start = slots[Int(index)].startedAt
            if oldest == nil || start < oldest!.startedAt { oldest = (stream, start) }
        }
        return oldest
    }
}
