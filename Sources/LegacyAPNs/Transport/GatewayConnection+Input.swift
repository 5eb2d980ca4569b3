import APNsCore

/// What ``GatewayConnection``'s transport code asks of its delivery machine (the decisions about
/// what to write come from the machine's own `nextAction()`, in the pairing's `run()`).
package protocol SlotMachine {
    /// What the machine keeps of a notification in flight (a notification, or a frame's address).
    associatedtype Item: DeliveryItem
    /// What to do next: one step type for both machines, so the shell has one `run()`.
    mutating func nextStep() -> DeliveryCore<Item>.Step
    var isWriting: Bool { get }
    var pendingBarrier: UInt32? { get }
    var inFlightCount: Int { get }
    var report: SendReport { get }
    mutating func takeEvents() -> [PushEvent]
    mutating func connected()
    mutating func connectFailed(_ error: LegacyAPNsError)
    mutating func inputFinished()
    /// A machine for connection slot `connection`.
    init(configuration: DeliveryStateMachine.Configuration, connection: Int)
    mutating func settle()
    mutating func stop(_ error: LegacyAPNsError)
    mutating func inputStalled() -> Bool
    mutating func received(_ response: ErrorResponse)
    mutating func verdictTimedOut()
    mutating func closed(_ cause: DeliveryStateMachine.CloseCause)
}

extension DeliveryStateMachine: SlotMachine {}
extension FrameDeliveryStateMachine: SlotMachine {}

/// A connection's share of the shared input: what it took and has not yet written.
package protocol SlotInput {
    /// The machine this input feeds (each input is written by one kind).
    associatedtype Machine: SlotMachine
    /// The shared input it takes from.
    associatedtype Source: SlotSource where Source.Input == Self
    /// A connection's share of `source`.
    init(source: Source)
    /// Whether taken notifications wait to be written.
    var hasTaken: Bool { get }
    /// Before taking more: what the machine no longer needs may be let go.
    mutating func prepareToTake(for machine: Machine)
    /// Writes the next taken notifications into `writer` (up to about `settings.writeBatchSize`
    /// bytes), telling the machine each one's position; a notification the gateway would refuse
    /// is handed to the machine as refused instead.
    mutating func writeNew(machine: inout Machine, into writer: inout ByteWriter, settings: GatewayConnectionSettings)
    /// Writes `item` again with `identifier`.
    static func writeAgain(
        _ item: Machine.Item, identifier: UInt32, into writer: inout ByteWriter, settings: GatewayConnectionSettings)
    /// Hands the machine what was taken but never written (the slot stopped early).
    mutating func abandonRest(machine: inout Machine)
    /// Takes more from the shared input, waiting at most `timeout` seconds.
    mutating func take(timeout: Double) -> NotificationSource.TakeResult
    /// No more will be taken by anyone (the slot failed for good).
    func stop()
}

/// Notifications taken from a ``NotificationSource`` in small batches.
package struct NotificationInput: SlotInput {
    package typealias Machine = DeliveryStateMachine
    package typealias Source = NotificationSource
    /// Notifications taken from the shared input at a time.
    static let takeBatchSize = 256

    let source: NotificationSource
    private var items: [(UInt64, PushNotification)] = []
    private var next = 0

    package init(source: NotificationSource) {
        self.source = source
        items.reserveCapacity(Self.takeBatchSize)
    }

    package var hasTaken: Bool { next < items.count }

    /// The next taken notification and its position.
    mutating func pop() -> (UInt64, PushNotification)? {
        guard next < items.count else { return nil }
        defer { next += 1 }
        return items[next]
    }

    package mutating func prepareToTake(for machine: DeliveryStateMachine) {}

    package mutating func writeNew(
        machine: inout DeliveryStateMachine, into writer: inout ByteWriter, settings: GatewayConnectionSettings
    ) {
        guard let (position, notification) = pop() else { return }
        if let status = settings.encoder.gatewayStatus(for: notification, format: settings.format) {
            machine.refused(notification, position: position, status: status)
            return
        }
        let identifier = machine.wroteNew(notification, position: position)
        FrameEncoder.encodeValidated(notification, as: settings.format, identifier: identifier, into: &writer)
    }

    package static func writeAgain(
        _ item: PushNotification, identifier: UInt32, into writer: inout ByteWriter,
        settings: GatewayConnectionSettings
    ) {
        FrameEncoder.encodeValidated(item, as: settings.format, identifier: identifier, into: &writer)
    }

    package mutating func abandonRest(machine: inout DeliveryStateMachine) {
        while let (position, notification) = pop() { machine.abandoned(notification, position: position) }
    }

    package mutating func take(timeout: Double) -> NotificationSource.TakeResult {
        items.removeAll(keepingCapacity: true)
        next = 0
        return source.take(into: &items, maximum: Self.takeBatchSize, timeout: timeout)
    }

    package func stop() { source.stop() }
}

