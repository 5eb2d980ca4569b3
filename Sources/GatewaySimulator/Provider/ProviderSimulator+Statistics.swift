import APNsCore
import APNsCredentials

extension ProviderSimulator {
    /// Counters since start. Connections merge theirs after every read, so the counters are
    /// current by the time a client has a response.
    public struct Statistics: Hashable, Sendable {
        /// Connections that completed the TLS handshake.
        public var connections = 0
        /// Of those, with a client certificate (certificate authentication).
        public var certificateConnections = 0
        /// Clients refused during the TLS handshake.
        public var handshakeFailures = 0
        /// Connections refused because the maximum was reached.
        public var refusedConnections = 0
        /// Requests answered 200.
        public var accepted = 0
        /// Requests answered with an error status, by reason.
        public var rejected: [ProviderReason: Int] = [:]
        /// Requests never answered (stalled by fault injection).
        public var stalled = 0
        /// GOAWAYs the simulator sent (faults, wrong certificates, idle timeouts, stopping).
        public var goaways = 0
        /// Connections reset by fault injection.
        public var resets = 0
        /// Connections that broke HTTP/2.
        public var protocolErrors = 0
        /// Connections cut off for exceeding a limit.
        public var cutOff = 0
        /// Channel management requests answered with success (create, read, delete, list).
        public var channelRequests = 0
        /// Broadcasts answered 200.
        public var broadcasts = 0

        /// Requests answered with an error status, all reasons together.
        public var rejectedCount: Int { rejected.values.reduce(0, +) }

        /// "3 connections, 998 accepted, 2 rejected (BadDeviceToken 1, Unregistered 1), 1 GOAWAY":
        /// the closing line of `legacy-push serve --http2`, reasons in Apple's table order.
        public var summary: String {
            var text =
                "\(connections) connection\(connections == 1 ? "" : "s"), \(accepted) accepted, \(rejectedCount) rejected"
            if !rejected.isEmpty {
                let listed = ProviderReason.allKnown + ProviderReason.channelReasons
                let known = listed.filter { rejected[$0] != nil }
                let unknown = rejected.keys.filter { !listed.contains($0) }.sorted { $0.rawValue < $1.rawValue }
                text += " (" + (known + unknown).map { "\($0) \(rejected[$0]!)" }.joined(separator: ", ") + ")"
            }
            let extras: [(Int, String)] = [
                (channelRequests, channelRequests == 1 ? "channel request" : "channel requests"),
                (broadcasts, broadcasts == 1 ? "broadcast" : "broadcasts"),
                (stalled, "stalled"), (goaways, goaways == 1 ? "GOAWAY" : "GOAWAYs"),
                (resets, resets == 1 ? "reset" : "resets"),
                (protocolErrors, protocolErrors == 1 ? "protocol error" : "protocol errors"),
                (cutOff, "cut off"), (handshakeFailures, "refused in the handshake"),
                (refusedConnections, "refused (too many connections)"),
            ]
            for (count, name) in extras where count > 0 { text += ", \(count) \(name)" }
            return text
        }
    }
}
