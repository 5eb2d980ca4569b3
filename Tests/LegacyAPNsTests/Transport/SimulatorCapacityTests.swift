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

/// Nobody can hold the simulator: idle connections cost no thread and make room at the limit,
/// a handshake has a deadline, and a client trickling bytes is cut by the progress rule, while a
/// real sender is served completely.
@Suite struct SimulatorCapacityTests {
    static func clientContext() throws -> TLSContext {
        try TLSContext.client(
            TLSConfiguration(identity: TestGateway.clientIdentity, trust: .certificates(TestGateway.ca)))
    }

    /// `count` TLS connections that complete the handshake and then send nothing (all but the
    /// first resume its session, so opening them is cheap).
    static func idleConnections(_ count: Int, to gateway: TestGateway) throws -> [TLSSession] {
        let context = try clientContext()
        let first = try TLSSession.connect(to: gateway.endpoints.gateway, context: context, timeout: 10)
        let ticket = first.resumableTicket
        var sessions = [first]
        for _ in 1..<count {
            sessions.append(
                try TLSSession.connect(to: gateway.endpoints.gateway, context: context, timeout: 10, resuming: ticket))
        }
        return sessions
    }

    /// Whether the gateway has closed the connection (reading what is there, without waiting).
    static func isClosed(_ session: TLSSession) -> Bool {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1024, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            switch session.read(into: buffer) {
            case .done: continue
            case .wantRead, .wantWrite: return false
            case .closed, .failed: return true
            }
        }
    }

    /// A client on its own thread that writes one byte of a notification frame every `interval`
    /// seconds (starting over when the frame is done) until the gateway closes the connection or
    /// `limit` seconds pass. Returns the bytes written and whether the gateway closed it.
    static func trickle(to gateway: TestGateway, every interval: Double, for limit: Double) async -> (Int, Bool) {
        let endpoint = gateway.endpoints.gateway
        return await OSThread.run(name: "trickler") {
            guard let context = try? clientContext(),
                let session = try? TLSSession.connect(to: endpoint, context: context, timeout: 10)
            else { return (0, false) }
            let frame = FrameFixtures.notifications[1].bin
            let deadline = Monotonic.now() + limit
            var written = 0
            while Monotonic.now() < deadline {
                let byte = [frame[written % frame.count]]
                guard session.writeAll(byte, timeout: 5) == nil else { return (written, true) }
                written += 1
                // The pace of a trickler; a close wakes the wait early.
                if session.wait(for: .readable, timeout: interval), isClosed(session) { return (written, true) }
            }
            return (written, false)
        }
    }

    static func send(_ count: Int, to gateway: TestGateway) async throws -> SendReport {
        let client = try PushClient(configuration: gateway.clientConfiguration())
        return await client.send((1...count).map { TestGateway.notification($0) })
    }

    @Test func twoHundredIdleConnectionsAndATricklerDoNotKeepASenderWaiting() async throws {
        try await withTestGateway(configure: { $0.frameTimeout = .seconds(3) }) { gateway in
            let idle = try Self.idleConnections(200, to: gateway)
            async let trickler = Self.trickle(to: gateway, every: 0.05, for: 30)
            let report = try await Self.send(2000, to: gateway)
            #expect(report.isCompleteSuccess)
            #expect(report.accepted == 2000)
            #expect(gateway.recorder.notifications.map(TestGateway.index(of:)).sorted() == Array(1...2000))
            // The idle connections were not needed to make room: they are all still open.
            #expect(idle.filter(Self.isClosed).isEmpty)
            for session in idle { session.close() }
            #expect(await trickler.1)  // and the trickler is cut, 3 s after its first byte
        }
    }

    @Test func aTricklerIsCutByTheProgressRuleHoweverOftenItSends() async throws {
        try await withTestGateway(configure: { $0.frameTimeout = .milliseconds(500) }) { gateway in
            // A byte every 50 ms never lets the idle timeout (300 s) fire, and never completes a
            // frame in 500 ms.
            let (written, closed) = await Self.trickle(to: gateway, every: 0.05, for: 30)
            #expect(closed)
            #expect(written < FrameFixtures.notifications[1].bin.count)
            #expect(gateway.simulator.statistics.progressTimeouts == 1)
            #expect(gateway.events.get().contains { if case .progressTimeout = $0 { true } else { false } })
            #expect(gateway.recorder.count == 0)
        }
    }

    @Test func clientsStuckInTheHandshakeAreCutAtTheDeadlineWhileASenderIsServed() async throws {
        try await withTestGateway(configure: { $0.handshakeTimeout = .seconds(2) }) { gateway in
            // More than the old limit of 64 connections, each with half a ClientHello.
            let halfHello: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03]
            var stuck: [Socket] = []
            for _ in 0..<100 {
                let socket = try Socket.connect(host: "127.0.0.1", port: gateway.endpoints.gateway.port, timeout: 5)
                _ = halfHello.withUnsafeBytes { Glibc.send(socket.descriptor, $0.baseAddress, $0.count, 0) }
                stuck.append(socket)
            }
            let report = try await Self.send(500, to: gateway)
            #expect(report.isCompleteSuccess)
            #expect(report.accepted == 500)
            // Every stuck client is cut at the deadline: its socket reads end of stream.
            var cut = 0
            for socket in stuck {
                var byte: UInt8 = 0
                while socket.wait(for: .readable, timeout: 20) {
                    let count = recv(socket.descriptor, &byte, 1, 0)
                    if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) {
                        cut += 1
                        break
                    }
                }
            }
            #expect(cut == 100)
            let timedOut = gateway.events.get().filter { event in
                if case .handshakeFailed(_, let reason) = event { return reason.hasSuffix("timed out") }
                return false
            }
            #expect(timedOut.count == 100)
        }
    }

    @Test func idleConnectionsMakeRoomForANewSenderAtTheLimit() async throws {
        try await withTestGateway(configure: {
            $0.maximumConnections = 8
            $0.evictableAfter = .zero
        }) { gateway in
            let idle = try Self.idleConnections(8, to: gateway)
            let report = try await Self.send(300, to: gateway)
            #expect(report.isCompleteSuccess)
            #expect(report.accepted == 300)
            let evictions = gateway.simulator.statistics.evictions
            #expect(evictions >= 1)
            #expect(gateway.events.get().filter { if case .evicted = $0 { true } else { false } }.count == evictions)
            // The evicted ones are the idle connections, and they see the close.
            let deadline = Monotonic.now() + 10
            var closed = idle.filter(Self.isClosed).count
            while closed < evictions, Monotonic.now() < deadline {
                _ = idle[0].wait(for: .readable, timeout: 0.05)
                closed = idle.filter(Self.isClosed).count
            }
            #expect(closed == evictions)
            for session in idle { session.close() }
        }
    }
}
