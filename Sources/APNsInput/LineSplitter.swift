internal import APNsRuntime

/// Splits chunks into lines (without the newline), numbering them from `firstLine`; a partial
/// last line is carried over to the next chunk.
struct LineSplitter {
    private var carry: [UInt8] = []
    /// The number of the last line handed out.
    private(set) var lineNumber: Int

    init(firstLine: Int = 1) { lineNumber = firstLine - 1 }

    mutating func feed(_ chunk: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer, Int) throws -> Void) throws {
        var start = 0
        while let index = Memory.firstIndex(of: 0x0A, in: chunk, from: start) {
            lineNumber += 1
            if carry.isEmpty {
                try body(UnsafeRawBufferPointer(rebasing: chunk[start..<index]), lineNumber)
            } else {
                carry.append(contentsOf: chunk[start..<index])
                try carry.withUnsafeBytes { try body($0, lineNumber) }
                carry.removeAll(keepingCapacity: true)
            }
            start = index + 1
        }
        carry.append(contentsOf: chunk[start..<chunk.count])
    }

    /// Hands out the last line if the input did not end with a newline.
    mutating func finish(_ body: (UnsafeRawBufferPointer, Int) throws -> Void) throws {
        guard !carry.isEmpty else { return }
        lineNumber += 1
        try carry.withUnsafeBytes { try body($0, lineNumber) }
        carry.removeAll()
    }
}
