import APNsCore
import APNsCredentials
import HTTP2Client

/// Which upstream credential (and topic) each sender uses: one bridge for many apps
/// (`legacy-push bridge --routes PATH`).
///
/// A routes file is JSON, `{"routes":[ROUTE, ...]}`; the first route that matches a sender's
/// certificate is its route for the whole connection. A ROUTE has exactly one matcher:
/// - `senderTopic`: the topic (bundle identifier) of the sender's certificate;
/// - `senderFingerprint`: the SHA-256 of the sender's certificate (64 hex digits, colons allowed);
/// - `senderCA`: a PEM file of CAs the sender's certificate must chain to (through the
///   intermediates it presents or the bridge trusts; verified by OpenSSL as a handshake is);
///
/// and exactly one upstream credential:
/// - `authKey` (a `.p8` file) with `keyId` and `teamId` (token authentication);
/// - `cert` (a `.p12` or PEM file) with `key` (a PEM key, when it is not inside `cert`) and
///   `passphraseFile` (the passphrase on the file's first line), both optional;
///
/// and optionally `apnsTopic`, the topic of its requests (default: the sender certificate's).
///
/// ```json
/// {"routes": [
///   {"senderTopic": "com.example.news", "authKey": "AuthKey_ABC123DEFG.p8",
///    "keyId": "ABC123DEFG", "teamId": "DEF123GHIJ"},
///   {"senderCA": "legacy-ca.pem", "cert": "weather.p12", "passphraseFile": "weather.pass",
///    "apnsTopic": "com.example.weather"}
/// ]}
/// ```
///
/// The bridge keeps one upstream connection pool per credential (Apple binds a connection to one
/// team and key): routes with the same ``Route/poolKey`` share it, and ``Bridge/reload(routes:)``
/// keeps the pools whose credentials did not change. A sender no route matches is refused.
public struct BridgeRoutes: Sendable {
    /// One route: which senders, and the credential and topic they deliver with.
    public struct Route: Sendable {
        /// Which senders a route takes.
        public enum Match: Sendable {
            /// Senders whose certificate names this topic.
            case senderTopic(String)
            /// The sender whose certificate has this SHA-256 fingerprint (32 bytes).
            case senderFingerprint([UInt8])
            /// Senders whose certificate chains to one of these CAs (a root or an intermediate).
            case senderCA([Certificate])
        }

        /// Which senders it takes.
        public var match: Match
        /// The upstream credential: a `.p8` key with key and team identifiers, or a certificate.
        public var credentials: ProviderCredentials
        /// Names the credential: routes with the same key share one upstream pool, and a reload
        /// keeps the pool of a key it already has. The parser derives it from the credential's
        /// contents (a renewed certificate or a new key is a new key, so a new pool).
        public var poolKey: String
        /// The topic of its requests (default: each sender certificate's).
        public var apnsTopic: String?

        /// Creates a route.
        public init(match: Match, credentials: ProviderCredentials, poolKey: String, apnsTopic: String? = nil) {
            self.match = match
            self.credentials = credentials
            self.poolKey = poolKey
            self.apnsTopic = apnsTopic
        }

        /// Whether a sender with this certificate (its topic and fingerprint) is one of this route's.
        /// `intermediates` help chain it to a ``Match/senderCA(_:)`` (what the sender presented
        /// after its certificate, the CAs the bridge trusts); they are trusted for nothing.
        public func matches(
            certificate: Certificate?, intermediates: [Certificate] = [], topic: String?, fingerprint: [UInt8]
        ) -> Bool {
            switch match {
            case .senderTopic(let wanted): return topic == wanted
            case .senderFingerprint(let wanted): return fingerprint == wanted
            case .senderCA(let authorities):
                guard let certificate else { return false }
                return certificate.chains(to: authorities, through: intermediates)
            }
        }
    }

    /// The routes, in the order they are tried.
    public var routes: [Route]

    /// Creates routes from values.
    public init(routes: [Route]) {
        self.routes = routes
    }

    /// The first route that takes a sender with this certificate, and its index, if any
    /// (`intermediates` as for ``Route/matches(certificate:intermediates:topic:fingerprint:)``).
    public func route(
        for certificate: Certificate?, intermediates: [Certificate] = [], topic: String?, fingerprint: [UInt8]
    ) -> (index: Int, route: Route)? {
        for (index, route) in routes.enumerated()
        where route.matches(
            certificate: certificate, intermediates: intermediates, topic: topic, fingerprint: fingerprint)
        {
            return (index, route)
        }
        return nil
    }

    /// The fingerprints the routes name (senders the bridge's TLS accepts by pin).
    public var pinnedFingerprints: [[UInt8]] {
        var fingerprints: [[UInt8]] = []
        for route in routes {
            if case .senderFingerprint(let bytes) = route.match { fingerprints.append(bytes) }
        }
        return fingerprints
    }

