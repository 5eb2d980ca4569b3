import APNsRuntime
import Foundation
import GatewaySimulator
import TestSupport
import Testing

@testable import APNsCredentials
@testable import LegacyAPNs

#if canImport(Glibc)
    import Glibc
#endif

/// The simulator takes bytes from strangers: garbage, stalls, half handshakes, too many
/// connections. It must answer or drop the offender and keep serving everybody else.
@Suite struct SimulatorRobustnessTests {
    static func tlsConnection(_ gateway: TestGateway) throws -> TLSSession {
        let context = try TLSContext.client(
            TLSConfiguration(identity: TestGateway.clientIdentity, trust: .certificates(TestGateway.ca)))
        return try TLSSession.connect(to: gateway.endpoints.gateway, context: context, timeout: 5)
    }

    /// Writes everything, then reads until the peer closes (or `timeout` passes).
    static func exchange(_ session: TLSSession, _ bytes: [UInt8], timeout: Double = 5) -> [UInt8] {
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { session.write(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            switch result {
            case .done(let count): offset += count
            case .wantRead, .wantWrite: _ = session.wait(for: [.readable, .writable], timeout: 1)
            case .closed, .failed: offset = bytes.count
            }
        }
        return readUntilClosed(session, timeout: timeout)
    }

    static func readUntilClosed(_ session: TLSSession, timeout: Double) -> [UInt8] {
        var received: [UInt8] = []
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
        defer { buffer.deallocate() }
        let deadline = Monotonic.now() + timeout
        while Monotonic.now() < deadline {
            switch session.read(into: buffer) {
            case .done(let count): received += buffer[0..<count]
            case .wantRead, .wantWrite: _ = session.wait(for: .readable, timeout: 0.2)
            case .closed, .failed: return received
            }
        }
        return received
    }

    static func healthy(_ gateway: TestGateway) async throws -> Bool {
        let client = try PushClient(configuration: gateway.clientConfiguration())
        let report = await client.send((1...50).map { TestGateway.notification($0) })
        return report.isCompleteSuccess && report.accepted == 50
    }

    @Test func garbageGetsStatus128AndTheSimulatorKeepsServing() async throws {
        try await withTestGateway { gateway in
            let session = try Self.tlsConnection(gateway)
            var garbage: [UInt8] = [0x03]
            var generator = SplitMix64(seed: 3)
            for _ in 0..<2000 { garbage.append(UInt8(truncatingIfNeeded: generator.next())) }
            let answer = Self.exchange(session, garbage)
            #expect(answer == ErrorResponse(status: .protocolError, identifier: 0).bytes)
            #expect(try await Self.healthy(gateway))
        }
    }

    @Test func aHostileFrameLengthIsAnsweredAtOnceWithoutBuffering() async throws {
        try await withTestGateway { gateway in
            let session = try Self.tlsConnection(gateway)
            // Item frame claiming 4 GiB, then a payload item header claiming 60,000 bytes.
            var frame: [UInt8] = [0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0x03, 0x00, 0x04, 0x00, 0x00, 0x00, 0x2A]
            frame += [0x02, 0xEA, 0x60]
            let answer = Self.exchange(session, frame)
            #expect(answer == ErrorResponse(status: .invalidPayloadSize, identifier: 42).bytes)
            #expect(try await Self.healthy(gateway))
        }
    }

    /// A frame no bytes can make valid (an item frame longer than any, or whose payload item is
    /// over the limit), its bytes never sent: answered at once, not at the frame deadline.
    @Test(
        arguments: [
            ([0x02, 0xFF, 0xFF, 0xFF, 0xFF], ErrorResponse(status: .invalidPayloadSize, identifier: 0)),
            (
                FrameFixtures.itemFrameHead(length: 2172, identifier: 44, payloadLength: 2100),
                ErrorResponse(status: .invalidPayloadSize, identifier: 44)
            ),
        ] as [([UInt8], ErrorResponse)])
    func aFrameNoBytesCanMakeValidIsAnsweredWithoutThem(head: [UInt8], expected: ErrorResponse) async throws {
        try await withTestGateway(configure: { $0.frameTimeout = .seconds(60) }) { gateway in
            let session = try Self.tlsConnection(gateway)
            #expect(Self.exchange(session, head, timeout: 10) == expected.bytes)
            #expect(gateway.recorder.count == 0)
        }
    }

    @Test func aClientStalledMidFrameIsDroppedAfterTheIdleTimeoutWhileOthersAreServed() async throws {
        try await withTestGateway(configure: { $0.idleTimeout = .milliseconds(500) }) { gateway in
            let stalled = try Self.tlsConnection(gateway)
            let half = Array(FrameFixtures.notifications[1].bin.prefix(20))
            _ = half.withUnsafeBytes { stalled.write($0) }
            #expect(try await Self.healthy(gateway))  // served while the other connection stalls
            let answer = Self.readUntilClosed(stalled, timeout: 5)
            #expect(answer.isEmpty)  // closed without a word: half a frame is nothing to answer
            // The event follows the close (bounded wait: a loaded machine reports it a little later).
            let timedOut = { gateway.events.get().contains { if case .idleTimeout = $0 { true } else { false } } }
            let deadline = Monotonic.now() + 5
            while !timedOut(), Monotonic.now() < deadline { usleep(10_000) }
            #expect(timedOut())
        }
    }

    @Test(arguments: [
        Array("GET / HTTP/1.0\r\n\r\n".utf8),  // not TLS at all
        [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03],  // half a ClientHello
        [UInt8](),  // connect and hang up
    ])
    func aBrokenHandshakeDoesNotDisturbOthers(_ bytes: [UInt8]) async throws {
        try await withTestGateway(configure: { $0.handshakeTimeout = .seconds(1) }) { gateway in
            let socket = try Socket.connect(host: "127.0.0.1", port: gateway.endpoints.gateway.port, timeout: 5)
            if !bytes.isEmpty { _ = bytes.withUnsafeBytes { send(socket.descriptor, $0.baseAddress, $0.count, 0) } }
            socket.close()
            #expect(try await Self.healthy(gateway))
            let deadline = Monotonic.now() + 5
            while gateway.simulator.statistics.handshakeFailures < 1, Monotonic.now() < deadline { usleep(10_000) }
            #expect(gateway.simulator.statistics.handshakeFailures == 1)
        }
    }

    @Test func connectionsBeyondTheLimitAreRefusedAndServingResumesAfterwards() async throws {
        try await withTestGateway(configure: { $0.maximumConnections = 1 }) { gateway in
            let holder = try Self.tlsConnection(gateway)
            // The second connection is closed at once (before or during its handshake).
            let context = try TLSContext.client(
                TLSConfiguration(identity: TestGateway.clientIdentity, trust: .certificates(TestGateway.ca)))
            var refused = false
            if let second = try? TLSSession.connect(to: gateway.endpoints.gateway, context: context, timeout: 5) {
                let answer = Self.exchange(second, FrameFixtures.notifications[1].bin, timeout: 2)
                refused = answer.isEmpty
            } else {
                refused = true
            }
            #expect(refused)
            #expect(gateway.events.get().contains { if case .refused = $0 { return true } else { return false } })
            holder.close()
            let deadline = Monotonic.now() + 5
            var served = false
            while !served, Monotonic.now() < deadline { served = try await Self.healthy(gateway) }
            #expect(served)
        }
    }

    @Test func aSimpleFrameWithABadTokenClosesWithoutAnErrorResponseAsApplesDid() async throws {
        try await withTestGateway { gateway in
            let session = try Self.tlsConnection(gateway)
            let bad = FrameFixtures.malformed.first { $0.name == "malformed-simple-token-length-zero" }!.bin
            #expect(Self.exchange(session, bad).isEmpty)
            #expect(gateway.simulator.statistics.rejected == 1)
        }
    }
}
