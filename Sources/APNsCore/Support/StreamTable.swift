/// A map from HTTP/2 stream identifiers to values, for the streams of one connection.
///
/// A `Dictionary<Int32, Value>` hashes every key with SipHash; here the slot is the identifier
/// itself (a client's streams are 1, 3, 5, ...: `id >> 1` puts consecutive streams in consecutive
/// slots) in a power-of-two table kept at most half full, with Robin Hood linear probing: along a
/// run, entries stay in the order of their home slots, so a lookup stops as soon as it is further
/// from home than the entry it meets, and a removal shifts back only the entries displaced behind
/// it (a plain backward shift walked the whole run: a window of 1,000 streams in flight is one run
/// of 1,000 entries each at home). Lookups, insertions and removals hash nothing.
///
/// Identifiers must be positive (stream 0 is the connection; 0 marks an empty slot).
package struct StreamTable<Value>: Sequence {
    // Inlinable throughout: a client module (HTTP2Client) then gets it specialized for its value
    // type, not generic calls that look the table's metadata up at run time.
    @usableFromInline var keys: [Int32]
    @usableFromInline var values: [Value?]
    @usableFromInline var mask: Int
    @usableFromInline var storedCount = 0

    @inlinable package var count: Int { storedCount }

    /// A table with room for `minimumCapacity` streams before it grows.
    @inlinable package init(minimumCapacity: Int = 8) {
        var size = 16
        while size < 2 * Swift.max(1, minimumCapacity) { size *= 2 }
        keys = [Int32](repeating: 0, count: size)
        values = [Value?](repeating: nil, count: size)
        mask = size - 1
    }

    @inlinable package var isEmpty: Bool { storedCount == 0 }

    @inlinable @inline(__always)
    func home(_ key: Int32) -> Int { Int(UInt32(bitPattern: key) >> 1) & mask }

    /// How far the entry in `index` sits from its home slot.
    @inlinable @inline(__always)
    func distance(at index: Int) -> Int { (index - home(keys[index])) & mask }

    /// The slot holding `key`, or nil.
    @inlinable @inline(__always)
    func slot(of key: Int32) -> Int? {
        var index = home(key)
        var travelled = 0
        while true {
            let found = keys[index]
            if found == key { return index }
            // An empty slot, or an entry nearer its home than `key` would be: `key` is absent.
            if found == 0 || distance(at: index) < travelled { return nil }
            index = (index + 1) & mask
            travelled += 1
        }
    }

    @inlinable package subscript(key: Int32) -> Value? {
        get { slot(of: key).flatMap { values[$0] } }
        set {
            if let newValue {
                insert(newValue, for: key)
            } else {
                _ = removeValue(forKey: key)
            }
        }
    }

    @inlinable package func contains(_ key: Int32) -> Bool { slot(of: key) != nil }

    /// Changes the value of `key` in place, if there is one; returns whether there was.
    @inlinable @discardableResult
    package mutating func update(_ key: Int32, _ body: (inout Value) -> Void) -> Bool {
        guard let index = slot(of: key) else { return false }
        body(&values[index]!)
        return true
    }

    @inlinable mutating func insert(_ value: Value, for key: Int32) {
        precondition(key > 0, "stream identifiers are positive")
        if let index = slot(of: key) {
            values[index] = value
            return
        }
        if 2 * (count + 1) > keys.count { grow() }
        var carriedKey = key
        var carriedValue: Value? = value
        var index = home(key)
        var travelled = 0
        while keys[index] != 0 {
            // Robin Hood: an entry nearer its home gives up its slot and moves on instead.
            let resident = distance(at: index)
            if resident < travelled {
                swap(&carriedKey, &keys[index])
                swap(&carriedValue, &values[index])
                travelled = resident
            }
            index = (index + 1) & mask
            travelled += 1
        }
        keys[index] = carriedKey
        values[index] = carriedValue
        storedCount += 1
    }

    @inlinable @discardableResult
    package mutating func removeValue(forKey key: Int32) -> Value? {
        guard var hole = slot(of: key) else { return nil }
        let removed = values[hole].take()
        storedCount -= 1
        // Backward shift: the displaced entries after the hole move one slot nearer home; the
        // first empty slot or entry at its home ends the run of displaced ones.
        var next = (hole + 1) & mask
        while keys[next] != 0, distance(at: next) > 0 {
            keys[hole] = keys[next]
            values[hole] = values[next].take()
            hole = next
            next = (next + 1) & mask
        }
        keys[hole] = 0
        return removed
    }

    @inlinable package mutating func removeAll() {
        guard count > 0 else { return }
        for index in keys.indices where keys[index] != 0 {
            keys[index] = 0
            values[index] = nil
        }
        storedCount = 0
    }

    @inlinable mutating func grow() {
        let oldKeys = keys
        var oldValues = values
        keys = [Int32](repeating: 0, count: oldKeys.count * 2)
        values = [Value?](repeating: nil, count: oldKeys.count * 2)
        mask = keys.count - 1
        storedCount = 0
        for index in oldKeys.indices where oldKeys[index] != 0 {
            insert(oldValues[index].take()!, for: oldKeys[index])
        }
    }

    /// The stream identifiers, in no particular order.
    package var streams: [Int32] { keys.filter { $0 != 0 } }

    package struct Iterator: IteratorProtocol {
        @usableFromInline let table: StreamTable
        @usableFromInline var index = 0

        @inlinable init(table: StreamTable) { self.table = table }

        @inlinable package mutating func next() -> (key: Int32, value: Value)? {
            while index < table.keys.count {
                defer { index += 1 }
                let key = table.keys[index]
                if key != 0 { return (key, table.values[index]!) }
            }
            return nil
        }
    }

    @inlinable package func makeIterator() -> Iterator { Iterator(table: self) }
}

extension StreamTable: Sendable where Value: Sendable {}

extension StreamTable: Equatable where Value: Equatable {
    /// The same streams with the same values (wherever they sit in the table).
    package static func == (lhs: StreamTable, rhs: StreamTable) -> Bool {
        lhs.count == rhs.count && lhs.allSatisfy { rhs[$0.key] == $0.value }
    }
}

extension StreamTable: Hashable where Value: Hashable {
    package func hash(into hasher: inout Hasher) {
        // Independent of the order in the table, as equality is.
        var combined = 0
        for (key, value) in self {
            var one = Hasher()
            one.combine(key)
            one.combine(value)
            combined ^= one.finalize()
        }
        hasher.combine(count)
        hasher.combine(combined)
    }
}
