import APNsCore
import TestSupport
import Testing

@Suite struct FeedbackDecoderTests {
    /// Tuples of every token size class: standard, 1 byte, 20 bytes, the 100-byte maximum.
    static let sample: [FeedbackRecord] = [
        FeedbackSamples.record(1),
        FeedbackSamples.record(2, tokenLength: 1, timestamp: 0),
        FeedbackSamples.record(3, tokenLength: 20, timestamp: .max),
        FeedbackSamples.record(4, tokenLength: 100),
        FeedbackSamples.record(5),
    ]

    static func decodeAll(_ chunks: [[UInt8]]) throws -> [FeedbackRecord] {
        var decoder = FeedbackDecoder()
        var records: [FeedbackRecord] = []
        for chunk in chunks {
            decoder.append(chunk)
            while let record = try decoder.next() { records.append(record) }
        }
        try decoder.finish()
        return records
    }

    @Test func decodesWholeStream() throws {
        let bytes = FeedbackSamples.encode(Self.sample)
        #expect(bytes.count == 38 + 7 + 26 + 106 + 38)
        #expect(try Self.decodeAll([bytes]) == Self.sample)
    }

    @Test func decodesDripFedOneByteAtATime() throws {
        let bytes = FeedbackSamples.encode(Self.sample)
        #expect(try Self.decodeAll(bytes.map { [$0] }) == Self.sample)
    }

    @Test func decodesConcatenatedStreamsSplitAnywhere() throws {
        let bytes = FeedbackSamples.encode(Self.sample)
        let twice = bytes + bytes
        for split in [1, 5, 6, 7, 37, 38, 39, 100, twice.count - 1] {
            let chunks = [Array(twice[..<split]), Array(twice[split...])]
            #expect(try Self.decodeAll(chunks) == Self.sample + Self.sample, "split at \(split)")
        }
    }

    @Test func needsMoreBytesWithoutConsuming() throws {
        let bytes = FeedbackSamples.encode([FeedbackSamples.record(1)])
        var decoder = FeedbackDecoder()
        decoder.append(Array(bytes[..<37]))
        #expect(try decoder.next() == nil)
        #expect(decoder.bufferedByteCount == 37)
        #expect(decoder.consumedByteCount == 0)
        decoder.append([bytes[37]])
        #expect(try decoder.next() == FeedbackSamples.record(1))
        #expect(decoder.consumedByteCount == 38)
    }

    @Test(arguments: [1, 3, 6, 20, 37])
    func truncatedTrailingTupleFailsAfterTheCompleteOnes(keptBytesOfLastTuple: Int) throws {
        let complete = FeedbackSamples.records(3)
        let last = FeedbackSamples.encode([FeedbackSamples.record(99)])
        var decoder = FeedbackDecoder()
        decoder.append(FeedbackSamples.encode(complete) + last[..<keptBytesOfLastTuple])
        var records: [FeedbackRecord] = []
        while let record = try decoder.next() { records.append(record) }
        #expect(records == complete)
        let error = #expect(throws: LegacyAPNsError.self) { try decoder.finish() }
        #expect(error?.code == .malformedFrame)
        #expect(error?.reason == "feedback stream ends inside a tuple: \(keptBytesOfLastTuple) bytes left at byte 114")
    }

    @Test(arguments: [0, 101, 0xFFFF])
    func rejectsImpossibleTokenLengths(length: Int) throws {
        var bytes = FeedbackSamples.encode([FeedbackSamples.record(1)])
        bytes += [0, 0, 0, 1, UInt8(length >> 8), UInt8(length & 0xFF)] + [UInt8](repeating: 7, count: 120)
        var decoder = FeedbackDecoder()
        decoder.append(bytes)
        #expect(try decoder.next() == FeedbackSamples.record(1))
        for _ in 0..<2 {  // nothing consumed: the same error again
            let error = #expect(throws: LegacyAPNsError.self) { try decoder.next() }
            #expect(error?.code == .malformedFrame)
            #expect(error?.reason == "feedback tuple at byte 38 has a token length of \(length) (expected 1...100)")
        }
    }