    /// The CAs the routes name (senders the bridge's TLS accepts by chain).
    public var senderCAs: [Certificate] {
        var authorities: [Certificate] = []
        for route in routes {
            if case .senderCA(let found) = route.match { authorities += found }
        }
        return authorities
    }
}

extension BridgeRoutes {
    /// Parses a routes file (see ``BridgeRoutes``) and loads every credential it names.
    ///
    /// - Parameters:
    ///   - json: the file's bytes.
    ///   - source: its name, for the errors (`routes.json: route 2: keyId: ...`).
    ///   - readFile: reads a file the routes name (the caller decides where relative paths lie).
    /// - Throws: ``LegacyAPNsError``, one per mistake, naming the file, the route (counted from 1)
    ///   and the field: `.malformedInput` for the file's shape, or the credential's own error
    ///   (a wrong passphrase, an unreadable file, ...).
    public init(json: [UInt8], source: String, readFile: (String) throws -> [UInt8]) throws {
        let values = try json.withUnsafeBytes { bytes in try Self.routeObjects(bytes, source: source) }
        var routes: [Route] = []
        for (index, members) in values.enumerated() {
            let place = "\(source): route \(index + 1)"
            routes.append(try Self.route(members, place: place, readFile: readFile))
        }
        guard !routes.isEmpty else {
            throw LegacyAPNsError(.malformedInput, "\(source): \"routes\" is empty: name at least one route")
        }
        self.routes = routes
    }

    /// The members of each route object, as strings (every value a route takes is a string).
    private static func routeObjects(_ bytes: UnsafeRawBufferPointer, source: String) throws -> [[String: String]] {
        func malformed(_ message: String) -> LegacyAPNsError {
            LegacyAPNsError(.malformedInput, "\(source): \(message)")
        }
        let top: [JSONScanner.Member]
        do {
            top = try JSONScanner.objectMembers(bytes)
        } catch {
            throw malformed("not a JSON object (\(error.message) at byte \(error.offset)); expected {\"routes\":[...]}")
        }
        guard top.count == 1, let list = top.first, list.key == "routes" else {
            let names = top.map { "\"\($0.key)\"" }.joined(separator: ", ")
            throw malformed("expected exactly one member, \"routes\", found \(names.isEmpty ? "none" : names)")
        }
        var index = list.value.lowerBound
        guard bytes[index] == UInt8(ascii: "[") else { throw malformed("\"routes\" is not an array") }
        var elements: [Range<Int>] = []
        index = JSONScanner.skipWhitespace(bytes, from: index + 1)
        while bytes[index] != UInt8(ascii: "]") {
            // Already validated as a whole: each element ends at a ',' or the ']'.
            let end = (try? JSONScanner.skipValue(bytes, from: index, depth: 2)) ?? list.value.upperBound
            elements.append(index..<end)
            index = JSONScanner.skipWhitespace(bytes, from: end)
            if bytes[index] == UInt8(ascii: ",") { index = JSONScanner.skipWhitespace(bytes, from: index + 1) }
        }
        return try elements.enumerated().map { position, range in
            let place = "route \(position + 1)"
            let element = UnsafeRawBufferPointer(rebasing: bytes[range])
            guard let members = try? JSONScanner.objectMembers(element) else {
                throw malformed("\(place) is not a JSON object")
            }
            var fields: [String: String] = [:]
            for member in members {
                guard fields[member.key] == nil else { throw malformed("\(place): \(member.key) is given twice") }
                guard Self.fields.contains(member.key) else {
                    throw malformed(
                        "\(place): unknown field \"\(member.key)\" (known: \(Self.fields.joined(separator: ", ")))")
                }
                guard let text = JSONScanner.stringValue(element, in: member.value) else {
                    throw malformed("\(place): \(member.key) must be a string")
                }
                fields[member.key] = text
            }
            return fields
        }
    }

    private static let fields = [
        "senderTopic", "senderFingerprint", "senderCA", "authKey", "keyId", "teamId", "cert", "key",
        "passphraseFile", "apnsTopic",
    ]

