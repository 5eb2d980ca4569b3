import APNsCore
import APNsRuntime

@testable import HTTP2Client

/// The simulated provider dials for the client's connection shell.
extension SimulatedProvider: TransportDialer {
    func connect(timeout: Double) throws(LegacyAPNsError) -> any Transport { try connect() }
}

/// The client's clock in a simulated run is the run's one clock.
extension SimulatedTime: ProviderClock {
    func now() -> Duration { elapsed }
    func unixTime() -> Int64 { wall.seconds }
}
