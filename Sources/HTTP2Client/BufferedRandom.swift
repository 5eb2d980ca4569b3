import APNsCredentials

/// Random words for apns-ids from OpenSSL's secure generator, fetched 512 bytes at a time
/// (`SystemRandomNumberGenerator` made a `getrandom` system call for every 64 bits: two per
/// notification, 6 % of the client's CPU). Not `Sendable`: its owner uses it under its lock.
struct BufferedRandom: RandomNumberGenerator {
    private var words = [UInt64](repeating: 0, count: 64)
    private var index = 64

    mutating func next() -> UInt64 {
        if index == words.count { refill() }
        defer { index += 1 }
        return words[index]
    }

    private mutating func refill() {
        let filled = words.withUnsafeMutableBytes { SecureRandom.fill($0) }
        if !filled {
            // Never hand out zeros: fall back to the kernel, a word at a time.
            var system = SystemRandomNumberGenerator()
            for position in words.indices { words[position] = system.next() }
        }
        index = 0
    }
}
