import APNsCore
import APNsRuntime
import Testing

/// A server session takes bytes from strangers: whatever they are, it ends with a clear error (and
/// a GOAWAY where one can be sent), never a crash, and hostile patterns stay bounded.
@Suite struct HTTP2SessionHostileInputTests {
    static func server(_ options: HTTP2Session.Options = .init()) throws -> (HTTP2Session, HTTP2Recorder) {
        let recorder = HTTP2Recorder()
        return (try HTTP2Session(role: .server, options: options, delegate: recorder), recorder)
    }

    static func feed(_ session: HTTP2Session, _ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try session.receive($0) }
    }

    @Test func http1RequestIsRefusedForLackOfThePreface() throws {
        let (server, recorder) = try Self.server()
        let request = Array("POST /3/device/abc HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)
        let thrown = #expect(throws: LegacyAPNsError.self) { try Self.feed(server, request) }
        let error = try #require(thrown)
        #expect(error.code == .protocolViolation)
        #expect(
            error.reason
                == "HTTP/2 session failed: the client did not open with the HTTP/2 connection preface (\"PRI * HTTP/2.0\"): it does not speak HTTP/2"
        )
        #expect(!server.wantsRead && !server.wantsWrite)
        // Later bytes get the same answer, and sending is refused the same way.
        #expect(throws: error) { try Self.feed(server, [0, 0, 0]) }
        var output = ByteWriter()
        #expect(throws: error) { try server.send(into: &output) }
        #expect(recorder.events.isEmpty)
    }

    @Test(
        arguments: [
            (
                "a frame announcing 1 MiB",
                RawFrames.settings() + [0x10, 0x00, 0x00, 0x0, 0x0, 0, 0, 0, 1] + [0, 0, 0, 0],
                "too large frame size"
            ),
            ("DATA before SETTINGS", RawFrames.frame(type: 0x0, stream: 1, payload: [1, 2, 3]), "SETTINGS expected"),
            (
                "a PING on a stream",
                RawFrames.settings() + RawFrames.frame(type: 0x6, stream: 1, payload: [UInt8](repeating: 0, count: 8)),
                "PING: stream_id != 0"
            ),
            (
                "an unexpected CONTINUATION",
                RawFrames.settings() + RawFrames.frame(type: 0x9, flags: 0x4, stream: 1, payload: [0x82]),
                "CONTINUATION: unexpected"
            ),
            (
                "a WINDOW_UPDATE of zero", RawFrames.settings() + RawFrames.frame(type: 0x8, payload: [0, 0, 0, 0]),
                "WINDOW_UPDATE: window_size_increment == 0"
            ),
        ] as [(String, [UInt8], String)])
    func brokenFramesAfterThePrefaceEndWithAGoawayNamingTheProblem(
        _ what: String, _ frames: [UInt8], _ why: String
    ) throws {
        let (server, recorder) = try Self.server()
        defer { withExtendedLifetime(recorder) {} }  // the session does not retain its delegate
        let error = #expect(throws: LegacyAPNsError.self) { try Self.feed(server, RawFrames.preface + frames) }
        #expect(error?.code == .protocolViolation)
        #expect(error?.reason.contains(why) == true, "\(what): \(error?.reason ?? "no error")")
        var output = ByteWriter()
        try server.send(into: &output)
        #expect(RawFrames.types(output.bytes).last == 0x7, "\(what): the GOAWAY goes out")
        #expect(!server.wantsRead && !server.wantsWrite)
    }

    @Test func randomBytesNeverCrashAServerSession() throws {
        var generator = SplitMix64(seed: 2024)
        var failures = 0
        for round in 0..<300 {
            let (server, recorder) = try Self.server()
            defer { withExtendedLifetime(recorder) {} }  // the session does not retain its delegate
            let count = Int(generator.next() % 512)
            var bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            if round % 2 == 0 { bytes = RawFrames.preface + RawFrames.settings() + bytes }  // get past the preface
            var output = ByteWriter()
            do {
                // In pieces, as a socket delivers them.
                var offset = 0
                while offset < bytes.count {
                    let end = min(bytes.count, offset + 1 + Int(generator.next() % 64))
                    try bytes[offset..<end].withUnsafeBytes { try server.receive($0) }
                    offset = end
                }
                try server.send(into: &output)
            } catch let error as LegacyAPNsError {
                failures += 1
                #expect(error.code == .protocolViolation)
                #expect(!error.reason.isEmpty)
                try? server.send(into: &output)
            }
        }
        #expect(failures > 250)  // random bytes are almost never HTTP/2
    }

    @Test(arguments: ["SETTINGS", "PING"])
    func answersNobodyReadsAreAFloodAndEndTheSession(_ kind: String) throws {
        var options = HTTP2Session.Options()
        options.maximumBufferedOutput = 256  // the owner is not draining: nghttp2 keeps the rest queued
        options.maximumOutboundAcks = 50
        let (server, recorder) = try Self.server(options)
        defer { withExtendedLifetime(recorder) {} }  // the session does not retain its delegate
        var flood = RawFrames.preface + RawFrames.settings()
        for index in 0..<500 { flood += kind == "PING" ? RawFrames.ping(UInt64(index)) : RawFrames.settings() }
        let error = #expect(throws: LegacyAPNsError.self) { try Self.feed(server, flood) }
        #expect(error?.reason.contains("flooded the connection") == true)
        #expect(!server.wantsRead && !server.wantsWrite)
    }

    @Test func answersThatAreReadKeepTheSessionAliveAndTheOutputBounded() throws {
        var options = HTTP2Session.Options()
        options.maximumBufferedOutput = 4096
        let (server, recorder) = try Self.server(options)
        defer { withExtendedLifetime(recorder) {} }  // the session does not retain its delegate
        try Self.feed(server, RawFrames.preface + RawFrames.settings())
        var output = ByteWriter()
        for round in 0..<50 {
            var frames: [UInt8] = []
            for index in 0..<100 { frames += RawFrames.ping(UInt64(round * 100 + index)) }
            try Self.feed(server, frames)
            output.clear()
            try server.send(into: &output)
            #expect(output.count <= 4096 + 64)
            while server.wantsWrite {
                output.clear()
                try server.send(into: &output)
            }
        }
        #expect(server.wantsRead)
    }

    @Test func tooManySettingsInOneFrameEndTheConnection() throws {
        var options = HTTP2Session.Options()
        options.maximumSettingsEntries = 4
        let (server, recorder) = try Self.server(options)
        defer { withExtendedLifetime(recorder) {} }  // the session does not retain its delegate
        let settings = RawFrames.settings((0..<5).map { _ in (0x3, 100) })
        let error = #expect(throws: LegacyAPNsError.self) { try Self.feed(server, RawFrames.preface + settings) }
        #expect(error?.reason.contains("too many setting entries") == true)
    }

    @Test func headerBlocksSplitIntoEndlessContinuationsEndTheSession() throws {
        let (server, recorder) = try Self.server()
        defer { withExtendedLifetime(recorder) {} }  // the session does not retain its delegate
        // HEADERS without END_HEADERS, then CONTINUATIONs, each with one more literal field.
        var bytes = RawFrames.preface + RawFrames.settings()
        bytes += RawFrames.frame(type: 0x1, stream: 1, payload: [0x82, 0x87, 0x84])
        for _ in 0..<20 {
            bytes += RawFrames.frame(type: 0x9, stream: 1, payload: [0x40, 0x01, 0x78, 0x01, 0x79])
        }
        let error = #expect(throws: LegacyAPNsError.self) { try Self.feed(server, bytes) }
        #expect(error?.reason.contains("CONTINUATION") == true)
    }
}
