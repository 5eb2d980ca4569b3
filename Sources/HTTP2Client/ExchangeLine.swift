internal import APNsRuntime
import Synchronization

/// The shared part of ``ChannelClient`` and ``BroadcastClient``: one kept connection behind a
/// lock, each request on a thread of its own.
final class ExchangeLine: Sendable {
    private let exchange: Mutex<HTTP2Exchange>

    /// A line to `configuration`'s server (nothing connects until the first request).
    ///
    /// - Throws: ``LegacyAPNsError`` when the TLS context cannot be built.
    init(_ configuration: ExchangeConfiguration<some ExchangeServer>) throws {
        let identity: ClientIdentity? =
            if case .certificate(let identity) = configuration.credentials { identity } else { nil }
        let context = try TLSContext.client(
            TLSConfiguration(identity: identity, trust: configuration.trust), applicationProtocols: ["h2"])
        exchange = Mutex(
            HTTP2Exchange(
                settings: HTTP2Exchange.Settings(
                    endpoint: configuration.server.endpoint, context: context,
                    credentials: configuration.credentials, timeout: configuration.timeout.inSeconds,
                    clock: configuration.clock, proxy: configuration.proxy?.tunnel)))
    }

    /// Sends one request, suspending (not blocking) the caller meanwhile.
    func perform(
        _ headers: @escaping @Sendable (inout HTTP2HeaderList, String, String?) -> Void, body: [UInt8]
    ) async throws -> ChannelResponse {
        let result = await OSThread.run(name: "apns-h2-channel") {
            [self] () -> Result<ChannelResponse, LegacyAPNsError> in
            exchange.withLock { exchange in
                do {
                    return .success(try exchange.perform(.init(writeHeaders: headers, body: body)))
                } catch let error as LegacyAPNsError {
                    return .failure(error)
                } catch {
                    return .failure(LegacyAPNsError(.connectionFailed, "\(error)", underlying: error))
                }
            }
        }
        return try result.get()
    }

    /// Closes the kept connection.
    func close() async {
        await OSThread.run(name: "apns-h2-channel-close") { [self] in exchange.withLock { $0.close() } }
    }
}
