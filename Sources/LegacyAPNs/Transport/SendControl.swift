import Synchronization

/// What the connection slots of one send share besides their input: whether the send is running,
/// settling (cancelled: prove what is in flight, write nothing more) or abandoned (stop at once,
/// whatever has no verdict is reported unconfirmed), and how many notifications each slot has in
/// flight, for "settling N in flight".
///
/// The slots read the phase once per action (one relaxed atomic load) and publish their count
/// the same way, so a send that is never stopped pays next to nothing for it.
package final class SendControl: Sendable {
    /// Where the send is.
    package enum Phase: Int, Sendable {
        case running = 0
        case settling = 1
        case abandoned = 2
    }

    private let phaseValue = Atomic<Int>(Phase.running.rawValue)
    private let gauges: [Gauge]

    private final class Gauge: Sendable {
        let inFlight = Atomic<Int>(0)
    }

    /// A control for a send over `slots` connection slots.
    package init(slots: Int) {
        gauges = (0..<Swift.max(1, slots)).map { _ in Gauge() }
    }

    /// The current phase.
    package var phase: Phase {
        Phase(rawValue: phaseValue.load(ordering: .relaxed)) ?? .running
    }

    /// Asks every slot to settle (never undoes an abandon).
    package func settle() {
        _ = phaseValue.compareExchange(
            expected: Phase.running.rawValue, desired: Phase.settling.rawValue, ordering: .relaxed)
    }

    /// Asks every slot to stop at once.
    package func abandon() {
        phaseValue.store(Phase.abandoned.rawValue, ordering: .relaxed)
    }

    /// Slot `slot` has `count` notifications written and without a verdict.
    package func publish(slot: Int, inFlight count: Int) {
        guard gauges.indices.contains(slot) else { return }
        gauges[slot].inFlight.store(count, ordering: .relaxed)
    }

    /// Notifications written and without a verdict, over all slots (as last published).
    package var inFlight: Int {
        gauges.reduce(0) { $0 + $1.inFlight.load(ordering: .relaxed) }
    }
}
