/// "Did you mean" for a word that is not one of a known set: the same name in another case, or
/// a near spelling (by edit distance). Shared by the command line's parser and the input checks
/// that name their choices (a JSON Lines `pushType`).
package enum Suggestion {
    /// " (did you mean 'send'?)" when a name among `names` is close to `word`, or "".
    package static func didYouMean(_ word: String, among names: [String], prefix: String) -> String {
        if let sameLetters = names.first(where: { $0.lowercased() == word.lowercased() }), sameLetters != word {
            return " (did you mean '\(prefix)\(sameLetters)'? names are lowercase)"
        }
        let typed = word.lowercased()
        let allowed = typed.count <= 3 ? 1 : typed.count < 9 ? 2 : 3
        let scored = names.map { ($0, editDistance(typed, $0)) }.filter { $0.1 <= allowed }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return "" }
        return " (did you mean '\(prefix)\(best.0)'?)"
    }

    /// The Levenshtein distance between `a` and `b`.
    package static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a)
        let b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
