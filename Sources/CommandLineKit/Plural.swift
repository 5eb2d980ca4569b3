/// A count with its noun agreeing: "1 connection", "2 connections", "0 silent closes".
/// `plural` is the noun for any count but 1 (default: the singular with an "s").
package func counted(_ number: Int, _ singular: String, plural: String? = nil) -> String {
    "\(number) \(number == 1 ? singular : plural ?? singular + "s")"
}
