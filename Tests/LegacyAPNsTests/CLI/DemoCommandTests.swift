import TestSupport
import Testing

@Suite struct DemoCommandTests {
    @Test func demoNarratesAcceptanceRejectionResendAndFeedbackAndExits0() throws {
        let result = try CLIRunner.runBinary(
            ["demo"], directory: FrameFixtures.directory.deletingLastPathComponent().deletingLastPathComponent())
        #expect(result.status == 0, "\(result.stderr)")
        let output = result.output
        #expect(output.contains("What it receives is on its inbox page at http://127.0.0.1:"))
        #expect(output.contains("rejected  #3 token 0000000000000000...: status 8 (invalid token)"))
        #expect(output.contains("the gateway discarded everything after id 3 and closed: resending 3"))
        #expect(output.contains("Result: 5 accepted, 1 rejected, 0 unconfirmed, 3 resent, 0 possible duplicates"))
        #expect(output.contains("The gateway recorded 5 notifications, each once."))
        #expect(
            output.contains("2026-01-31T12:00:00Z 00000000000000000000000000000000000000000000000000000000000000bd"))
        // The migration: the same sender through the bridge to the local HTTP/2 APNs.
        #expect(output.contains("5. The road on: Apple switched the binary gateway off on 2021-03-31."))
        #expect(output.contains("with a provider token signed with the .p8 key AuthKey_ABC123DEFG.p8"))
        #expect(output.contains("The bridge turned HTTP/2's 400 BadDeviceToken into status 8 for #3. Of the 3 resent,"))
        #expect(output.contains("Result: 5 accepted, 1 rejected, 0 unconfirmed. HTTP/2 APNs received 4, each once;"))
        #expect(output.contains("2026-02-02T00:00:00Z " + String(repeating: "74", count: 30) + "0006"))
        #expect(output.contains("Done: every notification has a verdict"))
        #expect(result.stderr.isEmpty)
    }

    @Test func demoScalesToMoreNotifications() async {
        let result = await CLIRunner.run(["demo", "--count", "500"])
        #expect(result.status == 0)
        #expect(result.output.contains("Result: 499 accepted, 1 rejected, 0 unconfirmed"))
        #expect(
            result.output.contains(
                "Result: 499 accepted, 1 rejected, 0 unconfirmed. HTTP/2 APNs received 498, each once;"))
    }
}
