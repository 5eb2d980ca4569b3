import Foundation
import GatewaySimulator
import LegacyAPNs
import LegacyBridge
import TestSupport
import Testing

/// A bridge lets go of everything when it goes away (#17): its core is held by the upstream's
/// callbacks (a strong reference, for speed), and that cycle is broken then, so the feedback
/// store's file is closed, whether the bridge ran or not.
@Suite struct BridgeLifetimeTests {
    /// Descriptors of this process open on `path`.
    static func openDescriptors(on path: String) -> Int {
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { entry in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(entry)")) == target
        }.count
    }

    @Test func aBridgeThatGoesAwayClosesItsStoreWhetherItRanOrNot() async throws {
        let scratch = try ScratchDirectory()
        let store = scratch.file("bridge.sqlite")
        try await withProviderSimulator { upstream in
            do {
                let bridge = try Bridge(
                    configuration: BridgeFixture.configuration(upstream: upstream.endpoint, store: store))
                #expect(Self.openDescriptors(on: store) > 0)
                _ = bridge.statistics
            }
            #expect(Self.openDescriptors(on: store) == 0, "a bridge that never started still holds its store")
            try await withBridge(store: store) { fixture in
                let client = try fixture.client()
                let report = await client.send([TestGateway.notification(1)])
                #expect(report.accepted == 1)
                #expect(Self.openDescriptors(on: store) > 0)
            }
            #expect(
                await eventually { Self.openDescriptors(on: store) == 0 }, "a bridge that ran still holds its store")
        }
    }
}
