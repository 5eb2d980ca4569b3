import APNsCore
import APNsCredentials
import APNsRuntime
import Foundation
import GatewaySimulator
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Clients that flood streams, send oversized headers, never read responses, trickle bytes or
/// never finish the handshake: each is cut off (or refused) within the configured limits, on its
/// own thread, while a well-behaved client on another connection is served meanwhile.
@Suite(.serialized) struct ProviderHostileClientTests {
    static let hex = ProviderFixture.hex

    /// A TLS connection with ALPN h2, certificate auth with the universal fixture certificate.
    static func connect(_ endpoint: Endpoint, receiveBuffer: Int32? = nil) throws -> TLSSession {
        let context = try TLSContext.client(
            TLSConfiguration(identity: TestGateway.clientIdentity, trust: .certificates(TestGateway.ca)),
            applicationProtocols: ["h2"])
        let tls = try TLSSession.connect(to: endpoint, context: context, timeout: 10)
        if var size = receiveBuffer {
            setsockopt(tls.socket.descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        return tls
    }

    /// One request as raw frames: HEADERS (HPACK literals, END_HEADERS) and DATA (END_STREAM).
    static func requestFrames(stream: UInt32, extraHeader: (String, Int)? = nil) -> [UInt8] {
        var block: [UInt8] = [0x83, 0x87]  // :method POST, :scheme https (static table)
        let path = Array("/3/device/\(hex)".utf8)
        block += [0x04, UInt8(path.count)] + path  // :path, literal without indexing
        block += [0x01, 9] + Array("localhost".utf8)  // :authority, likewise (nghttp2 wants one)
        func literal(_ name: String, _ value: [UInt8]) {
            block.append(0x00)
            block.append(UInt8(name.utf8.count))
            block += Array(name.utf8)
            // HPACK integer with a 7-bit prefix.
            if value.count < 127 {
                block.append(UInt8(value.count))
            } else {
                block.append(127)
                var rest = value.count - 127
                while rest >= 128 {
                    block.append(UInt8(rest & 0x7F | 0x80))
                    rest >>= 7
                }
                block.append(UInt8(rest))
            }
            block += value
        }
        literal("apns-topic", Array("com.example.legacy".utf8))
        if let (name, size) = extraHeader { literal(name, [UInt8](repeating: UInt8(ascii: "x"), count: size)) }
        var frames: [UInt8] = []
        var offset = 0
        var first = true
        while offset < block.count || first {
            let end = min(block.count, offset + 16_384)
            let last = end == block.count
            frames += RawFrames.frame(
                type: first ? 0x1 : 0x9, flags: last ? 0x4 : 0, stream: stream, payload: Array(block[offset..<end]))
            offset = end
            first = false
        }
        return frames + RawFrames.frame(type: 0x0, flags: 0x1, stream: stream, payload: Array(#"{"aps":{}}"#.utf8))
    }

    /// Writes everything, or as much as the peer takes within `patience` seconds; returns the count.
    @discardableResult
    static func write(_ bytes: [UInt8], to tls: TLSSession, patience: Double = 5) -> Int {
        var offset = 0
        let deadline = Monotonic.now() + patience
        while offset < bytes.count, Monotonic.now() < deadline {
            switch bytes.withUnsafeBytes({ tls.write(UnsafeRawBufferPointer(rebasing: $0[offset...])) }) {
            case .done(let count): offset += count
            case .wantWrite, .wantRead: _ = tls.wait(for: .writable, timeout: 0.05)
            case .closed, .failed: return offset
            }
        }
        return offset
    }

    /// Reads until the peer closes (true) or `timeout` passes (false), collecting the bytes.
    static func readUntilClosed(_ tls: TLSSession, timeout: Double = 10) -> (closed: Bool, bytes: [UInt8]) {
        var collected: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        let deadline = Monotonic.now() + timeout
        while Monotonic.now() < deadline {
            let result = buffer.withUnsafeMutableBytes { tls.read(into: $0, waitingUpTo: deadline - Monotonic.now()) }
            switch result {
            case .done(let count): collected += buffer[0..<count]
            case .closed, .failed: return (true, collected)
            case .wantRead, .wantWrite: continue
            }
        }
        return (false, collected)
    }

    /// Runs blocking client work on a thread of its own (never on the cooperative pool).
    static func blocking<Value: Sendable>(_ body: @escaping @Sendable () throws -> Value) async throws -> Value {
        try await OSThread.run(name: "hostile-client") { Result { try body() } }.get()
    }

    /// What a well-behaved client (curl, certificate auth) got meanwhile: its status code.
    static func wellBehaved(_ fixture: ProviderFixture) throws -> String {
        let result = try Curl.run(
            Curl.universalPEM + [
                "-H", "apns-topic: com.example.legacy", "--data-binary", #"{"aps":{}}"#, "-o", "/dev/null", "-w",
                "%{http_code}", fixture.url(),
            ])
        return result.output.isEmpty ? result.stderr : result.output
    }

    static func cutOffReasons(_ fixture: ProviderFixture) -> [String] {
        fixture.events.get().compactMap { if case .cutOff(_, let reason) = $0 { reason } else { nil } }
    }

    /// Waits (without blocking a thread) until `condition` holds or `timeout` passes.
    static func eventually(timeout: Double = 10, _ condition: () -> Bool) async throws -> Bool {
        let deadline = Monotonic.now() + timeout
        while !condition() {
            if Monotonic.now() > deadline { return false }
            try await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    @Test func aClientFloodingStreamsIsRefusedAndCutOffWhileOthersAreServed() async throws {
        try await withProviderSimulator {
            $0.maximumConcurrentStreams = 100
            $0.excessStreams = .refuse  // RFC 9113's leniency, so the flood reaches the trickle check
            $0.limits.requestTimeout = .seconds(1)
        } _: { fixture in
            let (closed, types, other) = try await Self.blocking {
                let tls = try Self.connect(fixture.endpoint)
                // The preface, then 5000 streams opened and never finished, without reading the
                // server's SETTINGS (limit 100).
                var flood = RawFrames.preface + RawFrames.settings()
                for index in 0..<5000 { flood += Self.requestFrames(stream: UInt32(2 * index + 1)).dropLast(9 + 10) }
                Self.write(flood, to: tls)
                let other = try Self.wellBehaved(fixture)
                let (closed, bytes) = Self.readUntilClosed(tls)
                return (closed, Self.frames(bytes).map(\.type), other)
            }
            #expect(other == "200")
            #expect(closed)
            // Streams beyond the limit are refused (RST_STREAM REFUSED_STREAM), then the client is
            // cut off: its 100 open streams never finish.
            #expect(types.filter { $0 == 0x3 }.count >= 4000, "\(Set(types))")
            #expect(types.last == 0x7)
            #expect(Self.cutOffReasons(fixture).contains { $0.contains("took longer than 1 s to arrive") })
            #expect(fixture.simulator.statistics.accepted == 1)
        }
    }

    @Test func aClientExceedingAnAcknowledgedLimitGetsGoaway() async throws {
        try await withProviderSimulator {
            $0.maximumConcurrentStreams = 2
        } _: { fixture in
            let (closed, types, other) = try await Self.blocking {
                let tls = try Self.connect(fixture.endpoint)
                Self.write(RawFrames.preface + RawFrames.settings() + RawFrames.settings(ack: true), to: tls)
                // The server's SETTINGS (limit 2) acknowledged in advance; then 3 streams left open.
                var opening: [UInt8] = []
                for index in 0..<3 {
                    opening += Self.requestFrames(stream: UInt32(2 * index + 1)).dropLast(9 + 10)  // HEADERS only
                }
                Monotonic.sleep(0.2)
                Self.write(opening, to: tls)
                let (closed, bytes) = Self.readUntilClosed(tls)
                return (closed, RawFrames.types(bytes), try Self.wellBehaved(fixture))
            }
            #expect(closed)
            #expect(types.contains(0x7), "a GOAWAY: \(types)")
            #expect(other == "200")
        }
    }

    /// As APNs: a stream beyond the advertised limit ends the connection with GOAWAY REFUSED_STREAM
    /// "Maximum active streams violated for this endpoint.", whether the client acknowledged the
    /// limit yet or not (nghttp2 alone would refuse the stream of an unacknowledged limit and go on).
    @Test(arguments: [false, true])
    func aStreamBeyondTheLimitEndsTheConnectionAsAPNsDoes(acknowledged: Bool) async throws {
        try await withProviderSimulator {
            $0.maximumConcurrentStreams = 10
        } _: { fixture in
            let (closed, frames, other) = try await Self.blocking {
                let tls = try Self.connect(fixture.endpoint)
                // 11 streams opened (HEADERS only, never finished), the server's SETTINGS
                // acknowledged in advance or not at all.
                var bytes = RawFrames.preface + RawFrames.settings()
                if acknowledged { bytes += RawFrames.settings(ack: true) }
                for index in 0..<11 { bytes += Self.requestFrames(stream: UInt32(2 * index + 1)).dropLast(9 + 10) }
                Self.write(bytes, to: tls)
                let (closed, received) = Self.readUntilClosed(tls)
                return (closed, Self.frames(received), try Self.wellBehaved(fixture))
            }
            #expect(closed)
            let goaways = frames.filter { $0.type == 0x7 }
            let first = try #require(goaways.first, "a GOAWAY: \(frames.map(\.type))")
            // | last-stream-id (32) | error code (32) | debug data |
            #expect(Array(first.payload[0..<8]) == [0, 0, 0, 19, 0, 0, 0, 0x7])  // stream 19, REFUSED_STREAM
            #expect(
                String(decoding: first.payload.dropFirst(8), as: UTF8.self) == ProviderConnection.maximumStreamsViolated
            )
            #expect(goaways.allSatisfy { Array($0.payload[4..<8]) == [0, 0, 0, 0x7] })
            #expect(!frames.contains { $0.type == 0x3 }, "no stream is refused alone: the connection ends")
            #expect(
                Self.cutOffReasons(fixture).contains { $0.contains("stream 21 went beyond the 10 concurrent streams") })
            #expect(other == "200")
        }
    }

    @Test func oversizedHeadersResetTheStreamAndTheConnectionGoesOn() async throws {
        try await withProviderSimulator { fixture in
            let received = try await Self.blocking {
                let tls = try Self.connect(fixture.endpoint)
                var bytes = RawFrames.preface + RawFrames.settings()
                bytes += Self.requestFrames(stream: 1, extraHeader: ("x-junk", 40_000))
                bytes += Self.requestFrames(stream: 3)
                Self.write(bytes, to: tls)
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 64 * 1024)
                let deadline = Monotonic.now() + 10
                while !Self.frames(received).contains(where: { $0.type == 0x1 && $0.stream == 3 }),
                    Monotonic.now() < deadline
                {
                    if case .done(let count) = buffer.withUnsafeMutableBytes({ tls.read(into: $0, waitingUpTo: 0.2) }) {
                        received += buffer[0..<count]
                    }
                }
                tls.close()
                return received
            }
            // RST_STREAM ENHANCE_YOUR_CALM for stream 1, a 200 for stream 3 on the same connection.
            let rst = Self.frames(received).first { $0.type == 0x3 }
            #expect(rst?.stream == 1)
            #expect(rst?.payload == [0, 0, 0, 0xB])
            #expect(fixture.recorder.count == 1)
        }
    }

    @Test func aClientThatNeverReadsItsResponsesIsCutOff() async throws {
        try await withProviderSimulator {
            $0.limits.maximumBufferedOutput = 16 * 1024
            $0.limits.writeTimeout = .seconds(1)
            $0.limits.requestTimeout = .seconds(2)
        } _: { fixture in
            let (other, elapsed) = try await Self.blocking {
                let tls = try Self.connect(fixture.endpoint, receiveBuffer: 4096)
                let start = Monotonic.now()
                // 40 000 requests as fast as the simulator takes them, and not one byte read back:
                // its answers pile up in every buffer between us, its WINDOW_UPDATEs go unseen.
                var bytes = RawFrames.preface + RawFrames.settings()
                for index in 0..<40_000 { bytes += Self.requestFrames(stream: UInt32(2 * index + 1)) }
                Self.write(bytes, to: tls, patience: 4)
                let other = try Self.wellBehaved(fixture)
                // Still connected, still not reading, until the simulator gives up on us.
                while !fixture.events.get().contains(where: {
                    if case .disconnected(1, _, _) = $0 { true } else { false }
                }),
                    Monotonic.now() - start < 15
                {
                    Monotonic.sleep(0.02)
                }
                withExtendedLifetime(tls) {}
                return (other, Monotonic.now() - start)
            }
            #expect(other == "200")
            // Cut off for one of the bounds it hit: answers never taken, a request never finished,
            // or DATA beyond the window it never saw grow (FLOW_CONTROL_ERROR).
            let statistics = fixture.simulator.statistics
            #expect(
                statistics.cutOff + statistics.protocolErrors == 1, "\(statistics) \(fixture.events.get().suffix(3))")
            #expect(elapsed < 12)
        }
    }

    @Test func aClientTricklingARequestIsCutOff() async throws {
        try await withProviderSimulator {
            $0.limits.requestTimeout = .milliseconds(500)
        } _: { fixture in
            let (elapsed, other) = try await Self.blocking {
                let tls = try Self.connect(fixture.endpoint)
                Self.write(RawFrames.preface + RawFrames.settings(), to: tls)
                let start = Monotonic.now()
                for byte in Self.requestFrames(stream: 1) {
                    guard Self.write([byte], to: tls, patience: 1) == 1, Self.cutOffReasons(fixture).isEmpty,
                        Monotonic.now() - start < 10
                    else { break }
                    Monotonic.sleep(0.05)
                }
                let elapsed = Monotonic.now() - start
                return (elapsed, try Self.wellBehaved(fixture))
            }
            #expect(other == "200")
            #expect(Self.cutOffReasons(fixture).contains { $0.contains("trickled bytes") }, "\(fixture.events.get())")
            #expect(elapsed < 5)
            #expect(fixture.recorder.count == 1)  // curl's
        }
    }

    @Test func aClientThatNeverSendsThePrefaceOrHandshakeIsDropped() async throws {
        try await withProviderSimulator {
            $0.limits.handshakeTimeout = .milliseconds(500)
        } _: { fixture in
            let (closed, other) = try await Self.blocking {
                // TLS, then silence: no HTTP/2 preface; and a TCP connection that never starts TLS.
                let silent = try Self.connect(fixture.endpoint)
                let mute = try Socket.connect(host: "127.0.0.1", port: fixture.endpoint.port, timeout: 5)
                let other = try Self.wellBehaved(fixture)
                let closed = Self.readUntilClosed(silent, timeout: 5).closed
                withExtendedLifetime(mute) {}
                return (closed, other)
            }
            #expect(other == "200")
            #expect(closed)
            #expect(Self.cutOffReasons(fixture).contains { $0.contains("no HTTP/2 connection preface") })
            #expect(try await Self.eventually { fixture.simulator.statistics.handshakeFailures == 1 })
        }
    }

    /// Connections that send only the HTTP/2 preface, or nothing after the TLS handshake, hold
    /// every slot: at the limit the one idle longest (or still in its handshake) makes room, and a
    /// new client is served at once.
    @Test func connectionsHoldingOnlyThePrefaceMakeRoomForANewClient() async throws {
        try await withProviderSimulator {
            $0.limits.maximumConnections = 8
            $0.limits.evictableAfter = .zero
        } _: { fixture in
            let other = try await Self.blocking {
                var idle: [TLSSession] = []
                for index in 0..<8 {
                    let tls = try Self.connect(fixture.endpoint)
                    if index % 2 == 0 { _ = Self.write(RawFrames.preface + RawFrames.settings(), to: tls) }
                    idle.append(tls)
                }
                let other = try Self.wellBehaved(fixture)
                withExtendedLifetime(idle) {}
                return other
            }
            #expect(other == "200")
            #expect(
                try await Self.eventually {
                    fixture.events.get().contains { event in
                        switch event {
                        case .cutOff(_, let reason), .handshakeFailed(_, let reason): reason.contains("to make room")
                        default: false
                        }
                    }
                })
        }
    }

    /// A client that sends the preface and then no request is closed at the first-request deadline.
    @Test func aClientSendingOnlyThePrefaceIsClosedAtTheFirstRequestDeadline() async throws {
        try await withProviderSimulator {
            $0.limits.firstRequestTimeout = .milliseconds(500)
        } _: { fixture in
            let closed = try await Self.blocking {
                let tls = try Self.connect(fixture.endpoint)
                _ = Self.write(RawFrames.preface + RawFrames.settings() + RawFrames.settings(ack: true), to: tls)
                return Self.readUntilClosed(tls, timeout: 10).closed
            }
            #expect(closed)
            #expect(Self.cutOffReasons(fixture).contains { $0.contains("no request within") })
        }
    }

    struct Frame {
        var type: UInt8
        var stream: UInt32
        var payload: [UInt8]
    }

    static func frames(_ bytes: [UInt8]) -> [Frame] {
        var frames: [Frame] = []
        var index = 0
        while index + 9 <= bytes.count {
            let length = Int(bytes[index]) << 16 | Int(bytes[index + 1]) << 8 | Int(bytes[index + 2])
            guard index + 9 + length <= bytes.count else { break }
            let stream =
                UInt32(bytes[index + 5]) << 24 | UInt32(bytes[index + 6]) << 16 | UInt32(bytes[index + 7]) << 8
                | UInt32(bytes[index + 8])
            frames.append(
                Frame(
                    type: bytes[index + 3], stream: stream & 0x7FFF_FFFF,
                    payload: Array(bytes[(index + 9)..<(index + 9 + length)])))
            index += 9 + length
        }
        return frames
    }
}
