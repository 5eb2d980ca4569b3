/// Conversions between UNIX seconds, calendar fields and ISO-8601 text, always in UTC.
///
/// Pure arithmetic (Howard Hinnant's days-from-civil algorithm): no time zone database, no
/// Foundation, no dependence on the process's `TZ`.
package enum UTCTime {
    /// UNIX seconds for a UTC calendar date and time (proleptic Gregorian calendar).
    package static func seconds(
        year: Int64, month: Int64, day: Int64, hour: Int64 = 0, minute: Int64 = 0, second: Int64 = 0
    ) -> Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146097 + dayOfEra - 719468
        return days * 86400 + hour * 3600 + minute * 60 + second
    }

    /// The UTC calendar fields of a UNIX time.
    package static func fields(
        _ seconds: Int64
    ) -> (year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64) {
        var days = seconds / 86400
        var secondOfDay = seconds % 86400
        if secondOfDay < 0 {
            secondOfDay += 86400
            days -= 1
        }
        let shifted = days + 719468
        let era = (shifted >= 0 ? shifted : shifted - 146096) / 146097
        let dayOfEra = shifted - era * 146097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day, secondOfDay / 3600, secondOfDay % 3600 / 60, secondOfDay % 60)
    }

    /// `2026-01-31T12:00:00Z`.
    package static func iso8601(_ seconds: Int64) -> String {
        let f = fields(seconds)
        return "\(pad(f.year, 4))-\(pad(f.month, 2))-\(pad(f.day, 2))T"
            + "\(pad(f.hour, 2)):\(pad(f.minute, 2)):\(pad(f.second, 2))Z"
    }

    /// `2026-01-31`.
    package static func iso8601Date(_ seconds: Int64) -> String {
        let f = fields(seconds)
        return "\(pad(f.year, 4))-\(pad(f.month, 2))-\(pad(f.day, 2))"
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let digits = String(value.magnitude)
        let padded = String(repeating: "0", count: max(0, width - digits.count)) + digits
        return value < 0 ? "-" + padded : padded
    }
}
