import APNsCore
import APNsCredentials
internal import APNsRuntime
import HTTP2Client
import Synchronization

/// A route as the running bridge holds it: what it matches, its upstream pool (shared by the
/// routes with the same credential), and the translation of its requests (its topic).
final class ActiveRoute: Sendable {
    /// The route (nil: the single-credential configuration, which takes every sender).
    let route: BridgeRoutes.Route?
    /// Its position in the routes, counted from 1 (for the logs).
    let number: Int
    let upstream: BridgeUpstream
    let translation: BridgeTranslation

    init(route: BridgeRoutes.Route?, number: Int, upstream: BridgeUpstream, translation: BridgeTranslation) {
        self.route = route
        self.number = number
        self.upstream = upstream
        self.translation = translation
    }
}

/// The bridge's routes now, their pools, and the TLS context that admits their senders: replaced
/// whole by a reload, read once per sender connection.
struct BridgeRouting: Sendable {
    var routes: [ActiveRoute]
    /// Whether a routes file gives them (else one route takes every sender).
    var configured: Bool
    /// The pools of the routes, by ``BridgeRoutes/Route/poolKey``.
    var pools: [String: BridgeUpstream]
    /// Pools no route uses any more: the sessions that chose them before a reload keep using
    /// them; each is finished (its connections closed once its verdicts are in) when its last
    /// session has left, and again when the bridge stops (a late submission reopens a stream).
    var retired: [BridgeUpstream] = []
    var senderContext: TLSContext
    /// The CAs the senders' TLS context trusts: intermediates for the routes by sender CA.
    var senderCAs: [Certificate] = []

    /// Every pool, current and retired, once each.
    var allUpstreams: [BridgeUpstream] {
        var seen = Set<ObjectIdentifier>()
        return (routes.map(\.upstream) + retired).filter { seen.insert(ObjectIdentifier($0)).inserted }
    }

    /// The current routes' pools, once each.
    var currentUpstreams: [BridgeUpstream] {
        var seen = Set<ObjectIdentifier>()
        return routes.map(\.upstream).filter { seen.insert(ObjectIdentifier($0)).inserted }
    }
}

/// What a reload changed (``Bridge/reload(routes:)``).
public struct BridgeReload: Hashable, Sendable, CustomStringConvertible {
    /// Routes now.
    public var routes: Int
    /// Upstream pools now (one per credential).
    public var pools: Int
    /// Pools opened for credentials the bridge did not have (a new key, a renewed certificate).
    public var newPools: Int
    /// Pools no route uses any more (senders connected before the reload keep them).
    public var retiredPools: Int

    /// Creates a value.
    public init(routes: Int, pools: Int, newPools: Int, retiredPools: Int) {
        self.routes = routes
        self.pools = pools
        self.newPools = newPools
        self.retiredPools = retiredPools
    }

    /// One line for the log: routes and pools, new and retired.
    public var description: String {
        "\(routes) route\(routes == 1 ? "" : "s"), \(pools) upstream pool\(pools == 1 ? "" : "s") (\(newPools) new, "
            + "\(retiredPools) retired)"
    }
}

/// Lets a client's event handler name the pool its events belong to, which exists only after the
/// client. Written once, before any event can fire; let go by ``BridgeCore/detach()``.
final class UpstreamBox: @unchecked Sendable {
    // @unchecked: written before the client's first connection and by `detach()` once no event
    // can fire; only read in between.
    var upstream: BridgeUpstream?
}

extension BridgeCore {
    /// The TLS context for senders: the configuration's CAs and pins plus those the routes name.
    static func senderContext(_ configuration: Bridge.Configuration, routes: BridgeRoutes?) throws -> TLSContext {
        var pins = Set<[UInt8]>()
        for fingerprint in configuration.pinnedFingerprints + (routes?.pinnedFingerprints ?? []) {
            pins.insert(fingerprint)
        }
        let trust = configuration.senderCAs + (routes?.senderCAs ?? [])
        guard !trust.isEmpty || !pins.isEmpty else {
            throw LegacyAPNsError(
                .missingCredentials,
                "the bridge needs a CA for senders' certificates (--client-ca) or pinned fingerprints "
                    + "(--client-fingerprint, or routes naming senders' CAs or fingerprints): it never accepts "
                    + "any certificate")
        }
        return try TLSContext.server(
            identity: configuration.identity, clientTrust: trust, maximum: configuration.maximumTLSVersion,
            clientCertificates: pins.isEmpty ? .required : .requiredOrPinned(pins),
            sessionTicketKeys: configuration.sessionTicketKey)
    }

