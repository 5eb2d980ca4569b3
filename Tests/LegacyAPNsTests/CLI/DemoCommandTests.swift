import TestSupport
import Testing

@Suite struct DemoCommandTests {
    @Test func demoNarratesAcceptanceRejectionResendAndFeedbackAndExits0() throws {
        let result = try CLIRunner.runBinary(
            ["demo"], directory: FrameFixtures.directory.deletingLastPathComponent().deletingLastPathComponent())
        #expect(result.status == 0, "\(result.stderr)")
        let output = result.output
        #expect(output.contains("rejected  #3 token 0000000000000000...: status 8 (invalid token)"))
        #expect(output.contains("the gateway discarded everything after id 3 and closed: resending 3"))
        #expect(output.contains("Result: 5 accepted, 1 rejected, 0 unconfirmed, 3 resent, 0 possible duplicates"))
        #expect(output.contains("The gateway recorded 5 notifications, each once."))
        #expect(
            output.contains("2026-01-31T12:00:00Z 00000000000000000000000000000000000000000000000000000000000000bd"))
        #expect(output.contains("Done: every notification has a verdict"))
        #expect(result.stderr.isEmpty)
    }

    @Test func demoScalesToMoreNotifications() async {
        let result = await CLIRunner.run(["demo", "--count", "500"])
        #expect(result.status == 0)
        #expect(result.output.contains("Result: 499 accepted, 1 rejected, 0 unconfirmed"))
    }
}
