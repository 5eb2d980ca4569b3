import APNsCore
import Testing

/// ``StreamTable`` against `Dictionary` as the model: random insertions, replacements, removals
/// and lookups of client and server stream identifiers (including runs that wrap around the
/// table and collide), the same contents after every step.
@Suite struct StreamTableTests {
    @Test(arguments: [1, 7, 2024, 99_991])
    func behavesAsADictionary(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var table = StreamTable<Int>(minimumCapacity: 4)
        var model: [Int32: Int] = [:]
        var nextStream: Int32 = 1
        for step in 0..<20_000 {
            let choice = random.next() % 100
            let live = Array(model.keys)
            switch choice {
            case 0..<45:
                // A new stream: mostly the next client identifier, sometimes a far one (server
                // pushes are even; identifiers 2^k apart share a home slot).
                let stream: Int32
                if random.next() % 10 == 0 {
                    stream = Int32(1 + random.next() % 1_000_000)
                } else {
                    stream = nextStream
                    nextStream += 2
                }
                table[stream] = step
                model[stream] = step
            case 45..<85:
                guard let stream = live.randomElement(using: &random) else { continue }
                #expect(table.removeValue(forKey: stream) == model.removeValue(forKey: stream))
            case 85..<92:
                guard let stream = live.randomElement(using: &random) else { continue }
                #expect(table.update(stream) { $0 += 1 })
                model[stream]! += 1
            case 92..<95:
                let absent = Int32(2_000_000 + random.next() % 1000)
                #expect(table.removeValue(forKey: absent) == nil)
                #expect(!table.update(absent) { _ in })
            case 95..<96:
                table.removeAll()
                model.removeAll()
            default:
                guard let stream = live.randomElement(using: &random) else { continue }
                #expect(table[stream] == model[stream])
                #expect(table.contains(stream))
            }
            #expect(table.count == model.count)
            if step % 500 == 0 || table.count < 20 {
                #expect(Dictionary(uniqueKeysWithValues: table.map { ($0.key, $0.value) }) == model)
                #expect(Set(table.streams) == Set(model.keys))
                for (stream, value) in model { #expect(table[stream] == value) }
            }
        }
    }

    @Test func equalityAndHashIgnoreWhereEntriesSit() {
        var grown = StreamTable<String>(minimumCapacity: 1)
        var sized = StreamTable<String>(minimumCapacity: 64)
        for stream in stride(from: Int32(1), through: 61, by: 2) { grown[stream] = "s\(stream)" }
        for stream in stride(from: Int32(61), through: 1, by: -2) { sized[stream] = "s\(stream)" }
        #expect(grown == sized)
        #expect(grown.hashValue == sized.hashValue)
        sized[3] = "changed"
        #expect(grown != sized)
    }
}
