/// Notifications counted by the command of their frame (0, 1 or 2): what a binary server (the
/// bridge, the gateway simulator) received, for statistics and metrics.
public struct CommandCounts: Hashable, Sendable {
    /// Command 0 frames (``Command/simple``).
    public var simple = 0
    /// Command 1 frames (``Command/enhanced``).
    public var enhanced = 0
    /// Command 2 frames (``Command/itemized``).
    public var itemized = 0

    /// Zero counts.
    public init() {}

    /// The three together.
    public var total: Int { simple + enhanced + itemized }

    /// Counts `count` notifications of `command` (a command that carries no notification is not
    /// counted).
    public mutating func add(_ command: Command, count: Int = 1) {
        switch command {
        case .simple: simple += count
        case .enhanced: enhanced += count
        case .itemized: itemized += count
        default: break
        }
    }

    /// Adds `other`'s counts.
    public mutating func add(_ other: CommandCounts) {
        simple += other.simple
        enhanced += other.enhanced
        itemized += other.itemized
    }

    /// Each command's byte with its count, 0 to 2 (a metrics label per command).
    public var byCommand: [(command: Command, count: Int)] {
        [(.simple, simple), (.enhanced, enhanced), (.itemized, itemized)]
    }
}
