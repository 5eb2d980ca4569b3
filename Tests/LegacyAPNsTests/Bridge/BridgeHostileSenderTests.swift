import APNsCore
import APNsRuntime
import Foundation
import LegacyAPNs
import LegacyBridge
import TestSupport
import Testing

/// The bridge takes bytes from strangers on its gateway port: garbage gets the status Apple's
/// gateway answered, hostile lengths are answered without buffering, and idle or trickling
/// senders are closed; every other sender is served meanwhile, and nothing reaches upstream.
@Suite struct BridgeHostileSenderTests {
    static func connect(_ fixture: BridgeFixture) throws -> TLSSession {
        let context = try TLSContext.client(
            TLSConfiguration(identity: TestGateway.clientIdentity, trust: .certificates(TestGateway.ca)))
        return try TLSSession.connect(to: fixture.endpoints.gateway, context: context, timeout: 5)
    }

    static func healthy(_ fixture: BridgeFixture, from first: Int = 1_000) async throws -> Bool {
        let report = try await fixture.client().send((first..<first + 50).map { TestGateway.notification($0) })
        return report.isCompleteSuccess && report.accepted == 50
    }

    /// A load balancer's health check (a TCP connect and close), a failed handshake and a served
    /// sender each leave nothing behind: the bridge keeps no session once its connection and its
    /// verdicts are over (a probe every 200 ms used to leave a session each, for good).
    @Test func probesAndFailedHandshakesLeaveNoSessionBehind() async throws {
        try await withBridge { fixture in
            for _ in 0..<20 {
                let probe = try Socket.connect(
                    host: fixture.endpoints.gateway.host, port: fixture.endpoints.gateway.port, timeout: 5)
                probe.close()
            }
            let untrusted = try TLSContext.client(TLSConfiguration(identity: nil, trust: .certificates(TestGateway.ca)))
            for _ in 0..<5 {
                // No client certificate: refused in the handshake.
                if let session = try? TLSSession.connect(to: fixture.endpoints.gateway, context: untrusted, timeout: 5)
                {
                    var byte = [UInt8](repeating: 0, count: 1)
                    _ = byte.withUnsafeMutableBytes { session.read(into: $0, waitingUpTo: 2) }
                    session.close()
                }
            }
            #expect(try await Self.healthy(fixture))
            let emptied = await eventually(within: .seconds(20)) { fixture.bridge.registeredSessions == 0 }
            #expect(emptied, "\(fixture.bridge.registeredSessions) sessions still registered")
        }
    }

    @Test func garbageGetsStatus128AndNothingGoesUpstream() async throws {
        try await withBridge { fixture in
            let session = try Self.connect(fixture)
            var garbage: [UInt8] = [0x03]
            var generator = SplitMix64(seed: 17)
            for _ in 0..<2000 { garbage.append(UInt8(truncatingIfNeeded: generator.next())) }
            let answer = SimulatorRobustnessTests.exchange(session, garbage)
            #expect(answer == ErrorResponse(status: .protocolError, identifier: 0).bytes)
            #expect(fixture.deliveries().isEmpty)
            #expect(try await Self.healthy(fixture))
        }
    }

    @Test func aHostileFrameLengthIsAnsweredAtOnce() async throws {
        try await withBridge { fixture in
            let session = try Self.connect(fixture)
            // An item frame claiming 4 GiB, its identifier 42, then a payload item claiming 60,000 bytes.
            var frame: [UInt8] = [0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0x03, 0x00, 0x04, 0x00, 0x00, 0x00, 0x2A]
            frame += [0x02, 0xEA, 0x60]
            let answer = SimulatorRobustnessTests.exchange(session, frame)
            #expect(answer == ErrorResponse(status: .invalidPayloadSize, identifier: 42).bytes)
            #expect(try await Self.healthy(fixture))
        }
    }

    /// A frame header announcing a length the bridge never takes, with none of the bytes it
    /// announces: answered at once (the frame deadline is a minute away), naming the identifier
    /// when it came, and the connection closed.
    @Test(
        arguments: [
            // An item frame of 4 GiB, nothing more.
            ([0x02, 0xFF, 0xFF, 0xFF, 0xFF], ErrorResponse(status: .invalidPayloadSize, identifier: 0)),
            // An item frame of plausible length, identifier 43, a payload item over the bridge's 5120 bytes.
            (
                FrameFixtures.itemFrameHead(length: 5244, identifier: 43, payloadLength: 5150),
                ErrorResponse(status: .invalidPayloadSize, identifier: 43)
            ),
            // An enhanced frame (identifier 7) with a payload length of 6000, and one with a 33-byte token.
            (
                [0x01, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0x20] + [UInt8](repeating: 0xAB, count: 32) + [0x17, 0x70],
                ErrorResponse(status: .invalidPayloadSize, identifier: 7)
            ),
            ([0x01, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0x21], ErrorResponse(status: .invalidTokenSize, identifier: 7)),
        ] as [([UInt8], ErrorResponse)])
    func aFrameLengthTheBridgeNeverTakesIsAnsweredWithoutItsBytes(head: [UInt8], expected: ErrorResponse)
        async throws
    {
        try await withBridge(configure: { $0.frameTimeout = .seconds(60) }) { fixture in
            let session = try Self.connect(fixture)
            let answer = SimulatorRobustnessTests.exchange(session, head, timeout: 10)
            #expect(answer == expected.bytes)
            #expect(fixture.deliveries().isEmpty)
        }
    }

