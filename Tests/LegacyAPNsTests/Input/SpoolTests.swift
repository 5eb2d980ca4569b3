import APNsCore
import Foundation
import LegacyAPNs
import TestSupport
import Testing

@testable import APNsInput

/// The spool of `send --input` (#18): frame records in memory up to a budget, then in the file.
/// Wherever the records were kept, the send reads the same records in the same order, in batches
/// of whole records of about ``SpoolFile/batchSize`` bytes.
@Suite struct SpoolTests {
    /// `count` lines of the common shape (every seventh through the full parser: keys in another
    /// order), ~14 MB for 70,000: large enough to be checked in two parts.
    static func input(count: Int, in scratch: ScratchDirectory) throws -> String {
        var text = ""
        text.reserveCapacity(count * 210)
        for index in 1...count {
            let token = String(repeating: "5c", count: 28) + String(format: "%08x", index)
            let pad = String(repeating: "p", count: index % 90)
            let payload = #"{"aps":{"alert":"message \#(index)","badge":\#(index % 100)},"pad":"\#(pad)"}"#
            text +=
                index % 7 == 0
                ? #"{"id":\#(index),"payload":\#(payload),"token":"\#(token)"}"# + "\n"
                : #"{"token":"\#(token)","payload":\#(payload),"id":\#(index)}"# + "\n"
        }
        return try scratch.write(Array(text.utf8), named: "spool-\(count).jsonl")
    }

    /// The batches' records, joined, and each batch's size and count.
    static func read(_ path: String, budget: Int, scratch: ScratchDirectory) async throws -> (
        records: [UInt8], batches: [(bytes: Int, count: Int)], lines: Int
    ) {
        let input = try await JSONLinesInput.open(
            path, validation: .binary(encoder: FrameEncoder(), format: .enhanced), temporaryDirectory: scratch.path,
            memoryBudget: budget)
        var records: [UInt8] = []
        var batches: [(Int, Int)] = []
        for batch in input.frameBatches() {
            records += Array(batch.records)
            var walked = 0
            batch.forEachRecord { _ in walked += 1 }
            #expect(walked == batch.count)
            batches.append((batch.byteCount, batch.count))
        }
        return (records, batches, input.count)
    }

    @Test func recordsInMemoryInTheFileOrBothAreTheSameRecordsInTheSameOrder() async throws {
        let scratch = try ScratchDirectory()
        let count = 70_000
        let path = try Self.input(count: count, in: scratch)
        let inFile = try await Self.read(path, budget: 0, scratch: scratch)
        // One segment per part, then the file; and everything in memory.
        let both = try await Self.read(path, budget: 2 * SpoolFile.Segment.size, scratch: scratch)
        let inMemory = try await Self.read(path, budget: 64 * 1024 * 1024, scratch: scratch)
        #expect(inFile.lines == count)
        #expect(inFile.records.count > 4 * SpoolFile.Segment.size)  // both parts spill past their segment
        for (name, other) in [("both", both), ("memory", inMemory)] {
            #expect(other.lines == count, "\(name)")
            #expect(other.records == inFile.records, "\(name): the records differ")
            #expect(other.batches.map(\.count).reduce(0, +) == count, "\(name)")
        }
        // The records decode to what the lines say, in input order.
        var offset = 0
        var index = 0
        while let size = inMemory.records.withUnsafeBytes({
            FrameRecord.size(ofRecordAt: UnsafeRawBufferPointer(rebasing: $0[offset...]))
        }) {
            index += 1
            let notification = inMemory.records.withUnsafeBytes {
                FrameRecord.Reference(UnsafeRawPointer($0.baseAddress! + offset)).notification
            }
            #expect(notification.token.hexString.hasSuffix(String(format: "%08x", index)))
            #expect(notification.payload.string.contains("message \(index)\""))
            offset += size
        }
        #expect(index == count && offset == inMemory.records.count)
        // Batches of about batchSize bytes (the last of a segment or a part may be shorter; those
        // read from the file end before the record their read cut).
        for batches in [inMemory.batches, both.batches] {
            #expect(batches.allSatisfy { $0.bytes <= SpoolFile.batchSize + 2048 })
            #expect(batches.filter { $0.bytes >= SpoolFile.batchSize - 1024 }.count >= batches.count * 3 / 4)
        }
    }

    /// A batch of records in memory is a view of its segment: appending to it copies the records
    /// first, and the segment lives as long as any batch of it.
    @Test func aBatchOfASegmentKeepsItAndCopiesBeforeItChanges() async throws {
        let scratch = try ScratchDirectory()
        let path = try Self.input(count: 2_000, in: scratch)
        let input = try await JSONLinesInput.open(
            path, validation: .binary(encoder: FrameEncoder(), format: .enhanced), temporaryDirectory: scratch.path,
            memoryBudget: SpoolFile.Segment.size)
        var batches = Array(input.frameBatches())
        let before = batches.map { Array($0.records) }
        var first = batches[0]
        let extra = TestGateway.notification(99_999)
        try first.append(extra)
        #expect(first.count == batches[0].count + 1)
        #expect(Array(batches[0].records) == before[0])  // the segment's records did not change
        #expect(first.notifications.last == extra)
        batches.removeFirst()
        #expect(batches.map { Array($0.records) } == Array(before.dropFirst()))
    }
}
