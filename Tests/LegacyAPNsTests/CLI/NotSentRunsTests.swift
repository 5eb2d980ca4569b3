import Testing

@testable import LegacyPushCLI

/// How a send names what it never handed to the gateway: runs of input lines, and the line to
/// resume from.
@Suite struct NotSentRunsTests {
    @Test func theUntakenTailAndTheNotWrittenBeforeItAreOneRun() {
        let runs = NotSentRuns(notWritten: [7, 8, 9], firstUntaken: 10, total: 20)
        #expect(runs.runs == [7...20])
        #expect(runs.count == 14)
        #expect(runs.resumeFrom == 7)
    }

    @Test func scatteredNotWrittenAreRunsOfTheirOwnAndDoNotMoveTheResumeLine() {
        let runs = NotSentRuns(notWritten: [5, 2, 3], firstUntaken: 11, total: 20)
        #expect(runs.runs == [2...3, 5...5, 11...20])
        #expect(runs.count == 13)
        #expect(runs.resumeFrom == 11)
    }

    @Test func takenWholeAndNeverWrittenStillResumesWhereWritingStopped() {
        // The input was taken whole (two large batches); everything from 5001 on was not written.
        let runs = NotSentRuns(notWritten: Array(5001...50_000), firstUntaken: 50_001, total: 50_000)
        #expect(runs.runs == [5001...50_000])
        #expect(runs.resumeFrom == 5001)
    }

    @Test func nothingAfterTheLastSentOneMeansNoResumeLine() {
        let runs = NotSentRuns(notWritten: [3], firstUntaken: 11, total: 10)
        #expect(runs.runs == [3...3])
        #expect(runs.resumeFrom == nil)
        #expect(NotSentRuns(notWritten: [], firstUntaken: 11, total: 10).count == 0)
    }

    @Test func jsonLinesInputGetsOneEventPerRunAndFlagInputOnePerNotification() {
        let runs = NotSentRuns(notWritten: [2], firstUntaken: 4, total: 5)
        // Lines: position n is line n + 1 (a header line, say).
        let fromFile = runs.events(line: { Int($0) + 1 }, describe: { _ in nil })
        #expect(
            fromFile == [
                #"{"event":"notSent","fromLine":3,"toLine":3,"count":1}"#,
                #"{"event":"notSent","fromLine":5,"toLine":6,"count":2}"#,
            ])
        let fromFlags = runs.events(line: { _ in nil }, describe: { (UInt64($0 * 10), "ab\($0)") })
        #expect(
            fromFlags == [
                #"{"event":"notSent","id":20,"token":"ab2"}"#, #"{"event":"notSent","id":40,"token":"ab4"}"#,
                #"{"event":"notSent","id":50,"token":"ab5"}"#,
            ])
        #expect(runs.summaryLine(line: { Int($0) + 1 }) == "  not sent     3: resume with --from-line 5")
    }
}
