import APNsCore
import Testing

/// What a gateway really delivered, checked against what the client reported: nothing accepted
/// was lost, nothing rejected was delivered (unless the report says it may have been), nothing
/// reported not sent was delivered, every notification is in exactly one bucket, and every extra
/// delivery is owned up to as a possible duplicate. Shared by the model tests of the binary state
/// machine and of its connection shell (``check(_:count:sourceLocation:)-(SendReport,_,_)``) and
/// by the HTTP/2 client's in-memory tests against the simulator's connection
/// (``check(_:count:sourceLocation:)-(Buckets,_,_)``, built from a `ProviderSendReport` and its
/// verdict events).
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

    /// A client's report in the ledger's terms: the buckets, by position (1...count).
    package struct Buckets {
        /// Notifications taken from the input.
        package var sent: Int
        /// How many were accepted.
        package var accepted: Int
        /// Which were accepted, when the client names them (the HTTP/2 client's verdict events);
        /// each position once.
        package var acceptedPositions: [Int]?
        /// Rejected ones, and whether an earlier attempt may have been delivered.
        package var rejected: [(position: Int, mayHaveBeenDelivered: Bool)]
        /// Unconfirmed ones: sent and the answer lost (true), or certainly not delivered (false).
        package var unconfirmed: [(position: Int, mayHaveBeenDelivered: Bool)]
        /// Deliveries beyond the first the client owned up to, as a count.
        package var possibleDuplicates: Int
        /// The notifications named possible duplicates, when the client names each one: then every
        /// notification delivered twice must be among them (not only the count must suffice).
        package var namedDuplicates: Set<Int>?

        /// Creates the buckets.
        package init(
            sent: Int, accepted: Int, acceptedPositions: [Int]? = nil,
            rejected: [(position: Int, mayHaveBeenDelivered: Bool)],
            unconfirmed: [(position: Int, mayHaveBeenDelivered: Bool)], possibleDuplicates: Int,
            namedDuplicates: Set<Int>? = nil
        ) {
            self.sent = sent
            self.accepted = accepted
            self.acceptedPositions = acceptedPositions
            self.rejected = rejected
            self.unconfirmed = unconfirmed
            self.possibleDuplicates = possibleDuplicates
            self.namedDuplicates = namedDuplicates
        }
    }

    /// Checks a binary send's `report` for `count` notifications (positions 1...count).
    package func check(_ report: SendReport, count: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        check(
            Buckets(
                sent: report.sent, accepted: report.accepted,
                rejected: report.rejected.map { (Int($0.position), $0.mayHaveBeenDelivered) },
                unconfirmed: report.unconfirmed.map { (Int($0.position), $0.wasWritten) },
                possibleDuplicates: report.possibleDuplicates),
            count: count, sourceLocation: sourceLocation)
    }

    /// Checks what a client reported for `count` notifications (positions 1...count).
    package func check(_ buckets: Buckets, count: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(buckets.sent == count, sourceLocation: sourceLocation)
        let rejected = Set(buckets.rejected.map(\.position))
        let mayHaveBeenDelivered = Set(buckets.rejected.filter(\.mayHaveBeenDelivered).map(\.position))
        let unconfirmed = Set(buckets.unconfirmed.map(\.position))
        let certainlyNotSent = Set(buckets.unconfirmed.filter { !$0.mayHaveBeenDelivered }.map(\.position))
        #expect(
            rejected.count == buckets.rejected.count, "a notification was rejected twice",
            sourceLocation: sourceLocation
        )
        #expect(
            unconfirmed.count == buckets.unconfirmed.count, "a notification was unconfirmed twice",
            sourceLocation: sourceLocation)
        #expect(rejected.isDisjoint(with: unconfirmed), sourceLocation: sourceLocation)
        #expect(buckets.accepted + rejected.count + unconfirmed.count == count, sourceLocation: sourceLocation)
        if let positions = buckets.acceptedPositions {
            let accepted = Set(positions)
            #expect(
                accepted.count == positions.count, "a notification was accepted twice", sourceLocation: sourceLocation)
            #expect(accepted.count == buckets.accepted, sourceLocation: sourceLocation)
            #expect(
                accepted.isDisjoint(with: rejected) && accepted.isDisjoint(with: unconfirmed),
                "a notification is in two buckets", sourceLocation: sourceLocation)
        }
        var extra = 0
        for position in 1...count {
            let times = delivered[position]
            if rejected.contains(position) {
                // Deliveries by connections that closed silently are allowed (and counted below).
                #expect(
                    mayHaveBeenDelivered.contains(position) || times == 0, "rejected #\(position) was delivered",
                    sourceLocation: sourceLocation)
            } else if certainlyNotSent.contains(position) {
                #expect(times == 0, "#\(position), reported not sent, was delivered", sourceLocation: sourceLocation)
            } else if !unconfirmed.contains(position) {
                #expect(times >= 1, "accepted #\(position) was lost", sourceLocation: sourceLocation)
            }
            if times > 1, let named = buckets.namedDuplicates {
                #expect(
                    named.contains(position), "#\(position) was delivered \(times) times, silently",
                    sourceLocation: sourceLocation)
            }
            extra += max(0, times - 1)
        }
        #expect(extra <= buckets.possibleDuplicates, "silent duplicates", sourceLocation: sourceLocation)
        for position in badPositions {
            #expect(rejected.contains(position) || unconfirmed.contains(position), sourceLocation: sourceLocation)
        }
    }
}
