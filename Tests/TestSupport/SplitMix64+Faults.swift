import APNsCore

/// The dice of the model gateways and simulated pipes: one seeded generator decides every fault.
extension SplitMix64 {
    /// True with `probability` (from 0 to 1, in millionths); never draws for a probability of 0,
    /// so a fault that is off does not move the sequence.
    package mutating func chance(_ probability: Double) -> Bool {
        probability > 0 && Double(next() % 1_000_000) / 1_000_000 < probability
    }

    /// A number in 0..<`bound` (`bound` at least 1).
    package mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
