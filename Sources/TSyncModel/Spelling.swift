/// "Did you mean": the names close to a mistyped one, for commands (`tsync psuh`) and tables
/// (`tsync pull todoitems`) alike.
public enum Spelling {
    /// Names within two edits of `word` (a transposition counts as one), or that it begins or
    /// that begin it, best first, two at most: `psuh` → push, `conflict` → conflicts.
    public static func suggestions(for word: String, among names: [String]) -> [String] {
        let scored = names.filter { $0 != word }.map { ($0, distance(Array(word), Array($0))) }
        let best = scored.filter { $0.1 <= 2 || $0.0.hasPrefix(word) && word.count >= 3 || word.hasPrefix($0.0) }
        return best.sorted { ($0.1, $0.0) < ($1.1, $1.0) }.prefix(2).map(\.0)
    }

    /// "; did you mean 'a' or 'b'?", or "" when nothing is close.
    public static func didYouMean(_ word: String, among names: [String]) -> String {
        let close = suggestions(for: word, among: names)
        guard !close.isEmpty else { return "" }
        return "; did you mean " + close.map { "'\($0)'" }.joined(separator: " or ") + "?"
    }

    /// Optimal string alignment distance: insertions, deletions, substitutions and adjacent
    /// transpositions each cost one.
    static func distance(_ a: [Character], _ b: [Character]) -> Int {
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }
}