    /// Good frames before a bad one are delivered; the answer names the bad one, the close follows.
    @Test func framesBeforeAMalformedOneAreDeliveredAndItIsNamed() async throws {
        try await withBridge { fixture in
            let session = try Self.connect(fixture)
            var writer = ByteWriter(capacity: 4096)
            for index in 1...5 {
                FrameEncoder.encodeValidated(
                    TestGateway.notification(index), as: .enhanced, identifier: UInt32(index), into: &writer)
            }
            // Identifier 6 with an empty payload: status 4 (missing payload), as Apple answered.
            var bad = TestGateway.notification(6)
            bad.payload = Payload(unvalidatedBytes: [])
            FrameEncoder.encodeValidated(bad, as: .enhanced, identifier: 6, into: &writer)
            let answer = SimulatorRobustnessTests.exchange(session, writer.bytes)
            #expect(answer == ErrorResponse(status: .missingPayload, identifier: 6).bytes)
            #expect(fixture.deliveries().keys.sorted() == [1, 2, 3, 4, 5])
        }
    }

    @Test func tricklingAndIdleSendersAreClosedWhileOthersAreServed() async throws {
        try await withBridge(configure: {
            $0.frameTimeout = .milliseconds(500)
            $0.idleTimeout = .milliseconds(500)
        }) { fixture in
            let idle = try Self.connect(fixture)
            let trickling = try Self.connect(fixture)
            var writer = ByteWriter(capacity: 512)
            FrameEncoder.encodeValidated(TestGateway.notification(1), as: .enhanced, identifier: 1, into: &writer)
            let frame = writer.bytes
            // One byte every 100 ms: the frame would take seconds, longer than frameTimeout.
            let closedTrickle = Task.detached { () -> Bool in
                for byte in frame {
                    let result = [byte].withUnsafeBytes { trickling.write($0) }
                    if case .closed = result { return true }
                    if case .failed = result { return true }
                    usleep(100_000)
                }
                return false
            }
            #expect(try await Self.healthy(fixture))
            #expect(await closedTrickle.value, "the trickling sender was never closed")
            let leftover = SimulatorRobustnessTests.readUntilClosed(idle, timeout: 10)
            #expect(leftover.isEmpty)
            #expect(fixture.deliveries()[1] == nil)
        }
    }

    /// Idle senders cannot lock others out: at the connection limit the one idle longest is
    /// closed to make room, and the new sender is served.
    @Test func atTheLimitAnIdleSenderMakesRoomForANewOne() async throws {
        try await withBridge(configure: {
            $0.maximumConnections = 2
            $0.evictableAfter = .milliseconds(200)
        }) { fixture in
            let idle = try (0..<2).map { _ in try Self.connect(fixture) }
            try await Task.sleep(for: .milliseconds(400))
            #expect(try await Self.healthy(fixture))
            // At least one of the idle ones was closed for it (the client's spare connection may
            // have taken the other).
            let closed = idle.filter { SimulatorRobustnessTests.readUntilClosed($0, timeout: 5).isEmpty }
            #expect(!closed.isEmpty)
            let evictions = fixture.events.get().filter { event in
                if case .senderDisconnected(_, _, let reason) = event { return reason.contains("make room") }
                return false
            }
            #expect(!evictions.isEmpty)
        }
    }
}

/// Connections that hold the bridge's slots without ever becoming senders.
@Suite struct BridgeLockOutTests {
    /// Whether the bridge closed `socket` (end of stream) within `timeout` seconds.
    static func sawClose(_ socket: Socket, within timeout: Double) -> Bool {
        let deadline = Monotonic.now() + timeout
        var byte: UInt8 = 0
        while Monotonic.now() < deadline {
            guard socket.wait(for: .readable, timeout: deadline - Monotonic.now()) else { return false }
            let count = recv(socket.descriptor, &byte, 1, Int32(MSG_DONTWAIT))
            if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) { return true }
        }
        return false
    }

    /// TCP connections that never start TLS hold every slot (and their handshake deadline is a
    /// minute away): the one longest in its handshake makes room for a real sender, who is
    /// served at once.
    @Test func connectionsThatNeverHandshakeMakeRoomForASender() async throws {
        try await withBridge(configure: {
            $0.maximumConnections = 8
            $0.handshakeTimeout = .seconds(60)
            $0.evictableAfter = .seconds(60)
        }) { fixture in
            let port = fixture.endpoints.gateway.port
            // Accepted in order, before the sender's connection: all eight hold a slot when it comes.
            let mute = try (0..<8).map { _ in try Socket.connect(host: "127.0.0.1", port: port, timeout: 5) }
            #expect(try await BridgeHostileSenderTests.healthy(fixture))
            #expect(Self.sawClose(mute[0], within: 5), "the oldest connection in its handshake was not closed")
            let evicted = fixture.events.get().filter { event in
                if case .senderRefused(_, let reason) = event { return reason.contains("to make room") }
                return false
            }
            #expect(!evicted.isEmpty)
            for socket in mute { socket.close() }
        }
    }
}
