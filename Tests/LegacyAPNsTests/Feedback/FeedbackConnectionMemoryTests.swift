import APNsCore
import APNsRuntime
import TestSupport
import Testing

@testable import FeedbackClient

/// The feedback reader's connection shell (``FeedbackConnection``) through its transport seam,
/// against a scripted service in memory: the bytes arrive in random short reads, then the
/// service closes (or fails). No socket, no TLS, no waiting.
@Suite struct FeedbackConnectionMemoryTests {
    /// A feedback service that sends `bytes` in reads of random sizes, then ends as told.
    final class ScriptedService: TransportDialer, Transport {
        enum Ending {
            case close
            case fail(LegacyAPNsError)
        }

        private let bytes: [UInt8]
        private let ending: Ending
        private var offset = 0
        private var random: SplitMix64
        /// Reads that found nothing (every other read waits, as a socket would).
        private var mustWait = false
        let peer = "the scripted feedback service"

        init(_ bytes: [UInt8], ending: Ending = .close, seed: UInt64) {
            self.bytes = bytes
            self.ending = ending
            self.random = SplitMix64(seed: seed)
        }

        func connect(timeout: Double) throws(LegacyAPNsError) -> any Transport { self }

        func read(into buffer: UnsafeMutableRawBufferPointer) -> IOResult {
            if mustWait {
                mustWait = false
                return .wantRead
            }
            mustWait = random.next() % 2 == 0
            guard offset < bytes.count else {
                switch ending {
                case .close: return .closed
                case .fail(let error): return .failed(error)
                }
            }
            let count = Swift.min(buffer.count, bytes.count - offset, 1 + Int(random.next() % 100))
            bytes.withUnsafeBytes {
                buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + count)]))
            }
            offset += count
            return .done(count)
        }

        func write(_ bytes: UnsafeRawBufferPointer) -> IOResult { .done(bytes.count) }
        func wait(for events: Readiness, timeout: Double) -> Bool { true }
        func wait(for events: Readiness, timeout: Double, wake: WakeSignal) -> Bool { true }
        func close() {}
        func closeGently(drainTimeout: Double) {}
    }

    static let context = try! TLSContext.client(TLSConfiguration(identity: nil, trust: .certificates(TestGateway.ca)))

    static func read(_ service: ScriptedService, batchByteLimit: Int = 256 * 1024) -> (
        FeedbackConnection.Outcome, records: [FeedbackRecord], raw: [UInt8]
    ) {
        var settings = FeedbackConnection.Settings(
            endpoint: Endpoint(host: "feedback.push.apple.com", port: 2196), context: context, connectTimeout: 5,
            idleTimeout: 5, firstByteTimeout: nil, readDeadline: nil)
        settings.batchByteLimit = batchByteLimit
        let raw = Locked<[UInt8]>([])
        let connection = FeedbackConnection(
            settings: settings, stop: StopFlag(), rawSink: { bytes in raw.update { $0.append(contentsOf: bytes) } },
            dialer: service)
        var records: [FeedbackRecord] = []
        let outcome = connection.run { batch in
            records.append(contentsOf: batch)
            return true
        }
        return (outcome, records, raw.get())
    }

    @Test func tuplesInShortReadsAreAllDeliveredAndSeenRaw() {
        let records = FeedbackSamples.records(1_000)
        let bytes = FeedbackSamples.encode(records)
        for seed in UInt64(1)...5 {
            let (outcome, received, raw) = Self.read(ScriptedService(bytes, seed: seed), batchByteLimit: 1_000)
            #expect(outcome.failure == nil)
            #expect(received == records)
            #expect(outcome.recordCount == 1_000 && outcome.byteCount == bytes.count)
            #expect(raw == bytes)
        }
    }

    @Test func aCloseInsideATupleKeepsTheCompleteOnesAndSaysWhere() {
        let records = FeedbackSamples.records(10)
        let bytes = Array(FeedbackSamples.encode(records).dropLast(5))
        let (outcome, received, _) = Self.read(ScriptedService(bytes, seed: 3))
        #expect(received == Array(records.prefix(9)))
        #expect(outcome.failure?.code == .malformedFrame)
        #expect(
            outcome.failure?.reason.contains("33 bytes of an incomplete tuple at byte 342 were dropped after 9") == true
        )
    }

    @Test func aFailureAfterSomeTuplesKeepsThemAndReportsIt() {
        let records = FeedbackSamples.records(50)
        let failure = LegacyAPNsError(.connectionFailed, "the scripted feedback service reset the connection")
        let (outcome, received, _) = Self.read(
            ScriptedService(FeedbackSamples.encode(records), ending: .fail(failure), seed: 9))
        #expect(received == records)
        #expect(outcome.failure == failure)
    }
}
