import APNsCore
import Foundation
import TestSupport
import Testing

/// The inbox page in a real browser: headless Chromium (Debian's `chromium`) loads it against a
/// running `serve --inbox`, and the DOM it prints after the page's scripts ran is read.
@Suite(.serialized) struct InboxBrowserTests {
    /// `chromium --headless --dump-dom URL`: the DOM after the scripts ran (Chromium prints it
    /// when its `--timeout` of virtual waiting is over).
    static func dumpDOM(_ chromium: URL, _ url: String, wait milliseconds: Int = 5000) throws -> String {
        try CLIRunner.runProcess(chromium, Self.flags + ["--timeout=\(milliseconds)", "--dump-dom", url]).output
    }

    static let flags = [
        "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
        "--user-data-dir=" + NSTemporaryDirectory() + "inbox-chromium-\(getpid())",
    ]

    static func count(_ text: String, in dom: String) -> Int {
        dom.components(separatedBy: text).count - 1
    }

    @Test func thePageShowsWhatArrivedAsTextNeverAsMarkup() async throws {
        guard let chromium = ExternalProgram.chromium.locate() else { return }
        let server = try ChildProcess(["serve", "--port", "0", "--no-feedback", "--quiet", "--inbox", "127.0.0.1:0"])
        defer { _ = server.interruptAndWait() }
        let listening = try #require(server.waitForLine { $0.hasPrefix("listening on ") }, "\(server.stderr)")
        let gateway = String(listening.dropFirst("listening on ".count))
        let base = try InboxCommandTests.inboxURL(server)
        let scratch = try ScratchDirectory()

        // A hostile alert, a silent push and a Live Activity update.
        let hostile =
            #"{"aps":{"alert":{"title":"<img src=x onerror=\"document.title='pwned'\">","#
            + #""subtitle":"</script><script>document.title='pwned'</script>","body":"<b>bold</b> & more"},"#
            + #""badge":7,"sound":"chime.caf"}}"#
        let lines = [
            #"{"token":"\#(String(repeating: "ab", count: 32))","payload":\#(hostile)}"#,
            #"{"token":"\#(String(repeating: "cd", count: 32))","payload":{"aps":{"content-available":1}}}"#,
            #"{"token":"\#(String(repeating: "ef", count: 32))","payload":{"aps":{"event":"update","#
                + #""timestamp":1700000000,"content-state":{"score":"2 : 1"}}}}"#,
        ]
        let input = try scratch.write(Array((lines.joined(separator: "\n") + "\n").utf8), named: "in.jsonl")
        let sent = await BridgeCommandTests.sender(["send", "--gateway", gateway, "--input", input])
        #expect(sent.status == 0, "\(sent.stderr)")

        let dom = try Self.dumpDOM(chromium, base + "/")
        #expect(Self.count("<li ", in: dom) == 3, "\(dom)")
        // What the sender wrote is shown as text: escaped in the DOM, never an element, never run.
        #expect(dom.contains("<title>legacy-push inbox</title>"), "\(dom)")
        #expect(!dom.contains("pwned</title>"))
        #expect(!dom.contains("<img"), "\(dom)")
        #expect(!dom.contains("<b>bold"), "\(dom)")
        #expect(dom.contains(#"<div class="title">&lt;img src=x onerror="document.title='pwned'"&gt;</div>"#), "\(dom)")
        #expect(dom.contains("&lt;/script&gt;&lt;script&gt;document.title='pwned'&lt;/script&gt;"))
        #expect(dom.contains("&lt;b&gt;bold&lt;/b&gt; &amp; more"))
        #expect(dom.contains("badge 7"))
        #expect(dom.contains("sound chime.caf"))
        #expect(dom.contains("silent push (content-available)"))
        #expect(dom.contains("Live Activity update"))
        #expect(dom.contains("&quot;score&quot;: &quot;2 : 1&quot;") || dom.contains(#""score": "2 : 1""#))

        // The screenshot the README shows is made the same way.
        let png = scratch.file("inbox.png")
        _ = try CLIRunner.runProcess(
            chromium, Self.flags + ["--timeout=3000", "--window-size=1100,900", "--screenshot=\(png)", base + "/"])
        let bytes = try Data(contentsOf: URL(fileURLWithPath: png))
        #expect(bytes.prefix(4) == Data([0x89, 0x50, 0x4E, 0x47]))
    }
}
