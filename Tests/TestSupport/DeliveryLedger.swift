import APNsCore
import Testing

/// What a gateway really delivered, checked against what the client reported: nothing accepted
/// was lost, nothing rejected was delivered (unless the report says it may have been), every
/// notification is in exactly one bucket, and every extra delivery is counted as a possible
/// duplicate. Shared by the model tests of the state machine and of the connection shell.
package struct DeliveryLedger {
    /// How often the gateway delivered each position (index 0 unused).
    package var delivered: [Int]
    /// Positions the gateway always refuses.
    package var badPositions: Set<Int>

    /// Creates a ledger.
    package init(delivered: [Int], badPositions: Set<Int>) {
        self.delivered = delivered
        self.badPositions = badPositions
    }

    /// Checks `report` for a send of `count` notifications (positions 1...count).
    package func check(_ report: SendReport, count: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(report.sent == count, sourceLocation: sourceLocation)
        let rejected = Set(report.rejected.map { Int($0.position) })
        let mayHaveBeenDelivered = Set(report.rejected.filter(\.mayHaveBeenDelivered).map { Int($0.position) })
        let unconfirmed = Set(report.unconfirmed.map { Int($0.position) })
        #expect(
            rejected.count == report.rejected.count, "a notification was rejected twice", sourceLocation: sourceLocation
        )
        #expect(unconfirmed.count == report.unconfirmed.count, sourceLocation: sourceLocation)
        #expect(rejected.isDisjoint(with: unconfirmed), sourceLocation: sourceLocation)
        #expect(report.accepted + rejected.count + unconfirmed.count == count, sourceLocation: sourceLocation)
        var extra = 0
        for position in 1...count {
            let times = delivered[position]
            if rejected.contains(position) {
                // Deliveries by connections that closed silently are allowed (and counted below).
                #expect(
                    mayHaveBeenDelivered.contains(position) || times == 0, "rejected #\(position) was delivered",
                    sourceLocation: sourceLocation)
            } else if !unconfirmed.contains(position) {
                #expect(times >= 1, "accepted #\(position) was lost", sourceLocation: sourceLocation)
            }
            extra += max(0, times - 1)
        }
        #expect(extra <= report.possibleDuplicates, "silent duplicates", sourceLocation: sourceLocation)
        for position in badPositions {
            #expect(rejected.contains(position) || unconfirmed.contains(position), sourceLocation: sourceLocation)
        }
    }
}
