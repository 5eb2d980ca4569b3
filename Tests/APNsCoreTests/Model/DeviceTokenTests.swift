import APNsCore
import TestSupport
import Testing

@Suite struct DeviceTokenTests {
    let hex = "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad"

    @Test func parsesTheWayIOSPrintsTokens() throws {
        let printed = "<740F4707 BEBCF74F 9B7C25D4 8E335894 5F6AA01D A5DDB387 462C7EAF 61BB78AD>"
        let token = try DeviceToken(hexString: printed)
        #expect(token.hexString == hex)
        #expect(token.count == 32)
        #expect(token == (try DeviceToken(hexString: hex)))
    }

    @Test(arguments: [
        ("74zz", "token has 'z' at position 3, expected hex digits"),
        ("abc", "token has 3 hex digits, expected 64 (32 bytes)"),
        ("", "token is empty, expected 64 hex digits (32 bytes)"),
        (String(repeating: "ab", count: 101), "token has 101 bytes, expected 32 (at most 100 in item frames)"),
        // Issue #14: the length errors say what is expected.
        (String(repeating: "a", count: 63), "token has 63 hex digits, expected 64 (32 bytes)"),
        (
            String(repeating: "a", count: 65),
            "token has 65 hex digits, expected 64 (32 bytes), or an even number up to 200 for item frames"
        ),
        ("<740f 470>", "token has 7 hex digits, expected 64 (32 bytes)"),
    ])
    func rejectsMalformedHexWithAClearReason(input: String, reason: String) {
        #expect(throws: LegacyAPNsError(.invalidToken, reason)) { try DeviceToken(hexString: input) }
    }

    @Test func longTokensUpTo100BytesRoundTrip() throws {
        let long = String(repeating: "0123456789", count: 20)
        let token = try DeviceToken(hexString: long)
        #expect(token.count == 100)
        #expect(token.hexString == long)
        #expect(token.bytes.count == 100)
    }

    @Test func shortTokensCompareByContentAndLength() throws {
        let a = try DeviceToken(bytes: [1, 2, 0])
        let b = try DeviceToken(bytes: [1, 2])
        #expect(a != b)
        #expect(a == (try DeviceToken(bytes: [1, 2, 0])))
        #expect(Set([a, b, a]).count == 2)
    }

    /// Equal tokens hash alike however they were made; a token differing in any one byte, or only
    /// in its length, is another key (long tokens too).
    @Test func equalTokensHashAlikeAndEveryByteCounts() throws {
        let bytes = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 37) }
        let token = try DeviceToken(bytes: bytes)
        let fromHex = try DeviceToken(hexString: token.hexString)
        #expect(token.hashValue == fromHex.hashValue)
        var seen: Set<DeviceToken> = [token]
        for index in bytes.indices {
            var changed = bytes
            changed[index] ^= 0x01
            seen.insert(try DeviceToken(bytes: changed))
        }
        #expect(seen.count == 33)
        #expect(seen.contains(fromHex))
        #expect(!seen.contains(try DeviceToken(bytes: bytes.dropLast())))

        let long = (0..<100).map { UInt8($0) }
        var longTokens: Set<DeviceToken> = [try DeviceToken(bytes: long), try DeviceToken(bytes: long)]
        #expect(longTokens.count == 1)
        longTokens.insert(try DeviceToken(bytes: long.dropLast()))
        var changed = long
        changed[99] = 0xFF
        longTokens.insert(try DeviceToken(bytes: changed))
        #expect(longTokens.count == 3)
    }
}