    @Test func decodeAvailableShowsTheRawBytesOfCompleteTuplesOnly() throws {
        let bytes = FeedbackSamples.encode(Self.sample)
        var decoder = FeedbackDecoder()
        decoder.append(Array(bytes[..<100]))
        var records: [FeedbackRecord] = []
        var raw: [UInt8] = []
        try decoder.decodeAvailable(into: &records) { raw += $0 }
        #expect(records == Array(Self.sample.prefix(3)))
        #expect(raw == Array(bytes[..<71]))
        decoder.append(Array(bytes[100...]))
        try decoder.decodeAvailable(into: &records) { raw += $0 }
        #expect(records == Self.sample)
        #expect(raw == bytes)
        var calls = 0
        try decoder.decodeAvailable(into: &records) { _ in calls += 1 }
        #expect(calls == 0)
    }

    @Test func decodeAvailableStillShowsTuplesBeforeAMalformedOne() throws {
        let good = FeedbackSamples.encode(FeedbackSamples.records(2))
        var decoder = FeedbackDecoder()
        decoder.append(good + [0, 0, 0, 0, 0, 0])
        var records: [FeedbackRecord] = []
        var raw: [UInt8] = []
        #expect(throws: LegacyAPNsError.self) { try decoder.decodeAvailable(into: &records) { raw += $0 } }
        #expect(records == FeedbackSamples.records(2))
        #expect(raw == good)
    }

    /// 100,000 tuples in 7-byte pieces (as the simulator's chunked test sends them): the buffer
    /// stays tiny, so every byte is moved a bounded number of times and decoding is linear.
    @Test func dripFeedingAHundredThousandTuplesKeepsTheBufferSmall() throws {
        let records = FeedbackSamples.records(100_000)
        let bytes = FeedbackSamples.encode(records)
        var decoder = FeedbackDecoder()
        var count = 0
        var largest = 0
        var offset = 0
        try bytes.withUnsafeBytes { raw in
            while offset < raw.count {
                let end = min(raw.count, offset + 7)
                decoder.append(UnsafeRawBufferPointer(rebasing: raw[offset..<end]))
                offset = end
                largest = max(largest, decoder.storageByteCount)
                while try decoder.next() != nil { count += 1 }
            }
        }
        try decoder.finish()
        #expect(count == 100_000)
        #expect(largest <= 2 * 38 + 7)
    }
}

@Suite struct FeedbackRecordTests {
    @Test func timesPrintAsUnsignedUTC() {
        let token = FeedbackSamples.record(1).token
        #expect(FeedbackRecord(timestamp: 0, token: token).timeISO8601 == "1970-01-01T00:00:00Z")
        #expect(FeedbackRecord(timestamp: .max, token: token).timeISO8601 == "2106-02-07T06:28:15Z")
        #expect(
            FeedbackRecord(timestamp: 1_769_860_800, token: token).textLine == "2026-01-31T12:00:00Z \(token.hexString)"
        )
        #expect(
            FeedbackRecord(timestamp: 1_769_860_800, token: token).jsonLine
                == #"{"time":1769860800,"token":"\#(token.hexString)"}"#)
    }

    @Test(arguments: [
        (UInt32?.none, true),  // unknown registration: stop
        (999, true),  // registered before the tuple: stale
        (1000, true),  // same second: not after, stale
        (1001, false),  // registered again after: keep sending
    ])
    func staleOnlyWhenNotRegisteredAfterTheTuple(lastRegistration: UInt32?, stale: Bool) {
        let record = FeedbackRecord(timestamp: 1000, token: FeedbackSamples.record(1).token)
        #expect(record.meansStopSending(lastRegistration: lastRegistration) == stale)
    }

    @Test func batchRuleUsesEachTokensLatestTupleAndListsTokensOnce() {
        let a = FeedbackSamples.record(1).token
        let b = FeedbackSamples.record(2).token
        let c = FeedbackSamples.record(3).token
        let records = [
            FeedbackRecord(timestamp: 100, token: a),
            FeedbackRecord(timestamp: 100, token: b),
            FeedbackRecord(timestamp: 300, token: a),  // a: registered at 200, but listed again at 300
            FeedbackRecord(timestamp: 100, token: c),
        ]
        let registrations: [DeviceToken: UInt32] = [a: 200, b: 200]
        #expect(records.tokensToStopSending { registrations[$0] } == [a, c])
    }
}
