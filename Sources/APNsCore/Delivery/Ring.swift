/// A growable FIFO ring buffer with value semantics: O(1) append, remove-first and prepend,
/// O(log n) search by key. The standard library has no deque and outside packages are not
/// available.
///
/// Elements live in a `ManagedBuffer` (no `Optional` per slot, no initialised spare capacity), and
/// the buffer is copied only when a shared ring is mutated (copy on write).
package struct Ring<Element> {
    private final class Storage: ManagedBuffer<Header, Element> {
        deinit {
            withUnsafeMutablePointers { header, elements in
                let header = header.pointee
                for index in 0..<header.count {
                    (elements + Ring.physical(index, head: header.head, capacity: header.capacity)).deinitialize(
                        count: 1)
                }
            }
        }
    }

    struct Header {
        var head: Int
        var count: Int
        var capacity: Int
    }

    private var storage: Storage

    package init(capacity: Int = 16) {
        storage = Self.makeStorage(capacity: Swift.max(1, capacity))
    }

    private static func makeStorage(capacity: Int) -> Storage {
        let buffer = Storage.create(minimumCapacity: capacity) { _ in Header(head: 0, count: 0, capacity: capacity) }
        // The real capacity may be larger than asked; use what was allocated.
        let real = buffer.capacity
        buffer.withUnsafeMutablePointerToHeader { $0.pointee.capacity = real }
        return unsafeDowncast(buffer, to: Storage.self)
    }

    @inline(__always)
    private static func physical(_ index: Int, head: Int, capacity: Int) -> Int {
        let position = head + index
        return position >= capacity ? position - capacity : position
    }

    package var count: Int { header.count }

    /// Elements it holds before it grows.
    package var capacity: Int { header.capacity }

    /// The header, read through its pointer: `ManagedBuffer.header` is a stored class property,
    /// whose every read is a dynamic exclusivity check (one per element on the send's hot path).
    @inline(__always)
    private var header: Header { storage.withUnsafeMutablePointerToHeader { $0.pointee } }

    package var isEmpty: Bool { count == 0 }

    package var first: Element? { count == 0 ? nil : self[0] }

    package var last: Element? { count == 0 ? nil : self[count - 1] }

    package subscript(index: Int) -> Element {
        get {
            precondition(index >= 0 && index < count, "ring index out of range")
            return storage.withUnsafeMutablePointers { header, elements in
                elements[Self.physical(index, head: header.pointee.head, capacity: header.pointee.capacity)]
            }
        }
        set {
            precondition(index >= 0 && index < count, "ring index out of range")
            makeUnique()
            storage.withUnsafeMutablePointers { header, elements in
                elements[Self.physical(index, head: header.pointee.head, capacity: header.pointee.capacity)] = newValue
            }
        }
    }

    /// Changes the last element in place (the ring must not be empty).
    package mutating func modifyLast(_ body: (inout Element) -> Void) {
        precondition(count > 0, "modifyLast on an empty ring")
        makeUnique()
        storage.withUnsafeMutablePointers { header, elements in
            let index = Self.physical(
                header.pointee.count - 1, head: header.pointee.head, capacity: header.pointee.capacity)
            body(&elements[index])
        }
    }

    package mutating func append(_ element: Element) {
        makeUnique(reservingOne: true)
        storage.withUnsafeMutablePointers { header, elements in
            let index = Self.physical(
                header.pointee.count, head: header.pointee.head, capacity: header.pointee.capacity)
            (elements + index).initialize(to: element)
            header.pointee.count += 1
        }
    }

    package mutating func prepend(_ element: Element) {
        makeUnique(reservingOne: true)
        storage.withUnsafeMutablePointers { header, elements in
            let capacity = header.pointee.capacity
            header.pointee.head = header.pointee.head == 0 ? capacity - 1 : header.pointee.head - 1
            (elements + header.pointee.head).initialize(to: element)
            header.pointee.count += 1
        }
    }

    package mutating func removeFirst() -> Element {
        precondition(count > 0, "removeFirst on an empty ring")
        makeUnique()
        return storage.withUnsafeMutablePointers { header, elements in
            let element = (elements + header.pointee.head).move()
            header.pointee.head = header.pointee.head + 1 == header.pointee.capacity ? 0 : header.pointee.head + 1
            header.pointee.count -= 1
            return element
        }
    }

    /// Drops the first `count` elements (at most ``count``) at once.
    package mutating func removeFirst(_ count: Int) {
        precondition(count >= 0 && count <= self.count, "removeFirst(_:) beyond the ring")
        guard count > 0 else { return }
        makeUnique()
        storage.withUnsafeMutablePointers { header, elements in
            let capacity = header.pointee.capacity
            let head = header.pointee.head
            let firstRun = Swift.min(count, capacity - head)
            (elements + head).deinitialize(count: firstRun)
            if count > firstRun { elements.deinitialize(count: count - firstRun) }
            header.pointee.head = Self.physical(count, head: head, capacity: capacity)
            header.pointee.count -= count
        }
    }

    /// The index of the first element whose key is not less than `key` (keys must be ascending).
    package func partitionIndex<Key: Comparable>(of key: Key, by keyOf: (Element) -> Key) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if keyOf(self[middle]) < key { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Copies the storage when it is shared, and doubles it when `reservingOne` and it is full.
    private mutating func makeUnique(reservingOne: Bool = false) {
        let header = self.header
        let full = reservingOne && header.count == header.capacity
        guard full || !isKnownUniquelyReferenced(&storage) else { return }
        let bigger = Self.makeStorage(capacity: full ? header.capacity * 2 : header.capacity)
        let moving = isKnownUniquelyReferenced(&storage)
        storage.withUnsafeMutablePointers { oldHeader, oldElements in
            bigger.withUnsafeMutablePointers { newHeader, newElements in
                for index in 0..<header.count {
                    let source = oldElements + Self.physical(index, head: header.head, capacity: header.capacity)
                    if moving {
                        (newElements + index).moveInitialize(from: source, count: 1)
                    } else {
                        (newElements + index).initialize(to: source.pointee)
                    }
                }
                newHeader.pointee.count = header.count
            }
            if moving { oldHeader.pointee.count = 0 }  // moved out: nothing left to deinitialise
        }
        storage = bigger
    }
}

extension Ring: @unchecked Sendable where Element: Sendable {}
// @unchecked: the storage is only mutated through `makeUnique()`, so a ring shared between
// threads (after being sent) is copied before any write, like an Array.
