import TestSupport
import Testing

@testable import APNsCore

@Suite struct RingTests {
    /// A class element, so leaks and double frees would show up as wrong counts.
    final class Tracked {
        nonisolated(unsafe) static var alive = 0
        let value: Int
        init(_ value: Int) {
            self.value = value
            Tracked.alive += 1
        }
        deinit { Tracked.alive -= 1 }
    }

    @Test func behavesLikeAnArrayThroughGrowthWrapAroundAndPrepends() {
        var ring = Ring<Int>(capacity: 2)
        var model: [Int] = []
        var generator = SplitMix64(seed: 11)
        for step in 0..<5_000 {
            switch generator.next() % 4 {
            case 0, 1:
                ring.append(step)
                model.append(step)
            case 2 where !model.isEmpty:
                #expect(ring.removeFirst() == model.removeFirst())
            default:
                ring.prepend(-step)
                model.insert(-step, at: 0)
            }
            #expect(ring.count == model.count)
        }
        #expect((0..<ring.count).map { ring[$0] } == model)
        #expect(ring.first == model.first)
        #expect(ring.last == model.last)
    }

    @Test func copiesAreIndependent() {
        var original = Ring<Int>(capacity: 4)
        for value in 0..<10 { original.append(value) }
        var copy = original
        copy[0] = 100
        _ = copy.removeFirst()
        copy.append(11)
        #expect((0..<original.count).map { original[$0] } == Array(0..<10))
        #expect((0..<copy.count).map { copy[$0] } == Array(1..<10) + [11])
        copy.modifyLast { $0 = 12 }
        #expect(copy.last == 12)
        #expect(original.last == 9)
    }

    @Test func elementsAreReleasedExactlyOnce() {
        #expect(Tracked.alive == 0)
        do {
            var ring = Ring<Tracked>(capacity: 1)
            for value in 0..<100 { ring.append(Tracked(value)) }
            for _ in 0..<30 { _ = ring.removeFirst() }
            for value in 0..<10 { ring.prepend(Tracked(-value)) }
            let copy = ring
            #expect(Tracked.alive == 80)
            ring.append(Tracked(1000))  // copy on write: the copy keeps its own references
            #expect(Tracked.alive == 81)
            #expect(copy.count == 80)
        }
        #expect(Tracked.alive == 0)
    }

    /// Its own counter, so this test runs alongside the one above.
    final class Counted {
        nonisolated(unsafe) static var alive = 0
        init() { Counted.alive += 1 }
        deinit { Counted.alive -= 1 }
    }

    @Test func removingManyAtOnceIsRemovingThemOneByOneAcrossTheWrap() {
        var random = SplitMix64(seed: 12)
        var ring = Ring<Int>(capacity: 8)
        var model: [Int] = []
        var next = 0
        for _ in 0..<2_000 {
            for _ in 0..<Int(random.next() % 9) {
                ring.append(next)
                model.append(next)
                next += 1
            }
            if random.next() % 4 == 0, let first = model.first {
                ring.prepend(first - 1_000)
                model.insert(first - 1_000, at: 0)
            }
            let count = Int(random.next() % UInt64(model.count + 1))
            ring.removeFirst(count)
            model.removeFirst(count)
            #expect(ring.count == model.count)
            #expect((0..<ring.count).map { ring[$0] } == model)
        }
        #expect(Counted.alive == 0)
        do {
            var counted = Ring<Counted>(capacity: 4)
            for _ in 0..<8 { counted.append(Counted()) }  // grown to 8
            for _ in 0..<3 { _ = counted.removeFirst() }
            for _ in 0..<3 { counted.append(Counted()) }  // full again, wrapped around
            counted.removeFirst(7)  // five up to the end of the storage, two from its start
            #expect(Counted.alive == 1)
            #expect(counted.count == 1)
        }
        #expect(Counted.alive == 0)
    }
}
