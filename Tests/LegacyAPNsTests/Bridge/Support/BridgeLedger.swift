import APNsCore
import GatewaySimulator
import LegacyAPNs
import LegacyBridge
import Testing

/// The ledger of a send through bridges running as processes (the crash and fleet tests): what
/// the simulator delivered, what the sender's report and the bridges' `--json` events named, and
/// per notification whether it was lost or delivered twice without anybody naming it.
struct BridgeLedger {
    let deliveries: [Int: Int]
    let unconfirmed: Set<Int>
    let rejected: Set<Int>
    let namedBySender: Set<Int>
    let namedByBridges: Set<Int>
    /// Good notifications neither delivered nor reported to the sender.
    private(set) var lost: [Int] = []
    /// Notifications delivered more than once that nobody named a possible duplicate.
    private(set) var silent: [Int] = []
    /// Notifications delivered more than once.
    private(set) var twice = 0
    /// Notifications delivered more than once that no bridge named a possible duplicate (the
    /// sender may have).
    private(set) var twiceNotNamedByBridges: [Int] = []

    /// `undeliverable`: notifications that must never be delivered (bad tokens, uninstalled apps);
    /// of those, the `bad` ones must also be reported to the sender.
    init(
        count: Int, accepted: [AcceptedRequest], report: SendReport, logs: [String], undeliverable: Set<Int>,
        bad: Set<Int>
    ) {
        self.init(
            count: count, accepted: accepted, report: report, namedByBridges: Self.namedByBridges(logs),
            undeliverable: undeliverable, bad: bad)
    }

    /// The same ledger for a bridge run in the test process: `events` are its events.
    init(
        count: Int, accepted: [AcceptedRequest], report: SendReport, events: [BridgeEvent], undeliverable: Set<Int>,
        bad: Set<Int>
    ) {
        let named = events.compactMap {
            if case .possibleDuplicate(_, _, let token) = $0 { BridgeFixture.index(of: token) } else { nil }
        }
        self.init(
            count: count, accepted: accepted, report: report, namedByBridges: Set(named),
            undeliverable: undeliverable, bad: bad)
    }

    private init(
        count: Int, accepted: [AcceptedRequest], report: SendReport, namedByBridges: Set<Int>,
        undeliverable: Set<Int>, bad: Set<Int>
    ) {
        var deliveries: [Int: Int] = [:]
        for request in accepted { deliveries[BridgeFixture.index(of: request.request.deviceToken), default: 0] += 1 }
        self.deliveries = deliveries
        unconfirmed = Set(report.unconfirmed.map { BridgeFixture.index(of: $0.notification.token) })
        rejected = Set(report.rejected.map { Int($0.identifier ?? 0) })
        namedBySender = Set(report.possiblyDuplicated.map { BridgeFixture.index(of: $0.token) })
        self.namedByBridges = namedByBridges
        for index in 1...count {
            let times = deliveries[index] ?? 0
            if undeliverable.contains(index) {
                #expect(times == 0, "#\(index) (bad or uninstalled) delivered")
                if bad.contains(index) {
                    #expect(rejected.contains(index) || unconfirmed.contains(index), "bad #\(index) not reported")
                }
                continue
            }
            if times == 0, !unconfirmed.contains(index), !rejected.contains(index) { lost.append(index) }
            if times > 1 {
                twice += 1
                if !namedByBridges.contains(index) { twiceNotNamedByBridges.append(index) }
                if !namedBySender.contains(index), !namedByBridges.contains(index) { silent.append(index) }
            }
        }
    }

    /// The tokens the bridges' `--json` events named as possible duplicates.
    static func namedByBridges(_ lines: [String]) -> Set<Int> {
        var named = Set<Int>()
        for line in lines where line.contains(#""event":"possibleDuplicate""#) {
            guard let range = line.range(of: #""token":""#) else { continue }
            let hex = line[range.upperBound...].prefix(64)
            guard let token = try? DeviceToken(hexString: String(hex)) else { continue }
            named.insert(BridgeFixture.index(of: token))
        }
        return named
    }
}
