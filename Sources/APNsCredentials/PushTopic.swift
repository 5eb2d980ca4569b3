import APNsCore

/// One topic a push certificate may send to, with its kinds, from Apple's topics extension
/// (OID 1.2.840.113635.100.6.3.6).
///
/// A universal certificate for `com.example.app` typically lists `com.example.app` (kind `app`),
/// `com.example.app.voip` (`voip`) and `com.example.app.complication` (`complication`).
public struct PushTopic: Sendable, Hashable, CustomStringConvertible {
    /// The topic: a bundle id, possibly with a `.voip` / `.complication` suffix.
    public var name: String
    /// What the topic is for ("app", "voip", "complication", ...); empty when not stated.
    public var kinds: [String]

    /// Creates a topic.
    public init(name: String, kinds: [String] = []) {
        self.name = name
        self.kinds = kinds
    }

    /// "com.example.app (app)".
    public var description: String {
        kinds.isEmpty ? name : "\(name) (\(kinds.joined(separator: ", ")))"
    }

    /// Parses the extension's value: a SEQUENCE of `UTF8String topic` each optionally followed by
    /// a `SEQUENCE OF UTF8String` of kinds. Returns nil for anything that is not that shape, so a
    /// damaged or unexpected extension never yields half-guessed topics.
    static func parseExtension(_ value: [UInt8]) -> [PushTopic]? {
        var outer = DERReader(value)
        guard let sequence = outer.next(), sequence.tag == DERReader.Tag.sequence, outer.isAtEnd else {
            return nil
        }
        var reader = DERReader(sequence.content)
        var topics: [PushTopic] = []
        while !reader.isAtEnd {
            guard let element = reader.next() else { return nil }
            if let name = DERReader.string(element) {
                topics.append(PushTopic(name: name))
            } else if element.tag == DERReader.Tag.sequence, !topics.isEmpty {
                var kindsReader = DERReader(element.content)
                while !kindsReader.isAtEnd {
                    guard let kind = kindsReader.next() else { return nil }
                    if let text = DERReader.string(kind) { topics[topics.count - 1].kinds.append(text) }
                }
            } else {
                return nil
            }
        }
        return topics.isEmpty ? nil : topics
    }
}
