import Testing

@testable import APNsCore

/// The frame buffer: bytes in order across growth, `removeFirst` keeping the rest, and room given
/// up to a bound of which only what was written counts.
@Suite struct ByteWriterTests {
    @Test func writtenBytesSurviveGrowthAndRemoveFirst() {
        var writer = ByteWriter(capacity: 4)
        writer.writeInteger(UInt32(0x0102_0304))
        writer.writeBytes([5, 6, 7])
        #expect(writer.capacity >= 7)
        #expect(writer.bytes == [1, 2, 3, 4, 5, 6, 7])
        writer.removeFirst(5)
        #expect(writer.bytes == [6, 7])
        writer.clear()
        #expect(writer.isEmpty)
    }

    @Test func roomUpToABoundCountsOnlyWhatWasWritten() {
        var writer = ByteWriter()
        writer.writeBytes([9])
        writer.writeWithUnsafeMutableBytes(upTo: 100) { room in
            #expect(room.count == 100)
            room[0] = 1
            room[1] = 2
            return 2
        }
        writer.writeWithUnsafeMutableBytes(upTo: 10) { _ in 0 }
        writer.writeBytes([3])
        #expect(writer.bytes == [9, 1, 2, 3])
        #expect(writer.capacity >= 101)
    }
}
