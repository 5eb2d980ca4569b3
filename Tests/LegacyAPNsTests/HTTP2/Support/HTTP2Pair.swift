import APNsCore
import APNsRuntime
import Testing

/// A client session and a server session wired to each other in memory: what one sends is fed to
/// the other, until neither has anything left to say. No sockets, no threads, no clocks.
final class HTTP2Pair {
    let clientEvents = HTTP2Recorder()
    let serverEvents = HTTP2Recorder()
    let client: HTTP2Session
    let server: HTTP2Session
    private var clientOutput = ByteWriter(capacity: 64 * 1024)
    private var serverOutput = ByteWriter(capacity: 64 * 1024)
    /// Bytes moved each way, in all.
    private(set) var clientBytes = 0
    private(set) var serverBytes = 0

    init(client clientOptions: HTTP2Session.Options = .init(), server serverOptions: HTTP2Session.Options = .init())
        throws
    {
        client = try HTTP2Session(role: .client, options: clientOptions, delegate: clientEvents)
        server = try HTTP2Session(role: .server, options: serverOptions, delegate: serverEvents)
    }

    /// Makes the server answer every complete request with `respond(stream, request)`.
    func serverAnswers(_ respond: @escaping (Int32, HTTP2Recorder.Message) -> (ProviderResponse, [UInt8])?) {
        serverEvents.onMessage = { [unowned self] stream, message in
            guard let (response, body) = respond(stream, message) else { return }
            var headers = HTTP2HeaderList()
            response.writeHeaders(into: &headers)
            try! self.server.submitResponse(
                stream: stream, headers: headers, body: body.isEmpty ? response.bodyBytes : body)
        }
    }

    /// Moves bytes both ways until both sessions are quiet (at most `rounds` round trips, a guard
    /// against a livelock, not a clock).
    @discardableResult
    func exchange(rounds: Int = 10_000) throws -> Int {
        for round in 1...rounds {
            let fromClient = try flushClient()
            let fromServer = try flushServer()
            if fromClient == 0 && fromServer == 0 { return round }
        }
        Issue.record("sessions still talking after \(rounds) rounds")
        return rounds
    }

    /// Sends what the client has to the server; returns the byte count.
    @discardableResult
    func flushClient() throws -> Int {
        clientOutput.clear()
        try client.send(into: &clientOutput)
        clientBytes += clientOutput.count
        if !clientOutput.isEmpty { try clientOutput.withUnsafeReadableBytes { try server.receive($0) } }
        return clientOutput.count
    }

    /// Sends what the server has to the client; returns the byte count.
    @discardableResult
    func flushServer() throws -> Int {
        serverOutput.clear()
        try server.send(into: &serverOutput)
        serverBytes += serverOutput.count
        if !serverOutput.isEmpty { try serverOutput.withUnsafeReadableBytes { try client.receive($0) } }
        return serverOutput.count
    }

    /// Takes what the server would send, without delivering it yet (to let frames cross).
    func takeServerOutput() throws -> [UInt8] {
        serverOutput.clear()
        try server.send(into: &serverOutput)
        return serverOutput.bytes
    }

    /// Delivers bytes taken earlier to the client.
    func deliverToClient(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try client.receive($0) }
    }

    /// A POST in the APNs form for device `index` (its token's last bytes are `index`).
    static func request(
        _ index: Int, topic: String = "com.example.app", pushType: PushType = .alert, payload: [UInt8]? = nil
    ) -> ProviderRequest {
        var bytes = [UInt8](repeating: 0xAB, count: 32)
        bytes[24..<32] = ArraySlice(withUnsafeBytes(of: UInt64(index).bigEndian) { Array($0) })
        return try! ProviderRequest(
            deviceToken: try! DeviceToken(bytes: bytes),
            payload: Payload(unvalidatedBytes: payload ?? Array(#"{"aps":{"alert":"n\#(index)"}}"#.utf8)),
            topic: topic, pushType: pushType, apnsID: APNsID(rawValue: UInt128(index)))
    }

    /// Submits `request` from the client; returns its stream.
    @discardableResult
    func submit(_ request: ProviderRequest, first: Bool = false) throws -> Int32 {
        var headers = HTTP2HeaderList()
        request.writeHeaders(into: &headers, authority: "api.push.apple.com", isFirstOnConnection: first)
        return try client.submitRequest(headers: headers, body: request.payload.bytes)
    }
}

/// Hand-made HTTP/2 frames, for feeding a session what no well-behaved peer would send.
enum RawFrames {
    /// The client connection preface.
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// `| length (24) | type (8) | flags (8) | R + stream (32) | payload |`
    static func frame(type: UInt8, flags: UInt8 = 0, stream: UInt32 = 0, payload: [UInt8] = []) -> [UInt8] {
        var bytes: [UInt8] = [
            UInt8(payload.count >> 16 & 0xFF), UInt8(payload.count >> 8 & 0xFF), UInt8(payload.count & 0xFF), type,
            flags,
        ]
        bytes += withUnsafeBytes(of: stream.bigEndian) { Array($0) }
        return bytes + payload
    }

    /// The types of the frames in `bytes` (which start at a frame boundary), in order.
    static func types(_ bytes: [UInt8]) -> [UInt8] {
        var types: [UInt8] = []
        var index = 0
        while index + 9 <= bytes.count {
            let length = Int(bytes[index]) << 16 | Int(bytes[index + 1]) << 8 | Int(bytes[index + 2])
            types.append(bytes[index + 3])
            index += 9 + length
        }
        return types
    }

    static func settings(_ entries: [(UInt16, UInt32)] = [], ack: Bool = false) -> [UInt8] {
        var payload: [UInt8] = []
        for (identifier, value) in entries {
            payload += withUnsafeBytes(of: identifier.bigEndian) { Array($0) }
            payload += withUnsafeBytes(of: value.bigEndian) { Array($0) }
        }
        return frame(type: 0x4, flags: ack ? 0x1 : 0, payload: payload)
    }

    static func ping(_ payload: UInt64 = 0) -> [UInt8] {
        frame(type: 0x6, payload: withUnsafeBytes(of: payload.bigEndian) { Array($0) })
    }
}
