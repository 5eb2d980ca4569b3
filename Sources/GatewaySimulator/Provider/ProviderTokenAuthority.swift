import APNsCore
import APNsCredentials
internal import APNsRuntime

/// One token connection's provider-token rules (TOK, HTTP2-PROTOCOL.md), as a value: the
/// connection's current token and the key that owns the connection.
///
/// | check, in this order | answer |
/// |---|---|
/// | no `authorization`, or `bearer` without a token | 403 MissingProviderToken |
/// | not a well-formed ES256 provider token (any ``ProviderToken/Failure`` but `missing`) | 403 InvalidProviderToken |
/// | its `kid` is none of the configured keys | 403 InvalidProviderToken |
/// | the connection already belongs to another key | 403 UnrelatedKeyIdInToken |
/// | its `iss` is not the key's team | 403 InvalidProviderToken |
/// | the key is limited to the other environment | 403 BadEnvironmentKeyIdInToken |
/// | the signature does not verify | 403 InvalidProviderToken |
/// | `iat` is more than an hour ago | 403 ExpiredProviderToken |
/// | `iat` is more than a minute in the future | 403 InvalidProviderToken |
/// | it replaces the connection's token less than 20 minutes after that one was accepted | 429 TooManyProviderTokenUpdates |
///
/// Decisions where Apple is silent: a future `iat` (a clock ahead of the server's by more than a
/// minute) is InvalidProviderToken; a refused update leaves the connection's earlier token in
/// force (requests with it keep working, until it expires); the 20 minutes are counted by the
/// server's clock from the moment the current token was first accepted on the connection. The
/// same token on every request costs one byte comparison (and the age check): signatures are
/// verified once per token per connection.
struct ProviderTokenAuthority {
    /// What a check decided.
    enum Verdict: Equatable {
        /// Accepted; `topics` as ``ProviderAuthorization/TokenVerdict/accepted(topics:)`` wants them.
        case accepted(topics: [String]?, change: Change)
        /// Refused with this reason; `why` says which check refused it, for the log (nil when the
        /// reason says it all).
        case rejected(ProviderReason, why: String? = nil)
    }

    /// Whether the accepted token is new to the connection.
    enum Change: Equatable {
        /// The token the connection already had.
        case none
        /// The connection's first valid token: it now belongs to this key.
        case first(keyID: String, teamID: String)
        /// A newer token replaced the current one.
        case updated(keyID: String)
    }

    /// The configured keys by key id.
    let keys: [String: ProviderSimulator.AuthKey]
    /// The allowed topics per team (already with every push-type suffix).
    let teamTopics: [String: [String]]
    let environment: ProviderSimulator.Environment

    /// The token in force: its exact `authorization` value, the parsed token, when it was first
    /// accepted (milliseconds), and its team's topics.
    private var current: (value: [UInt8], token: ProviderToken, acceptedAt: Int64, topics: [String]?)?
    /// The last refused value and why (time-independent reasons only), so a client repeating a
    /// bad token does not cost a signature check per request.
    private var lastRefused: (value: [UInt8], verdict: Verdict)?

    static let maximumAge: Int64 = 3600 * 1000
    static let minimumUpdateInterval: Int64 = 20 * 60 * 1000
    static let allowedClockSkew: Int64 = 60 * 1000

    init(
        keys: [String: ProviderSimulator.AuthKey], teamTopics: [String: [String]],
        environment: ProviderSimulator.Environment
    ) {
        self.keys = keys
        self.teamTopics = teamTopics
        self.environment = environment
    }

    /// Whether the connection has had a valid token (its stream limit is raised).
    var isAuthenticated: Bool { current != nil }

    /// Judges the `authorization` of one request at `now` (milliseconds since 1970).
    mutating func check(_ head: ProviderRequestHead, now: Int64) -> Verdict {
        head.withValue(.authorization) { value in check(value, now: now) }
    }

