/// Which input line each notification came from, in memory proportional to the *gaps* (blank
/// lines, skipped lines), not to the input: notification `p` is on line `first + (p - 1)` unless
/// a gap came before it, and only gaps are stored.
///
/// Positions are 1-based, as the send reports number notifications (`SendReport`'s and
/// `ProviderSendReport`'s `position`).
public struct LineIndex: Sendable {
    /// (position, line) wherever the line is not the previous notification's line + 1.
    private var breaks: [(position: Int, line: Int)] = []
    /// Notifications recorded.
    public private(set) var count = 0

    /// Records that the next notification (position `count + 1`) is on `line`.
    /// Creates an empty index.
    public init() {}

    package mutating func append(line: Int) {
        count += 1
        if let last = breaks.last, last.line + (count - last.position) == line { return }
        breaks.append((count, line))
    }

    /// The line of the notification at 1-based `position`.
    public func line(of position: Int) -> Int {
        // The last break at or before `position`.
        var low = 0
        var high = breaks.count
        while low < high {
            let middle = (low + high) / 2
            if breaks[middle].position <= position { low = middle + 1 } else { high = middle }
        }
        guard low > 0 else { return position }
        let last = breaks[low - 1]
        return last.line + (position - last.position)
    }

    /// `self` followed by `other`, whose positions continue after this one's and whose lines
    /// were numbered `lineOffset` too low (it was checked as a separate part of the input).
    package func appending(_ other: LineIndex, lineOffset: Int) -> LineIndex {
        var merged = self
        for entry in other.breaks { merged.breaks.append((entry.position + count, entry.line + lineOffset)) }
        merged.count += other.count
        return merged
    }
}
