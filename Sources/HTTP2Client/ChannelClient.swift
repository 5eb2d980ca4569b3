/// Manages broadcast channels through Apple's channel management API (iOS 18 broadcast push):
/// create, read, delete and list an app's channels.
///
/// ```swift
/// let key = try SigningKey(pemRepresentation: p8Bytes)
/// let channels = try ChannelClient(
///     configuration: .init(server: .sandbox, credentials: .token(key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ")))
/// let id = try await channels.create(bundleID: "com.example.app", storagePolicy: .mostRecentMessageStored).get()
/// let all = try await channels.list(bundleID: "com.example.app").get()
/// _ = try await channels.delete(id, bundleID: "com.example.app")
/// await channels.close()
/// ```
///
/// Requests follow Apple's text ("Sending channel management requests to APNs"): the channel id
/// in the `apns-channel-id` header (never in the path), the list at `/all-channels`, an
/// `apns-request-id` on every request when given. Each answer is a value: the channel, or a
/// ``ChannelRefusal`` with APNs's status and reason (`BadChannelId`, `ChannelNotRegistered`,
/// `CannotCreateChannelConfig`, ...). Only a failure to get an answer is thrown.
///
/// One connection is kept open from one request to the next (Apple treats rapid connecting and
/// disconnecting as an attack); ``close()`` ends it. Requests wait for each other.
public final class ChannelClient: Sendable {
    /// Where and how to connect.
    public typealias Configuration = ExchangeConfiguration<ChannelServer>

    /// The configuration the client was made with.
    public let configuration: Configuration
    private let line: ExchangeLine

    /// Creates a client; nothing connects until the first request.
    ///
    /// - Throws: ``LegacyAPNsError`` when the TLS context cannot be built.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        line = try ExchangeLine(configuration)
    }

    /// Sends any channel management request and returns APNs's answer as it came.
    public func send(_ request: ChannelRequest) async throws -> ChannelResponse {
        try await line.perform(
            { headers, authority, token in
                request.writeHeaders(into: &headers, authority: authority, authorizationToken: token)
            }, body: request.body)
    }

    /// Creates a channel with a storage policy, fixed for its life: its id.
    public func create(
        bundleID: String, storagePolicy: MessageStoragePolicy, requestID: APNsID? = nil
    ) async throws -> Result<ChannelID, ChannelRefusal> {
        let response = try await send(
            ChannelRequest(bundleID: bundleID, operation: .create(storagePolicy), requestID: requestID))
        guard response.status == 201 else { return .failure(ChannelRefusal(response: response)) }
        guard let id = response.channelID else {
            throw LegacyAPNsError(.malformedResponse, "201 without an apns-channel-id header")
        }
        return .success(id)
    }

    /// Reads a channel's configuration.
    public func read(
        _ channel: ChannelID, bundleID: String, requestID: APNsID? = nil
    ) async throws -> Result<ChannelConfiguration, ChannelRefusal> {
        let response = try await send(
            ChannelRequest(bundleID: bundleID, operation: .read(channel), requestID: requestID))
        guard response.status == 200 else { return .failure(ChannelRefusal(response: response)) }
        guard let configuration = ChannelConfiguration(json: response.body) else {
            throw LegacyAPNsError(
                .malformedResponse,
                "a channel's configuration is {\"message-storage-policy\":N,...}, got '\(String(decoding: response.body, as: UTF8.self))'"
            )
        }
        return .success(configuration)
    }

    /// Deletes a channel (irreversible): its `apns-request-id` on success.
    public func delete(
        _ channel: ChannelID, bundleID: String, requestID: APNsID? = nil
    ) async throws -> Result<APNsID?, ChannelRefusal> {
        let response = try await send(
            ChannelRequest(bundleID: bundleID, operation: .delete(channel), requestID: requestID))
        guard response.status == 204 else { return .failure(ChannelRefusal(response: response)) }
        return .success(response.requestID)
    }

    /// Lists the app's channels in this environment. Apple's article gives the answer both as
    /// `{"channels":[...]}` and as an empty body; both are read.
    public func list(bundleID: String, requestID: APNsID? = nil) async throws -> Result<[ChannelID], ChannelRefusal> {
        let response = try await send(ChannelRequest(bundleID: bundleID, operation: .list, requestID: requestID))
        guard response.status == 200 else { return .failure(ChannelRefusal(response: response)) }
        guard let ids = ChannelID.list(fromJSON: response.body) else {
            throw LegacyAPNsError(
                .malformedResponse,
                "a channel list is {\"channels\":[...]}, got '\(String(decoding: response.body, as: UTF8.self))'")
        }
        return .success(ids)
    }

    /// Closes the connection kept open (a later request opens a new one).
    public func close() async { await line.close() }
}