    /// Judges one `authorization` value (nil when the header is absent).
    mutating func check(_ value: UnsafeRawBufferPointer?, now: Int64) -> Verdict {
        guard let value, !value.isEmpty else { return .rejected(.missingProviderToken) }
        if let current, Self.equal(current.value, value) {
            return isExpired(current.token, now: now)
                ? .rejected(.expiredProviderToken) : .accepted(topics: current.topics, change: .none)
        }
        if let lastRefused, Self.equal(lastRefused.value, value) { return lastRefused.verdict }
        let text = String(decoding: value, as: UTF8.self)
        let token: ProviderToken
        do {
            token = try ProviderToken(authorizationHeaderValue: text)
        } catch .missing {
            return .rejected(.missingProviderToken)
        } catch {
            return refuse(value, .invalidProviderToken, why: "\(error)")
        }
        guard let key = keys[token.keyID] else {
            return refuse(
                value, .invalidProviderToken,
                why: "no key is registered under the token's key id \(token.keyID) (known: "
                    + keys.keys.sorted().joined(separator: ", ") + ")")
        }
        if let current, current.token.keyID != token.keyID {
            return refuse(
                value, .unrelatedKeyIdInToken,
                why: "the connection belongs to key \(current.token.keyID), the token is signed by key \(token.keyID)")
        }
        guard token.teamID == key.teamID else {
            return refuse(
                value, .invalidProviderToken,
                why: "the token's team id \(token.teamID) is not \(key.teamID), the team of key \(token.keyID)")
        }
        if let limited = key.environment, limited != environment {
            return refuse(value, .badEnvironmentKeyIdInToken)
        }
        guard key.publicKey.isValidSignature(for: token) else {
            return refuse(
                value, .invalidProviderToken,
                why: "the signature does not verify with the key registered under key id \(token.keyID): "
                    + "the token was signed with another .p8")
        }
        if isExpired(token, now: now) {
            return refuse(value, .expiredProviderToken, why: "issued at \(token.issuedAt), over an hour ago")
        }
        if token.issuedAt * 1000 > now + Self.allowedClockSkew {
            return .rejected(
                .invalidProviderToken,
                why: "issued at \(token.issuedAt), \((token.issuedAt * 1000 - now) / 1000) s ahead of this server's "
                    + "clock (more than a minute in the future: the sender's clock is fast)")
        }
        let topics = teamTopics[token.teamID]
        guard let previous = current else {
            current = (Array(value), token, now, topics)
            return .accepted(topics: topics, change: .first(keyID: token.keyID, teamID: token.teamID))
        }
        if now - previous.acceptedAt < Self.minimumUpdateInterval { return .rejected(.tooManyProviderTokenUpdates) }
        current = (Array(value), token, now, topics)
        return .accepted(topics: topics, change: .updated(keyID: token.keyID))
    }

    /// Byte equality with memcmp (the token is compared on every request).
    @inline(__always)
    private static func equal(_ kept: [UInt8], _ value: UnsafeRawBufferPointer) -> Bool {
        kept.withUnsafeBytes { Memory.equal($0, value) }
    }

    private func isExpired(_ token: ProviderToken, now: Int64) -> Bool {
        now - token.issuedAt * 1000 > Self.maximumAge
    }

    private mutating func refuse(
        _ value: UnsafeRawBufferPointer, _ reason: ProviderReason, why: String? = nil
    ) -> Verdict {
        lastRefused = (Array(value.prefix(4096)), .rejected(reason, why: why))
        return .rejected(reason, why: why)
    }

    /// A team's bundle ids with every push-type suffix, as the validator compares whole topics.
    static func expand(_ topics: [String]) -> [String] {
        let suffixes = PushType.allKnown.compactMap(\.requiredTopicSuffix)
        var expanded: [String] = []
        for topic in topics {
            expanded.append(topic)
            for suffix in suffixes where !topic.hasSuffix(suffix) { expanded.append(topic + suffix) }
        }
        return expanded
    }
}
