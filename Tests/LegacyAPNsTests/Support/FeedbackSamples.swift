import FeedbackClient
import GatewaySimulator
import LegacyAPNs
import TestSupport

extension FeedbackSamples {
    /// A reader for `service` with the fixture client identity and CA.
    static func reader(
        _ service: FeedbackService, identity: ClientIdentity = TestGateway.clientIdentity,
        trust: [Certificate] = TestGateway.ca, configure: (inout FeedbackReader.Configuration) -> Void = { _ in }
    ) throws -> FeedbackReader {
        var configuration = FeedbackReader.Configuration(
            service: service, tls: TLSConfiguration(identity: identity, trust: .certificates(trust)))
        configuration.connectTimeout = .seconds(5)
        configuration.idleTimeout = .seconds(10)
        configure(&configuration)
        return try FeedbackReader(configuration: configuration)
    }
}

extension TestGateway {
    /// The simulator's feedback port as a ``FeedbackService``.
    var feedbackService: FeedbackService {
        .custom(host: endpoints.feedback!.host, port: endpoints.feedback!.port)
    }

    /// `--feedback HOST:PORT` for the CLI.
    var feedbackAddress: String { endpoints.feedback!.description }
}
