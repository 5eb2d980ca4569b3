import APNsCore

extension CertificateSummary {
    /// One compact JSON object, keys in a fixed order:
    ///
    /// `subject`, `issuer`, `topic`, `topics` (names), `environment`, `notBefore`, `notAfter`
    /// (ISO-8601 UTC), `daysLeft`, `expired`, `notYetValid`, `keyMatches` (true, false or null),
    /// `keyType`, `keyBits`, `commonName`, `teamID`, `topicKinds` (`[{"topic":..,"kinds":[..]}]`),
    /// `serialNumber`, `sha256Fingerprint`, `sha1Fingerprint`, `chain` (subjects).
    public var jsonRepresentation: String {
        var writer = JSONWriter()
        var first = true
        func field(_ name: String) {
            writer.writeRaw(first ? "{" : ",")
            first = false
            writer.writeString(name)
            writer.writeRaw(":")
        }
        func string(_ text: String?) {
            if let text { writer.writeString(text) } else { writer.writeRaw("null") }
        }
        func strings(_ texts: [String]) {
            writer.writeRaw("[")
            for (index, text) in texts.enumerated() {
                if index > 0 { writer.writeRaw(",") }
                writer.writeString(text)
            }
            writer.writeRaw("]")
        }

        field("subject")
        string(subject)
        field("issuer")
        string(issuer)
        field("topic")
        string(topic)
        field("topics")
        strings(topics)
        field("environment")
        string(environment.rawValue)
        field("notBefore")
        string(notBeforeISO8601)
        field("notAfter")
        string(notAfterISO8601)
        field("daysLeft")
        writer.writeRaw(String(daysLeft))
        field("expired")
        writer.writeRaw(isExpired ? "true" : "false")
        field("notYetValid")
        writer.writeRaw(isNotYetValid ? "true" : "false")
        field("keyMatches")
        writer.writeRaw(keyMatches.map { $0 ? "true" : "false" } ?? "null")
        field("keyType")
        string(key.algorithm.rawValue)
        field("keyBits")
        writer.writeRaw(String(key.bits))
        field("commonName")
        string(commonName)
        field("teamID")
        string(teamID)
        field("topicKinds")
        writer.writeRaw("[")
        for (index, topic) in pushTopics.enumerated() {
            if index > 0 { writer.writeRaw(",") }
            writer.writeRaw("{")
            writer.writeString("topic")
            writer.writeRaw(":")
            writer.writeString(topic.name)
            writer.writeRaw(",")
            writer.writeString("kinds")
            writer.writeRaw(":")
            strings(topic.kinds)
            writer.writeRaw("}")
        }
        writer.writeRaw("]")
        field("serialNumber")
        string(serialNumber)
        field("sha256Fingerprint")
        string(sha256Fingerprint)
        field("sha1Fingerprint")
        string(sha1Fingerprint)
        field("chain")
        strings(chainSubjects)
        writer.writeRaw("}")
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}
