import APNsCore
import APNsCredentials
internal import APNsRuntime
import Synchronization

extension ProviderSimulator {
    /// The APNs environment the simulator stands for: it decides which client certificates are
    /// accepted and whether responses carry `apns-unique-id`.
    public enum Environment: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        /// `api.push.apple.com`: production certificates (and universal ones).
        case production
        /// `api.sandbox.push.apple.com`: development certificates (and universal ones); successful
        /// responses carry `apns-unique-id`, as Apple's sandbox does.
        case development

        /// "production" or "development".
        public var description: String { rawValue }

        /// Whether a client certificate for `environment` may connect here (a universal
        /// certificate, `.both`, may connect to either).
        public func accepts(_ environment: CertificateEnvironment) -> Bool {
            switch environment {
            case .both: true
            case .production: self == .production
            case .development: self == .development
            case .unknown: false
            }
        }
    }

    /// One key whose provider tokens are accepted: Apple's key id, the team it belongs to, and
    /// its public key (from the `.p8` or its `.pub.pem`).
    public struct AuthKey: Sendable, Hashable {
        /// The 10-character key id (the KEYID of `AuthKey_<KEYID>.p8`, the JWT header's `kid`).
        public var keyID: String
        /// The 10-character team id the tokens must name (`iss`).
        public var teamID: String
        /// Verifies the tokens' signatures.
        public var publicKey: SigningKey.PublicKey
        /// The environment the key may be used in, or nil for both (Apple's keys can be limited
        /// to one; a token from a key limited to the other environment gets 403
        /// BadEnvironmentKeyIdInToken).
        public var environment: Environment?

        /// Creates an accepted key.
        public init(keyID: String, teamID: String, publicKey: SigningKey.PublicKey, environment: Environment? = nil) {
            self.keyID = keyID
            self.teamID = teamID
            self.publicKey = publicKey
            self.environment = environment
        }
    }

    /// The wall clock the simulator judges provider tokens by (`iat` age, the 20-minute update
    /// rule), in milliseconds since 1970. Tests inject a ``ManualClock`` to move an hour in no time.
    public struct Clock: Sendable {
        /// The current time in milliseconds since 1970.
        public var now: @Sendable () -> Int64

        /// A clock reading `now`.
        public init(_ now: @escaping @Sendable () -> Int64) { self.now = now }

        /// The system's real-time clock.
        public static let system = Clock { Host.unixMilliseconds() }

        /// A clock that reads `clock`, which the caller moves.
        public static func manual(_ clock: ManualClock) -> Clock { Clock { clock.now } }

        /// The system's clock run `skew` ahead: with two hours, every provider token a sender
        /// signs by its own (right) clock looks over an hour old, so it is refused with 403
        /// ExpiredProviderToken, as Apple refuses the tokens of a sender whose clock is wrong.
        public static func system(ahead skew: Duration) -> Clock {
            let (seconds, attoseconds) = skew.components
            let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
            return Clock { system.now() + milliseconds }
        }
    }

    /// A clock for tests: it stands still until moved with ``advance(by:)`` or ``set(_:)``.
    public final class ManualClock: Sendable {
        private let milliseconds: Atomic<Int64>

        /// A clock standing at `milliseconds` since 1970 (default: 2026-01-01T00:00:00Z).
        public init(milliseconds: Int64 = 1_767_225_600_000) {
            self.milliseconds = Atomic(milliseconds)
        }

        /// The time it shows, in milliseconds since 1970.
        public var now: Int64 { milliseconds.load(ordering: .acquiring) }

        /// The time it shows, in whole seconds since 1970.
        public var seconds: Int64 { now / 1000 }

        /// Moves the clock forward.
        public func advance(by duration: Duration) {
            let (seconds, attoseconds) = duration.components
            milliseconds.add(seconds * 1000 + attoseconds / 1_000_000_000_000_000, ordering: .acquiringAndReleasing)
        }

        /// Sets the clock to `milliseconds` since 1970.
        public func set(_ milliseconds: Int64) { self.milliseconds.store(milliseconds, ordering: .releasing) }
    }

    /// Bounds that keep one hostile or broken client from costing the others: each, when
    /// exceeded, cuts that client off (``ProviderSimulatorEvent/cutOff(connection:reason:)``).
    public struct Limits: Sendable, Hashable {
        /// Connections held at once, from the TCP accept on. A new client at the limit takes the
        /// place of the connection longest in its TLS handshake (whatever its age), or else of the
        /// connection idle longest (no complete request, nor its handshake, for
        /// ``evictableAfter``, no stream open), which is closed to make room (GOAWAY NO_ERROR);
        /// only when every connection is busy is the new client closed at once
        /// (``ProviderSimulatorEvent/refused(client:)``).
        public var maximumConnections = 128
        /// How long a connection must have completed no request (nor its handshake), with no
        /// stream open, before it may be closed to make room for a new client at
        /// ``maximumConnections``.
        public var evictableAfter: Duration = .seconds(5)
        /// Time a client may take for the TLS handshake, and then for the HTTP/2 preface.
        public var handshakeTimeout: Duration = .seconds(10)
        /// Time a connection may take from its handshake to its first complete request (nil:
        /// any); one that sends only the preface, or PINGs, is closed (GOAWAY NO_ERROR) after it.
        public var firstRequestTimeout: Duration? = .seconds(60)
        /// Time a request may take from its first HEADERS frame to its last byte (a client
        /// trickling a request is cut off after it).
        public var requestTimeout: Duration = .seconds(10)
        /// Time the simulator waits for a client to take bytes it has to send (a client that
        /// never reads its responses is cut off after it).
        public var writeTimeout: Duration = .seconds(10)
        /// Time a connection may send nothing before the simulator says GOAWAY
        /// `{"reason":"IdleTimeout"}` (nil: never; Apple keeps idle connections for a long time).
        public var idleTimeout: Duration? = .seconds(3600)
        /// Output bytes a connection may have waiting for the client before the simulator stops
        /// reading its requests (backpressure); the write timeout then decides.
        public var maximumBufferedOutput = 1 << 20
        /// The largest header list accepted (RFC 9113 accounting); bigger blocks get RST_STREAM
        /// ENHANCE_YOUR_CALM.
        public var maximumHeaderListSize = 16 * 1024

        /// The defaults above.
        public init() {}
    }

    /// What a client gets for opening a stream beyond the simulator's SETTINGS_MAX_CONCURRENT_STREAMS
    /// (``Configuration/maximumConcurrentStreams``, or 1 before a token connection's first valid
    /// token).
    public enum ExcessStreams: String, Hashable, Sendable, CaseIterable {
        /// As APNs: the connection ends at once, whether or not the client has acknowledged the
        /// limit yet, with GOAWAY REFUSED_STREAM and the debug data `Maximum active streams
        /// violated for this endpoint.` (what users' logs show). Streams the client had open are
        /// abandoned; a client that opens many streams before the server's SETTINGS arrive
        /// delivers nothing.
        case goaway
        /// As RFC 9113 allows and nghttp2 does: while the client has not acknowledged the limit,
        /// the stream is refused with RST_STREAM REFUSED_STREAM (not processed, so the client may
        /// send it again) and the connection goes on; beyond an acknowledged limit, GOAWAY
        /// PROTOCOL_ERROR.
        case refuse
    }

    /// Everything about the simulator: identity, address, environment, authentication,
    /// limits, faults, recording and events.
    public struct Configuration: Sendable {
        /// The server certificate and key the simulator presents.
        public var identity: ClientIdentity
        /// Client certificates (optional: none means token authentication) must chain to one of these.
        public var clientTrust: [Certificate]
        /// The newest TLS version offered (the oldest is always TLS 1.2, as APNs requires).
        public var maximumTLSVersion = TLSConfiguration.Version.tls13
        /// Address to bind; 127.0.0.1 unless you really mean otherwise.
        public var host = "127.0.0.1"
        /// Port; 0 (the default) picks a free one, reported by ``ProviderSimulator/start()``.
        public var port: UInt16 = 0
        /// Production or development (see ``Environment``).
        public var environment = Environment.development
        /// The keys whose provider tokens are accepted (token authentication).
        public var authKeys: [AuthKey] = []
        /// The topics (bundle ids) each team may push to with token authentication, by team id;
        /// a team without an entry may push to any topic. A bundle id allows its push-type
        /// suffixes too (`com.example.app.voip`, `.complication`, ...).
        public var teamTopics: [String: [String]] = [:]
        /// SETTINGS_MAX_CONCURRENT_STREAMS once a connection is authenticated (certificate auth:
        /// from the start; token auth: after its first valid token, before which it is 1).
        public var maximumConcurrentStreams: UInt32 = 1000
        /// What a stream beyond that limit gets: APNs's GOAWAY by default.
        public var excessStreams = ExcessStreams.goaway
        /// Misbehaviour to inject (none by default).
        public var faults = ProviderFaults()
        /// Bounds against hostile clients.
        public var limits = Limits()
        /// The wall clock for token ages.
        public var clock = Clock.system
        /// Where accepted requests are recorded, if anywhere.
        public var recorder: (any ProviderRecorder)?
        /// How long a connection may keep accepted requests before handing them to the recorder
        /// (they are also handed over when the connection closes). Zero: after every read.
        public var recordingInterval: Duration = .milliseconds(100)
        /// Seed of the generator for `apns-id`s the simulator makes up (reproducible runs).
        public var seed: UInt64 = 0x5EED
        /// Called for every ``ProviderSimulatorEvent``, from the connection threads.
        public var events: (@Sendable (ProviderSimulatorEvent) -> Void)?
        /// The broadcast channels and the broadcasts sent on them (share one store between a
        /// production and a development simulator: each sees only its environment's channels).
        public var channels = ChannelStore()
        /// Apps (bundle ids) without the broadcast capability: their channel and broadcast requests
        /// get 400 FeatureNotEnabled.
        public var broadcastDisabledBundles: Set<String> = []
        /// A second port serving channel management only, as Apple's separate management host
        /// (`api-manage-broadcast.push.apple.com`) does; nil: none. The main port serves channel
        /// management too. 0 picks a free port (``ProviderSimulator/managementEndpoint``).
        public var managementPort: UInt16?

        /// Creates a configuration with the server identity and the CAs client certificates must
        /// chain to.
        public init(identity: ClientIdentity, clientTrust: [Certificate]) {
            self.identity = identity
            self.clientTrust = clientTrust
        }
    }
}
