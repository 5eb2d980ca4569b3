extension Duration {
    /// The duration in seconds, as a floating-point number (for deadlines and display).
    package var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// A duration of `seconds` seconds, rounded to the nanosecond (for values read as text).
    package static func seconds(fractional seconds: Double) -> Duration {
        .nanoseconds(Int64((seconds * 1e9).rounded()))
    }
}
