import Synchronization

/// The things in progress of one kind (a client's sends), each registered while it runs, so that
/// a call from elsewhere (abandon every send) can reach all of them. Thread-safe.
package final class ActiveSet<Element: Sendable>: Sendable {
    private let state = Mutex<(next: UInt64, members: [UInt64: Element])>((0, [:]))

    /// An empty set.
    package init() {}

    /// Adds `element`; returns the key that ``remove(_:)`` takes.
    package func add(_ element: Element) -> UInt64 {
        state.withLock { state in
            state.next += 1
            state.members[state.next] = element
            return state.next
        }
    }

    /// Removes the element added under `key`.
    package func remove(_ key: UInt64) {
        _ = state.withLock { $0.members.removeValue(forKey: key) }
    }

    /// The elements now, in no particular order.
    package var all: [Element] { state.withLock { Array($0.members.values) } }
}
