import APNsCore
import Synchronization

/// The broadcast channels of a ``ProviderSimulator`` and the broadcasts sent on them: Apple's
/// channel rules as state.
///
/// - A channel belongs to one app (bundle id) and one environment; ``ProviderSimulator/Environment``
///   keys everything, so one store shared by a production and a development simulator keeps their
///   channels apart, as APNs does.
/// - Its storage policy is fixed at creation.
/// - At most ``maximumChannelsPerApp`` (Apple: 10,000) per app and environment, and
///   ``maximumChannels`` in all; one more is refused with CannotCreateChannelConfig.
/// - Deleting is irreversible: the id is never valid again (ids are 128 random bits).
/// - Every accepted broadcast is recorded (the most recent ``maximumRecords``) with its channel
///   and policy; on a most-recent-message channel (policy 1) the latest one is kept as the
///   channel's stored message (``storedMessage(channel:bundleID:environment:)``), the earlier one
///   replaced. Nothing is stored for a no-message-stored channel (policy 0).
///
/// Thread-safe: the connections of a simulator share it under a lock (one per channel request).
public final class ChannelStore: Sendable {
    /// One broadcast the simulator accepted.
    public struct Broadcast: Hashable, Sendable {
        /// The request as validated.
        public var request: BroadcastRequest
        /// The channel's storage policy.
        public var policy: MessageStoragePolicy
        /// The environment it was sent in.
        public var environment: ProviderSimulator.Environment
        /// The `apns-request-id` it was answered with.
        public var requestID: APNsID
        /// The `apns-unique-id` it was answered with (development).
        public var uniqueID: APNsID?
        /// Where Apple contradicts itself, which form the request used.
        public var notes: [String]

        /// Creates a record.
        public init(
            request: BroadcastRequest, policy: MessageStoragePolicy, environment: ProviderSimulator.Environment,
            requestID: APNsID, uniqueID: APNsID?, notes: [String]
        ) {
            self.request = request
            self.policy = policy
            self.environment = environment
            self.requestID = requestID
            self.uniqueID = uniqueID
            self.notes = notes
        }
    }

    private struct Key: Hashable {
        var environment: ProviderSimulator.Environment
        var bundleID: String
    }

    private struct State {
        var channels: [Key: [(id: ChannelID, policy: MessageStoragePolicy)]] = [:]
        var stored: [ChannelID: Broadcast] = [:]
        /// The ids of every channel (of any app and environment), for unique new ones.
        var live: Set<ChannelID> = []
        var broadcasts: [Broadcast] = []
        var generator: SplitMix64
    }

    /// Channels one app may have in one environment.
    public let maximumChannelsPerApp: Int
    /// Channels of all apps together: a client naming ever new bundle ids cannot make the store
    /// grow without bound (one more is refused with CannotCreateChannelConfig).
    public let maximumChannels: Int
    /// Broadcasts kept in ``broadcasts``.
    public let maximumRecords: Int
    private let state: Mutex<State>

    /// An empty store.
    ///
    /// - Parameters:
    ///   - maximumChannelsPerApp: Apple's 10,000 by default (tests lower it).
    ///   - maximumChannels: all apps' channels together.
    ///   - maximumRecords: how many broadcasts ``broadcasts`` keeps (the oldest go first).
    ///   - seed: the generator of channel ids (reproducible runs).
    public init(
        maximumChannelsPerApp: Int = 10_000, maximumChannels: Int = 100_000, maximumRecords: Int = 10_000,
        seed: UInt64 = 0xC4A7
    ) {
        self.maximumChannelsPerApp = maximumChannelsPerApp
        self.maximumChannels = maximumChannels
        self.maximumRecords = maximumRecords
        state = Mutex(State(generator: SplitMix64(seed: seed)))
    }

    /// The app's channels in `environment`, in the order they were created.
    public func channels(bundleID: String, environment: ProviderSimulator.Environment) -> [ChannelID] {
        state.withLock { $0.channels[Key(environment: environment, bundleID: bundleID)]?.map(\.id) ?? [] }
    }

    /// The storage policy of a channel, nil when the app has no such channel in `environment`.
    public func policy(
        of channel: ChannelID, bundleID: String, environment: ProviderSimulator.Environment
    ) -> MessageStoragePolicy? {
        state.withLock { state in
            state.channels[Key(environment: environment, bundleID: bundleID)]?.first { $0.id == channel }?.policy
        }
    }

    /// Every broadcast accepted (the most recent ``maximumRecords``), oldest first.
    public var broadcasts: [Broadcast] { state.withLock { $0.broadcasts } }

    /// The message a most-recent-message channel (policy 1) keeps for devices that come online:
    /// its latest broadcast; nil for a no-message-stored channel or one that had none.
    public func storedMessage(
        channel: ChannelID, bundleID: String, environment: ProviderSimulator.Environment
    ) -> Broadcast? {
        state.withLock { state in
            state.stored[channel].flatMap {
                $0.request.bundleID == bundleID && $0.environment == environment ? $0 : nil
            }
        }
    }

    // MARK: - The simulator's side

    /// Creates a channel: its id, or nil at the limit.
    package func create(
        bundleID: String, policy: MessageStoragePolicy, environment: ProviderSimulator.Environment
    ) -> ChannelID? {
        state.withLock { state in
            let key = Key(environment: environment, bundleID: bundleID)
            var list = state.channels[key] ?? []
            guard list.count < maximumChannelsPerApp, state.live.count < maximumChannels else { return nil }
            // 128 random bits: a deleted channel's id does not come back (and a live one never).
            var id = ChannelID.random(using: &state.generator)
            while !state.live.insert(id).inserted { id = ChannelID.random(using: &state.generator) }
            list.append((id, policy))
            state.channels[key] = list
            return id
        }
    }

    /// Deletes a channel; false when there was none.
    package func delete(_ channel: ChannelID, bundleID: String, environment: ProviderSimulator.Environment) -> Bool {
        state.withLock { state in
            let key = Key(environment: environment, bundleID: bundleID)
            guard let index = state.channels[key]?.firstIndex(where: { $0.id == channel }) else { return false }
            state.channels[key]!.remove(at: index)
            if state.channels[key]!.isEmpty { state.channels[key] = nil }
            state.live.remove(channel)
            state.stored[channel] = nil
            return true
        }
    }

    /// Records an accepted broadcast.
    package func record(_ broadcast: Broadcast) {
        state.withLock { state in
            if broadcast.policy == .mostRecentMessageStored { state.stored[broadcast.request.channelID] = broadcast }
            state.broadcasts.append(broadcast)
            if state.broadcasts.count > maximumRecords {
                state.broadcasts.removeFirst(state.broadcasts.count - maximumRecords)
            }
        }
    }
}
