import APNsCore
import Testing

@testable import HTTP2Client

/// The apns-ids the client makes come from OpenSSL's secure generator in blocks: still version-4
/// UUIDs, and no two alike over many blocks.
@Suite struct BufferedRandomTests {
    @Test func idsAreVersion4AndDistinctAcrossManyRefills() {
        var random = BufferedRandom()
        var seen = Set<APNsID>()
        for _ in 0..<20_000 {
            let id = APNsID.random(using: &random)
            let text = id.description
            #expect(text.count == 36)
            #expect(Array(text)[14] == "4")
            #expect("89ab".contains(Array(text)[19]))
            seen.insert(id)
        }
        #expect(seen.count == 20_000)
    }
}
