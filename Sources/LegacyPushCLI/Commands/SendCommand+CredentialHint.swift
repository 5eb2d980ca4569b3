import CommandLineKit
import HTTP2Client

extension SendCommand {
    /// What to change when APNs refused the credentials themselves, in the words of the command
    /// line: which environment the certificate and the server are for (BadCertificateEnvironment),
    /// or what to check of a provider token (InvalidProviderToken). Nil for other refusals.
    static func credentialHint(
        for reason: ProviderReason?, credentials: ProviderCredentials, endpoint: Endpoint
    ) -> String? {
        switch (reason, credentials) {
        case (.badCertificateEnvironment?, .certificate(let identity)):
            let apple = [ProviderServer.production.endpoint, ProviderServer.sandbox.endpoint].contains(endpoint)
            switch identity.certificate.environment {
            case .production:
                return "the certificate is for production, and \(endpoint) serves development (the sandbox): "
                    + (apple
                        ? "drop --sandbox to send to api.push.apple.com"
                        : "start the simulator with 'serve --http2 --environment production'")
                    + ", or use a development certificate"
            case .development:
                return "the certificate is for development (the sandbox), and \(endpoint) serves production: "
                    + (apple
                        ? "add --sandbox to send to api.sandbox.push.apple.com"
                        : "start the simulator with 'serve --http2 --environment development' (its default)")
                    + ", or use a production certificate"
            case .both, .unknown:
                return nil
            }
        case (.invalidProviderToken?, .token(_, let keyID, let teamID)):
            return "check that the .p8 key is the one Apple registered under --key-id \(keyID), that --team-id "
                + "\(teamID) is the team that key belongs to, and that this machine's clock is right (a token "
                + "dated more than a minute ahead of APNs' clock is refused)"
        default:
            return nil
        }
    }
}