    /// The routes of `routes` (or the single-credential configuration's one), with a pool for
    /// each credential: the ones in `pools` kept, the others opened (nothing connects until a
    /// sender's first notification).
    func makeRouting(_ routes: BridgeRoutes?, keeping pools: [String: BridgeUpstream]) throws -> (
        BridgeRouting, newPools: Int
    ) {
        let context = try Self.senderContext(configuration, routes: routes)
        guard let routes else {
            let upstream = try pools[""] ?? makeUpstream(configuration.upstream.credentials)
            let only = ActiveRoute(
                route: nil, number: 1, upstream: upstream,
                translation: translation(topic: configuration.topic, credentials: configuration.upstream.credentials))
            return (
                BridgeRouting(routes: [only], configured: false, pools: ["": upstream], senderContext: context),
                pools[""] == nil ? 1 : 0
            )
        }
        var chosen: [String: BridgeUpstream] = [:]
        var active: [ActiveRoute] = []
        var opened = 0
        for (index, route) in routes.routes.enumerated() {
            let upstream: BridgeUpstream
            if let known = chosen[route.poolKey] ?? pools[route.poolKey] {
                upstream = known
            } else {
                upstream = try makeUpstream(route.credentials)
                opened += 1
            }
            chosen[route.poolKey] = upstream
            active.append(
                ActiveRoute(
                    route: route, number: index + 1, upstream: upstream,
                    translation: translation(
                        topic: route.apnsTopic ?? configuration.topic, credentials: route.credentials)))
        }
        var routing = BridgeRouting(routes: active, configured: true, pools: chosen, senderContext: context)
        routing.senderCAs = configuration.senderCAs + routes.senderCAs
        return (routing, opened)
    }

    private func translation(topic: String?, credentials: ProviderCredentials) -> BridgeTranslation {
        BridgeTranslation(fixedTopic: topic, usesTokens: credentials.usesTokens, run: translationBase.run)
    }

    /// A pool for one credential: a ``ProviderClient`` with the configuration's server, trust,
    /// connections and proxy, whose events come back to ``route(_:from:)``.
    private func makeUpstream(_ credentials: ProviderCredentials) throws -> BridgeUpstream {
        var upstreamConfiguration = configuration.upstream
        upstreamConfiguration.credentials = credentials
        upstreamConfiguration.delivery.keepsVerdictLists = false
        let box = UpstreamBox()
        let router = self.router
        let tap = configuration.upstreamEvents
        let client = try ProviderClient(configuration: upstreamConfiguration) { event in
            tap?(event)
            guard let core = router.core, let upstream = box.upstream else { return }
            core.route(event, from: upstream)
        }
        let upstream = BridgeUpstream(client: client) { event in router.core?.emit(event) }
        box.upstream = upstream
        boxes.withLock { $0.append(box) }
        return upstream
    }

    /// The route of a sender with this certificate (and the certificates it presented after it),
    /// or nil when none takes it.
    func route(
        for certificate: Certificate?, presented: [Certificate], topic: String?, fingerprint: [UInt8]
    ) -> ActiveRoute? {
        routing.withLock { routing in
            let intermediates = presented + routing.senderCAs
            return routing.routes.first { active in
                active.route?.matches(
                    certificate: certificate, intermediates: intermediates, topic: topic, fingerprint: fingerprint)
                    ?? true
            }
        }
    }

    /// A session is served through `route` (until ``release(_:)``). A pool retired meanwhile still
    /// serves it: a submission after its close opens a fresh stream, closed again on the release.
    func attach(_ route: ActiveRoute) {
        route.upstream.attach()
    }

    /// A session that chose `route` has ended: a pool retired by a reload closes once its last
    /// session has.
    func release(_ route: ActiveRoute) {
        if route.upstream.detach() { closeRetired(route.upstream) }
    }

    /// Finishes a retired pool no session uses: what it has in flight gets its verdicts (to their
    /// sessions, as always), then its connections close. Nothing is given up: the bridge's stop
    /// bounds it as it bounds every pool.
    private func closeRetired(_ upstream: BridgeUpstream) {
        Task { await upstream.finish() }
    }

    /// Replaces the routes; keeps the pools of the credentials it already has. Throws (and
    /// changes nothing) when a pool or the senders' TLS context cannot be made.
    func reload(_ routes: BridgeRoutes) throws -> BridgeReload {
        let pools = routing.withLock { $0.pools }
        let (fresh, opened) = try makeRouting(routes, keeping: pools)
        return routing.withLock { routing in
            let kept = Set(fresh.pools.values.map(ObjectIdentifier.init))
            let retiring = routing.pools.values.filter { !kept.contains(ObjectIdentifier($0)) }
            let retired = routing.retired + retiring
            routing = fresh
            routing.retired = retired
            for upstream in retiring where upstream.retire() { closeRetired(upstream) }
            return BridgeReload(
                routes: fresh.routes.count, pools: fresh.pools.count, newPools: opened, retiredPools: retiring.count)
        }
    }
}
