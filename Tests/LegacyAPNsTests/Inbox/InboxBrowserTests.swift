import APNsCore
import Foundation
import ProcessHarness
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

    /// The page's event stream in the browser: Chromium loads the page and keeps it open; only
    /// once the inbox counts the browser's stream (`/api/v1/status`) is a notification sent, so it
    /// can reach the page by nothing but the stream. With `--virtual-time-budget`, Chromium's
    /// clock stands still while a request is open, so it prints the DOM only once the stream has
    /// ended: the simulator is stopped when the test has sent everything. The DOM has the late
    /// notification marked as added live (`data-live`), next to the one that was there at load
    /// (unmarked); it went to an offline device, and its change to delivered when the device came
    /// online arrived live too (`data-updated`).
    @Test func aNotificationSentAfterThePageLoadedArrivesLive() throws {
        guard let chromium = ExternalProgram.chromium.locate() else { return }
        let offline = String(repeating: "0f", count: 32)
        let server = try ChildProcess([
            "serve", "--http2", "--port", "0", "--quiet", "--inbox", "127.0.0.1:0", "--offline", offline,
        ])
        defer { _ = server.interruptAndWait() }
        let listening = try #require(server.waitForLine { $0.hasPrefix("listening on ") }, "\(server.stderr)")
        let port = String(listening.dropFirst("listening on 127.0.0.1:".count).prefix { $0.isNumber })
        let base = try InboxCommandTests.inboxURL(server)
        #expect(try InboxDeliveryTests.push(port, String(repeating: "ab", count: 32)).0 == 200)

        let browser = try SpawnedProcess(
            chromium.path,
            Self.flags.map { $0.replacingOccurrences(of: "inbox-chromium-", with: "inbox-chromium-live-") }
                + ["--virtual-time-budget=3000", "--dump-dom", base + "/"])
        defer { if browser.isRunning { browser.send(SIGKILL) } }
        // The page is loaded, its first list drawn, and its stream open.
        let deadline = Date().addingTimeInterval(30)
        var watching = false
        while !watching, Date() < deadline, browser.isRunning {
            watching = try curlStatus(base + "/api/v1/status").body.contains(#""streams":1"#)
            if !watching { Thread.sleep(forTimeInterval: 0.05) }
        }
        try #require(watching, "the browser never opened the stream")
        let (status, unique) = try InboxDeliveryTests.push(port, offline, ["apns-collapse-id: live"])
        #expect(status == 200)
        // Stored first; the device comes online a moment later, and the page hears of it.
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try InboxDeliveryTests.post(base + "/api/v1/devices/\(offline)/online") == "204")
        // The stream looks for changes every 0.2 s; then the simulator goes, and the stream with it.
        Thread.sleep(forTimeInterval: 1)
        _ = server.interruptAndWait()

        _ = browser.waitForExit(timeout: 60)
        let dom = String(decoding: browser.standardOutput, as: UTF8.self)
        #expect(Self.count("<li ", in: dom) == 2, "\(dom)")
        #expect(Self.count(#"data-live="1""#, in: dom) == 1, "\(dom)")
        // The live one is the push to the offline device, delivered once it came online.
        let live = try #require(dom.components(separatedBy: "<li ").first { $0.contains(#"data-live="1""#) })
        #expect(live.contains(offline), "\(live)")
        #expect(live.contains(#"data-fate="delivered""#), "\(live)")
        #expect(live.contains(#"data-updated="1""#), "\(live)")
        #expect(live.contains(try #require(unique)), "\(live)")
        // The one there at load was delivered at once, and never changed.
        let loaded = try #require(dom.components(separatedBy: "<li ").dropFirst().first { !$0.contains("data-live") })
        #expect(loaded.contains(#"data-fate="delivered""#), "\(loaded)")
    }
}
