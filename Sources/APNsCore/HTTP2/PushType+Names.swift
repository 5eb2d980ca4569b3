extension PushType {
    /// Why `type` is refused ("`name` must be one of alert, background, ..., got 'x'", with a
    /// suggestion), or nil when Apple documents it: the one check of `--push-type` and of a
    /// JSON Lines `pushType`.
    package static func unknownTypeProblem(_ type: PushType, named name: String) -> String? {
        guard !type.isKnown else { return nil }
        let names = PushType.allKnown.map(\.rawValue)
        return "\(name) must be one of \(names.joined(separator: ", ")), got '\(type.rawValue)'"
            + Suggestion.didYouMean(type.rawValue, among: names, prefix: "")
    }

    /// `topic` with the `.push-type.liveactivity` suffix a Live Activity's topic needs (added when
    /// it lacks it).
    package static func liveActivityTopic(_ topic: String?) -> String? {
        guard let topic, let suffix = PushType.liveActivity.requiredTopicSuffix else { return topic }
        return topic.hasSuffix(suffix) ? topic : topic + suffix
    }
}
