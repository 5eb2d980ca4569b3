extension FeedbackRecord {
    /// The time as ISO-8601 UTC, read as unsigned: 0 is `1970-01-01T00:00:00Z` and 0xFFFFFFFF is
    /// `2106-02-07T06:28:15Z`.
    package var timeISO8601: String { UTCTime.iso8601(Int64(timestamp)) }

    /// The `feedback` command's line: `2026-01-31T12:00:00Z <lowercase hex token>`.
    package var textLine: String { "\(timeISO8601) \(token.hexString)" }

    /// The `feedback --json` line: `{"time":1769860800,"token":"<hex>"}`.
    package var jsonLine: String { #"{"time":\#(timestamp),"token":"\#(token.hexString)"}"# }
}