    private static func route(_ fields: [String: String], place: String, readFile: (String) throws -> [UInt8]) throws
        -> Route
    {
        func malformed(_ message: String) -> LegacyAPNsError {
            LegacyAPNsError(.malformedInput, "\(place): \(message)")
        }
        func read(_ field: String) throws -> [UInt8] {
            let path = fields[field]!
            do {
                return try readFile(path)
            } catch let error as LegacyAPNsError {
                throw LegacyAPNsError(error.code, "\(place): \(field): \(error.reason)", underlying: error)
            } catch {
                throw LegacyAPNsError(.fileError, "\(place): \(field): cannot read '\(path)': \(error)")
            }
        }
        func loading<Value>(_ field: String, _ body: () throws -> Value) throws -> Value {
            do {
                return try body()
            } catch let error as LegacyAPNsError {
                throw LegacyAPNsError(
                    error.code, "\(place): \(field) '\(fields[field]!)': \(error.reason)", underlying: error)
            }
        }

        let matchers = ["senderTopic", "senderFingerprint", "senderCA"].filter { fields[$0] != nil }
        guard matchers.count == 1 else {
            throw malformed(
                matchers.isEmpty
                    ? "no matcher: give senderTopic, senderFingerprint or senderCA"
                    : "give one matcher, not \(matchers.joined(separator: " and "))")
        }
        let match: Route.Match
        switch matchers[0] {
        case "senderTopic":
            guard let topic = fields["senderTopic"], !topic.isEmpty else { throw malformed("senderTopic is empty") }
            match = .senderTopic(topic)
        case "senderFingerprint":
            let text = fields["senderFingerprint"]!
            let hex = text.filter { $0 != ":" }
            guard hex.count == 64, let bytes = try? DeviceToken(hexString: hex).bytes else {
                throw malformed("senderFingerprint must be a SHA-256 fingerprint (64 hex digits), got '\(text)'")
            }
            match = .senderFingerprint(bytes)
        default:
            let authorities = Certificate.certificates(pemRepresentation: try read("senderCA"))
            guard !authorities.isEmpty else {
                throw malformed("senderCA '\(fields["senderCA"]!)' holds no PEM certificate")
            }
            match = .senderCA(authorities)
        }

        let hasKey = fields["authKey"] != nil
        let hasCertificate = fields["cert"] != nil
        let credentials: ProviderCredentials
        var hasher = PoolKeyHasher()
        switch (hasKey, hasCertificate) {
        case (true, true):
            throw malformed("give authKey (token auth) or cert (certificate auth), not both")
        case (false, false):
            throw malformed("no upstream credential: give authKey with keyId and teamId, or cert")
        case (true, false):
            for field in ["key", "passphraseFile"] where fields[field] != nil {
                throw malformed("\(field) goes with cert, not authKey")
            }
            var identifiers: [String] = []
            for field in ["keyId", "teamId"] {
                guard let value = fields[field] else { throw malformed("authKey needs \(field)") }
                guard value.utf8.count == 10,
                    value.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) })
                else { throw malformed("\(field) '\(value)' is not 10 characters A-Z and 0-9") }
                identifiers.append(value)
            }
            let bytes = try read("authKey")
            let key = try loading("authKey") { try SigningKey(pemRepresentation: bytes) }
            hasher.add(Array("token".utf8) + bytes + Array(identifiers.joined(separator: ":").utf8))
            credentials = .token(key, keyID: identifiers[0], teamID: identifiers[1])
        case (false, true):
            for field in ["keyId", "teamId"] where fields[field] != nil {
                throw malformed("\(field) goes with authKey, not cert")
            }
            let bytes = try read("cert")
            let keyBytes = try fields["key"].map { _ in try read("key") }
            var passphrase: String?
            if fields["passphraseFile"] != nil {
                let text = String(decoding: try read("passphraseFile"), as: UTF8.self)
                passphrase = String(
                    text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                )
                .trimmingSuffix("\r")
            }
            let isPKCS12 = bytes.first == 0x30  // DER: a PKCS#12 file; PEM starts with text
            let identity = try loading("cert") {
                if isPKCS12 {
                    guard keyBytes == nil else {
                        throw LegacyAPNsError(.malformedInput, "a .p12 holds its key: leave out key")
                    }
                    return try ClientIdentity(pkcs12: bytes, passphrase: passphrase)
                }
                return try ClientIdentity(pem: bytes, keyPEM: keyBytes, passphrase: passphrase)
            }
            hasher.add(Array("certificate".utf8) + bytes + (keyBytes ?? []))
            credentials = .certificate(identity)
        }
        let topic = fields["apnsTopic"]
        if let topic, topic.isEmpty { throw malformed("apnsTopic is empty") }
        return Route(match: match, credentials: credentials, poolKey: hasher.key, apnsTopic: topic)
    }
}

/// Names a credential by its contents (within one process: a pool is kept across a reload when
/// the key is the same).
private struct PoolKeyHasher {
    private var hasher = Hasher()
    private var count = 0
    mutating func add(_ bytes: [UInt8]) {
        hasher.combine(bytes)
        count += bytes.count
    }
    var key: String {
        let value = UInt64(bitPattern: Int64(hasher.finalize()))
        return "\(count)-" + String(value, radix: 16)
    }
}

extension String {
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}
