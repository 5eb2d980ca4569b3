import APNsCore
import APNsRuntime
import Foundation
import GatewaySimulator
import TestSupport
import Testing

@testable import LegacyAPNs

#if canImport(Glibc)
    import Glibc
#endif

/// What a reconnect's ClientHello offers, read off the wire: resuming a TLS 1.2 session, only
/// TLS 1.2 and no key share (it could not be used); resuming a TLS 1.3 session, TLS 1.3 with its
/// pre-shared key and key share.
@Suite struct ResumingHelloTests {
    /// The extension types of the first ClientHello a client sends to a listener that answers
    /// nothing, and the length of the session ID it offers (to `host`: a session is offered only
    /// to the server name it came from).
    static func hello(resuming ticket: TLSTicket?, host: String) throws -> (
        extensions: Set<UInt16>, sessionIDCount: Int
    ) {
        let listener = try Listener(host: "127.0.0.1", port: 0)
        let captured = Locked<[UInt8]>([])
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { done.signal() }
            guard let (socket, _) = listener.accept(timeout: 10) else { return }
            defer { socket.close() }
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            let deadline = Monotonic.now() + 10
            while Monotonic.now() < deadline {
                if bytes.count >= 5, bytes.count >= 5 + (Int(bytes[3]) << 8 | Int(bytes[4])) { break }
                guard socket.wait(for: .readable, timeout: 1) else { continue }
                let count = chunk.withUnsafeMutableBytes { recv(socket.descriptor, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { break }
                bytes += chunk[0..<count]
            }
            captured.set(bytes)
        }
        let context = try TLSContext.client(
            TLSConfiguration(identity: TestGateway.clientIdentity, trust: .certificates(TestGateway.ca)))
        #expect(throws: (any Error).self) {
            _ = try TLSSession.connect(
                to: Endpoint(host: host, port: listener.endpoint.port), context: context, timeout: 10,
                resuming: ticket)
        }
        done.wait()
        return try Self.parse(captured.get())
    }

    /// A TLS record holding a ClientHello: its extension types and session ID length.
    static func parse(_ bytes: [UInt8]) throws -> (extensions: Set<UInt16>, sessionIDCount: Int) {
        try #require(bytes.count > 48 && bytes[0] == 0x16 && bytes[5] == 0x01, "not a ClientHello: \(bytes.prefix(8))")
        func u16(_ at: Int) -> Int { Int(bytes[at]) << 8 | Int(bytes[at + 1]) }
        var at = 5 + 4 + 2 + 32
        let sessionIDCount = Int(bytes[at])
        at += 1 + sessionIDCount
        at += 2 + u16(at)  // cipher suites
        at += 1 + Int(bytes[at])  // compression methods
        let end = at + 2 + u16(at)
        at += 2
        var extensions: Set<UInt16> = []
        while at + 4 <= end {
            extensions.insert(UInt16(u16(at)))
            at += 4 + u16(at + 2)
        }
        try #require(at == end && end <= bytes.count, "extensions do not add up")
        return (extensions, sessionIDCount)
    }

    static let supportedVersions: UInt16 = 43
    static let keyShare: UInt16 = 51
    static let preSharedKey: UInt16 = 41

    /// A resumable session from the simulator speaking at most `version`, and its connection (kept
    /// open while the session is offered, as the client does).
    static func ticket(from gateway: TestGateway, _ version: TLSConfiguration.Version) throws -> (TLSTicket, TLSSession)
    {
        let context = try TLSContext.client(
            TLSConfiguration(identity: TestGateway.clientIdentity, trust: .certificates(TestGateway.ca)))
        let session = try TLSSession.connect(to: gateway.endpoints.gateway, context: context, timeout: 10)
        // A TLS 1.3 ticket arrives after the handshake: read until it is there.
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1024, alignment: 8)
        defer { buffer.deallocate() }
        let deadline = Monotonic.now() + 10
        while Monotonic.now() < deadline {
            if let ticket = session.resumableTicket { return (ticket, session) }
            _ = session.wait(for: .readable, timeout: 0.2)
            _ = session.read(into: buffer)
        }
        throw LegacyAPNsError(.connectionFailed, "the simulator issued no ticket")
    }

    @Test func resumingATLS12SessionOffersOnlyTLS12AndNoKeyShare() async throws {
        try await withTestGateway(configure: { $0.maximumTLSVersion = .tls12 }) { gateway in
            let host = gateway.endpoints.gateway.host
            let fresh = try Self.hello(resuming: nil, host: host)
            #expect(fresh.extensions.contains(Self.supportedVersions))
            #expect(fresh.extensions.contains(Self.keyShare))

            let (ticket, connection) = try Self.ticket(from: gateway, .tls12)
            let resuming = try Self.hello(resuming: ticket, host: host)
            #expect(connection.protocolVersion == "TLSv1.2")
            #expect(resuming.sessionIDCount > 0)  // the session is offered
            #expect(!resuming.extensions.contains(Self.supportedVersions))
            #expect(!resuming.extensions.contains(Self.keyShare))
        }
    }

    @Test func resumingATLS13SessionOffersTLS13() async throws {
        try await withTestGateway(configure: { $0.maximumTLSVersion = .tls13 }) { gateway in
            let (ticket, connection) = try Self.ticket(from: gateway, .tls13)
            let resuming = try Self.hello(resuming: ticket, host: gateway.endpoints.gateway.host)
            #expect(connection.protocolVersion == "TLSv1.3")
            #expect(resuming.extensions.isSuperset(of: [Self.supportedVersions, Self.keyShare, Self.preSharedKey]))
        }
    }
}
