import APNsMetrics
import Foundation
import LegacyAPNs

/// What `--metrics` adds per notification, measured in process, where the machine's other load
/// cannot hide it: the two upstream events the bridge's metrics tap sees for each delivered
/// notification (`.sent`, `.accepted` with its push type and latency) recorded into `PushMetrics`,
/// timed in the thread's own CPU time. The bridge suite sets it against the bridge's CPU per
/// notification with metrics off, from the same invocation.
enum MetricsCost {
    /// Thread CPU seconds per notification of recording `count` notifications' events.
    static func perNotification(count: Int) -> Double {
        let metrics = PushMetrics(version: "benchmark")
        var acceptance = ProviderAcceptance(position: 0, apnsID: APNsID(rawValue: 1), latency: .microseconds(900))
        acceptance.pushType = .alert
        let start = threadCPU()
        for position in 0..<UInt64(count) {
            metrics.record(.sent(connection: 0, position: position, apnsID: acceptance.apnsID))
            acceptance.position = position
            metrics.record(.accepted(connection: 0, acceptance))
        }
        let seconds = threadCPU() - start
        // Read back, so the loop cannot be dropped, and to check it counted every one.
        guard metrics.exposition().contains("legacy_push_upstream_requests_sent_total \(count)\n") else {
            return .nan
        }
        return seconds / Double(count)
    }

    private static func threadCPU() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