/// Frame batches taken whole from a ``FrameSource``. The batches whose notifications may still
/// be written again (in flight or waiting to be resent: the machine holds their addresses) are
/// kept until the machine no longer needs them.
package struct FrameInput: SlotInput {
    package typealias Machine = FrameDeliveryStateMachine
    package typealias Source = FrameSource
    let source: FrameSource
    /// The batch being written, and how far.
    private var current: FrameBatch?
    private var offset = 0
    /// The position of the next record of `current`.
    private(set) var nextPosition: UInt64 = 0
    /// Batches written whole, each with the position after its last notification.
    private var held = Ring<(batch: FrameBatch, end: UInt64)>(capacity: 64)

    package init(source: FrameSource) { self.source = source }

    package var hasTaken: Bool {
        guard let current else { return false }
        return offset < current.byteCount
    }

    /// The unwritten records of the current batch.
    var pendingRecords: UnsafeRawBufferPointer {
        guard let current else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(rebasing: current.records[offset...])
    }

    /// `count` records (`bytes` bytes) of the current batch were written.
    mutating func advance(count: Int, bytes: Int) {
        offset += bytes
        nextPosition += UInt64(count)
    }

    /// The next unwritten record and its position (for the ones a stopped slot never writes).
    mutating func pop() -> (UInt64, FrameRecord.Reference)? {
        guard let current, offset < current.byteCount else { return nil }
        let record = FrameRecord.Reference(current.records.baseAddress! + offset)
        defer { advance(count: 1, bytes: record.recordSize) }
        return (nextPosition, record)
    }

    /// Moves the written-out current batch to the held ones and lets go of every held batch
    /// entirely before `oldest` (the machine's oldest position without a verdict; nil: none).
    mutating func retireCurrent(keepingFrom oldest: UInt64?) {
        if let current, offset >= current.byteCount {
            held.append((current, nextPosition))
            self.current = nil
        }
        while let first = held.first, oldest.map({ first.end <= $0 }) ?? true {
            _ = held.removeFirst()
        }
    }

    package mutating func prepareToTake(for machine: FrameDeliveryStateMachine) {
        if !hasTaken { retireCurrent(keepingFrom: machine.oldestPending) }
    }

    package mutating func writeNew(
        machine: inout FrameDeliveryStateMachine, into writer: inout ByteWriter, settings: GatewayConnectionSettings
    ) {
        let (count, bytes) = machine.writeNew(
            records: pendingRecords, firstPosition: nextPosition, into: &writer, until: settings.writeBatchSize)
        advance(count: count, bytes: bytes)
    }

    package static func writeAgain(
        _ item: FrameRecord.Reference, identifier: UInt32, into writer: inout ByteWriter,
        settings: GatewayConnectionSettings
    ) {
        writer.writeWithUnsafeMutableBytes(byteCount: item.frameSize) { out in
            item.copyFrame(identifier: identifier, to: out.baseAddress!)
        }
    }

    package mutating func abandonRest(machine: inout FrameDeliveryStateMachine) {
        while let (position, record) = pop() { machine.abandoned(record, position: position) }
    }

    package mutating func take(timeout: Double) -> NotificationSource.TakeResult {
        switch source.take(timeout: timeout) {
        case .taken(let batch, let first):
            if let current, current.byteCount > 0 { held.append((current, nextPosition)) }
            current = batch
            offset = 0
            nextPosition = first
            return .taken
        case .empty:
            return .empty
        case .finished:
            return .finished
        }
    }

    package func stop() { source.stop() }
}
