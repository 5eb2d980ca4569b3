import APNsCore
import APNsRuntime
import Testing

@testable import HTTP2Client

/// The shared queue of an HTTP/2 send, without connections.
@Suite struct ProviderWorkQueueTests {
    static func request(_ index: Int) -> ProviderRequest {
        var bytes = [UInt8](repeating: 0x22, count: 32)
        bytes[31] = UInt8(truncatingIfNeeded: index)
        return try! ProviderRequest(
            deviceToken: DeviceToken(bytes: bytes), payload: Payload(unvalidatedBytes: Array(#"{"aps":{}}"#.utf8)),
            topic: "com.example.app")
    }

    /// A connection pausing before it reconnects waits out its pause even with work queued (it
    /// used to return at once and spin for the whole backoff); a stop ends the pause, and so does
    /// the end of the send (nothing left to connect for).
    @Test func aPauseIsNotCutShortByQueuedWorkButByAStopOrTheEnd() async {
        let queue = ProviderWorkQueue(capacity: 100)
        #expect(queue.pushWaiting(contentsOf: [(Self.request(1), 0)], evenIfStopped: false) == 1)
        let start = Monotonic.now()
        #expect(queue.waitForStopOrEnd(timeout: 0.2) == .timedOut)
        #expect(Monotonic.now() - start >= 0.19)
        queue.stop(LegacyAPNsError(.cancelled, "stopped by the test"))
        #expect(queue.waitForStopOrEnd(timeout: 30) == .stopped)

        // Finished with input still waiting to be taken is not over.
        let untaken = ProviderWorkQueue(capacity: 100)
        #expect(untaken.pushWaiting(contentsOf: [(Self.request(3), 0)], evenIfStopped: false) == 1)
        untaken.finish()
        #expect(untaken.waitForStopOrEnd(timeout: 0.05) == .timedOut)

        let finishing = ProviderWorkQueue(capacity: 100)
        #expect(finishing.pushWaiting(contentsOf: [(Self.request(2), 0)], evenIfStopped: false) == 1)
        guard case .entries(let taken) = finishing.take(maximum: 10, now: .zero) else {
            Issue.record("expected the entry")
            return
        }
        finishing.finish()
        #expect(finishing.waitForStopOrEnd(timeout: 0.05) == .timedOut)  // one still has no verdict
        finishing.finalized(taken.count)
        #expect(finishing.waitForStopOrEnd(timeout: 30) == .over)
    }

    /// New work wakes one sleeping connection, the last to sleep, not all of them (the others
    /// would wake for nothing); the next sleeper is woken when the first leaves work over, or
    /// departs (closes) without taking it. A connection that woke for its socket is not counted
    /// as asleep, and the end of the send wakes everyone.
    @Test func newWorkWakesOneSleeperAndTheNextOnlyForWhatIsLeft() {
        let queue = ProviderWorkQueue(capacity: 100)
        let first = WakeSignal()
        let second = WakeSignal()
        #expect(queue.sleep(first))
        #expect(queue.sleep(second))
        #expect(queue.pushWaiting(contentsOf: (1...3).map { (Self.request($0), 0) }, evenIfStopped: false) == 1)
        #expect(second.wait(timeout: 0))
        #expect(!first.wait(timeout: 0))
        guard case .entries(let taken) = queue.take(maximum: 2, now: .zero) else {
            Issue.record("expected entries")
            return
        }
        #expect(taken.map(\.position) == [1, 2])
        #expect(first.wait(timeout: 0))  // one is left: the other sleeper is woken for it
        guard case .entries(let rest) = queue.take(maximum: 2, now: .zero) else {
            Issue.record("expected the last entry")
            return
        }
        #expect(rest.map(\.position) == [3])
        #expect(!first.wait(timeout: 0) && !second.wait(timeout: 0))  // nothing left: nobody else

        // Woken for its socket, a connection is not asleep: work goes to one that is.
        #expect(queue.sleep(first))
        #expect(queue.sleep(second))
        queue.awake(second)
        _ = queue.pushWaiting(Self.request(4))
        #expect(first.wait(timeout: 0))
        #expect(!second.wait(timeout: 0))

        // Woken, but closing instead of taking: the work goes on to the next sleeper.
        #expect(!queue.sleep(second))  // input waits: no sleeping now
        guard case .entries = queue.take(maximum: 10, now: .zero) else {
            Issue.record("expected entry 4")
            return
        }
        #expect(queue.sleep(first))
        #expect(queue.sleep(second))
        _ = queue.pushWaiting(Self.request(5))
        #expect(second.wait(timeout: 0))
        queue.departing(second)
        #expect(first.wait(timeout: 0))

        // The end of the send wakes every sleeper.
        guard case .entries = queue.take(maximum: 10, now: .zero) else {
            Issue.record("expected entry 5")
            return
        }
        #expect(queue.sleep(first))
        #expect(queue.sleep(second))
        queue.finish()
        #expect(first.wait(timeout: 0) && second.wait(timeout: 0))
    }

    /// A batch is taken whole and numbered in order; once stopped, a batch is refused whole,
    /// unless its producer took it for good (then it is numbered and left for the report).
    @Test func batchesAreNumberedInOrderAndRefusedWholeOnceStopped() {
        let queue = ProviderWorkQueue(capacity: 100)
        #expect(
            queue.pushWaiting(contentsOf: (1...3).map { (Self.request($0), UInt64($0)) }, evenIfStopped: false) == 1)
        queue.stop(LegacyAPNsError(.cancelled, "stopped by the test"))
        #expect(queue.pushWaiting(contentsOf: [(Self.request(4), 4)], evenIfStopped: false) == nil)
        #expect(queue.pushed == 3)
        #expect(queue.pushWaiting(contentsOf: [(Self.request(5), 5)], evenIfStopped: true) == nil)
        #expect(queue.pushed == 4)
        let (_, untaken) = queue.leftovers()
        #expect(untaken.map(\.position) == [1, 2, 3, 4])
        #expect(untaken.map(\.tag) == [1, 2, 3, 5])
    }
}
