/// A growable FIFO ring buffer: O(1) append, remove-first and prepend, O(log n) search by key.
/// The standard library has no deque and outside packages are not available.
struct Ring<Element> {
    private var storage: [Element?]
    private var head = 0
    private(set) var count = 0

    init(capacity: Int = 16) {
        storage = Array(repeating: nil, count: Swift.max(1, capacity))
    }

    var isEmpty: Bool { count == 0 }

    var first: Element? { count == 0 ? nil : storage[head] }

    var last: Element? { count == 0 ? nil : storage[physical(count - 1)] }

    subscript(index: Int) -> Element {
        get { storage[physical(index)]! }
        set { storage[physical(index)] = newValue }
    }

    @inline(__always)
    private func physical(_ index: Int) -> Int {
        let position = head + index
        return position >= storage.count ? position - storage.count : position
    }

    /// Changes the last element in place (the ring must not be empty).
    mutating func modifyLast(_ body: (inout Element) -> Void) {
        precondition(count > 0, "modifyLast on an empty ring")
        let index = physical(count - 1)
        var element = storage[index].take()!
        body(&element)
        storage[index] = element
    }

    mutating func append(_ element: Element) {
        if count == storage.count { grow() }
        storage[physical(count)] = element
        count += 1
    }

    mutating func prepend(_ element: Element) {
        if count == storage.count { grow() }
        head = head == 0 ? storage.count - 1 : head - 1
        storage[head] = element
        count += 1
    }

    mutating func removeFirst() -> Element {
        precondition(count > 0, "removeFirst on an empty ring")
        let element = storage[head].take()!
        head = head + 1 == storage.count ? 0 : head + 1
        count -= 1
        return element
    }

    mutating func removeAll() {
        for index in 0..<count { storage[physical(index)] = nil }
        head = 0
        count = 0
    }

    /// The index of the first element whose key is not less than `key` (keys must be ascending).
    func partitionIndex<Key: Comparable>(of key: Key, by keyOf: (Element) -> Key) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if keyOf(self[middle]) < key { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private mutating func grow() {
        var bigger = [Element?](repeating: nil, count: storage.count * 2)
        for index in 0..<count { bigger[index] = storage[physical(index)].take() }
        storage = bigger
        head = 0
    }
}

extension Ring: Sendable where Element: Sendable {}
