import APNsCore
import APNsCredentials
import APNsRuntime
import GatewaySimulator
import TestSupport
import Testing

/// A client ``HTTP2Session`` wired in memory to a ``ProviderConnection`` (the simulator's
/// sans-IO connection): bytes move both ways until both are quiet. Time is a number the test
/// moves (monotonic seconds for delays and timeouts) plus a ``ProviderSimulator/ManualClock``
/// (wall time for provider tokens). No sockets, no threads, no sleeps.
final class ProviderPair {
    let clock = ProviderSimulator.ManualClock()
    let recorder = MemoryProviderRecorder()
    let events = Locked<[ProviderSimulatorEvent]>([])
    let policy: ProviderPolicy
    let connection: ProviderConnection
    let clientEvents = HTTP2Recorder()
    let client: HTTP2Session
    /// Monotonic seconds as the connection sees them.
    private(set) var now = 1000.0
    private var clientOutput = ByteWriter(capacity: 64 * 1024)
    private var serverOutput = ByteWriter(capacity: 64 * 1024)

    static let keyA = try! SigningKey(pemRepresentation: Fixtures.bytes(Fixtures.certs("AuthKey_ABC123DEFG.p8")))
    static let keyB = try! SigningKey(pemRepresentation: Fixtures.bytes(Fixtures.certs("AuthKey_ZYX987WVUT.p8")))
    static let teamID = "DEF123GHIJ"
    static let authKeys: [ProviderSimulator.AuthKey] = [
        .init(keyID: "ABC123DEFG", teamID: teamID, publicKey: keyA.publicKey),
        .init(keyID: "ZYX987WVUT", teamID: teamID, publicKey: keyB.publicKey),
    ]
    static let universalTopics = ["com.example.legacy", "com.example.legacy.voip", "com.example.legacy.complication"]

    init(
        authentication: ProviderConnection.Authentication = .token,
        environment: ProviderSimulator.Environment = .development, faults: ProviderFaults = ProviderFaults(),
        teamTopics: [String: [String]] = [:], maximumConcurrentStreams: UInt32 = 1000,
        limits: ProviderSimulator.Limits = .init(), authKeys: [ProviderSimulator.AuthKey] = ProviderPair.authKeys,
        lineRecorder: JSONLinesProviderRecorder? = nil
    ) throws {
        let events = self.events
        policy = ProviderPolicy(
            environment: environment, authKeys: authKeys, teamTopics: teamTopics,
            maximumConcurrentStreams: maximumConcurrentStreams, faults: faults, limits: limits,
            clock: .manual(clock), recorder: lineRecorder ?? recorder, recordingInterval: .zero,
            events: { event in events.update { $0.append(event) } })
        connection = try ProviderConnection(policy: policy, number: 1, authentication: authentication, now: now)
        client = try HTTP2Session(role: .client, delegate: clientEvents)
    }

    /// A token of `key` issued at the clock's time plus `offset` seconds.
    func token(
        _ key: SigningKey = ProviderPair.keyA, keyID: String = "ABC123DEFG", teamID: String = teamID, offset: Int64 = 0
    )
        -> ProviderToken
    {
        try! key.signProviderToken(keyID: keyID, teamID: teamID, issuedAt: clock.seconds + offset)
    }

    /// Moves bytes both ways until both sides are quiet (a bounded number of rounds).
    func exchange(rounds: Int = 1000) throws {
        for _ in 0..<rounds {
            clientOutput.clear()
            try client.send(into: &clientOutput)
            if !clientOutput.isEmpty {
                try clientOutput.withUnsafeReadableBytes { try connection.receive($0, now: now) }
            }
            connection.tick(now: now)
            serverOutput.clear()
            try connection.send(into: &serverOutput)
            if !serverOutput.isEmpty { try serverOutput.withUnsafeReadableBytes { try client.receive($0) } }
            if clientOutput.isEmpty && serverOutput.isEmpty { return }
        }
        Issue.record("still talking after \(rounds) rounds")
    }

    /// Moves monotonic time on and lets both sides react.
    func advance(_ seconds: Double) throws {
        now += seconds
        connection.tick(now: now)
        try exchange()
    }

    /// Submits a request (with `token` as its bearer token, if any) and returns its stream.
    @discardableResult
    func submit(_ request: ProviderRequest, token: ProviderToken? = nil, extra: [(String, String)] = []) throws -> Int32
    {
        var request = request
        request.authorizationToken = token?.compactSerialization
        var headers = HTTP2HeaderList()
        request.writeHeaders(into: &headers, authority: "api.push.apple.com", isFirstOnConnection: true)
        for (name, value) in extra {
            var name = name
            var value = value
            name.withUTF8 { n in
                value.withUTF8 { v in headers.append(name: UnsafeRawBufferPointer(n), value: UnsafeRawBufferPointer(v))
                }
            }
        }
        return try client.submitRequest(headers: headers, body: request.payload.bytes)
    }

    /// Sends one request and returns its response (nil when it was not answered).
    func send(_ request: ProviderRequest, token: ProviderToken? = nil, extra: [(String, String)] = []) throws
        -> ProviderResponse?
    {
        let stream = try submit(request, token: token, extra: extra)
        try exchange()
        return response(stream)
    }

    /// The response the client received on `stream`, if complete.
    func response(_ stream: Int32) -> ProviderResponse? {
        guard let message = clientEvents.messages[stream], message.complete else { return nil }
        return message.response
    }

    /// The value of a response header the client received on `stream`.
    func header(_ name: String, stream: Int32) -> String? { clientEvents.messages[stream]?.value(name) }

    /// A request for device `index` (see ``HTTP2Pair/request(_:topic:pushType:payload:)``).
    static func request(
        _ index: Int, topic: String = "com.example.legacy", pushType: PushType = .alert, payload: [UInt8]? = nil
    ) -> ProviderRequest {
        HTTP2Pair.request(index, topic: topic, pushType: pushType, payload: payload)
    }
}
