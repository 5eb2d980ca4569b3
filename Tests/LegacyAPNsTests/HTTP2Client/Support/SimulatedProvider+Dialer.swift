@testable import HTTP2Client

/// The simulated provider dials for the client's connection shell (its `connect()` already has
/// the dialer's shape).
extension SimulatedProvider: ProviderDialer {}

/// The client's clock in a simulated run is the run's one clock.
extension SimulatedTime: ProviderClock {
    func now() -> Duration { elapsed }
    func unixTime() -> Int64 { wall.seconds }
}
