/// git's "did you mean": a first word that names no command is refused (exit 64) with the closest
/// command names, instead of ArgumentParser's bare "Unexpected argument".
enum CommandSuggestion {
    /// The message for `arguments` (without the program name) when their command is unknown, or
    /// when `help` names an unknown command; nil when the command line names a command.
    static func problem(_ arguments: [String], commands: [String]) -> String? {
        guard let (index, word) = firstWord(arguments) else { return nil }
        if word == "help" {
            guard let topic = arguments.dropFirst(index + 1).first(where: { !$0.hasPrefix("-") }), !commands.contains(topic)
            else { return nil }
            return message(topic, commands: commands)
        }
        return commands.contains(word) ? nil : message(word, commands: commands)
    }

    private static func message(_ word: String, commands: [String]) -> String {
        let close = suggestions(for: word, among: commands)
        let hint = close.isEmpty ? "" : "; did you mean " + close.map { "'\($0)'" }.joined(separator: " or ") + "?"
        return "'\(word)' is not a tsync command\(hint) (`tsync --help` lists them)"
    }

    /// The first argument that is not an option of the root command (`-C DIR`, `--store DIR`,
    /// `--store=DIR`, `--help`, `--version`, ArgumentParser's `--generate-completion-script
    /// SHELL`), with its position.
    private static func firstWord(_ arguments: [String]) -> (Int, String)? {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            // ArgumentParser's own: shell completion asks with `---completion`.
            if argument.hasPrefix("---") { return nil }
            if argument == "-C" || argument == "--store" || argument == "--generate-completion-script" {
                index += 2
            } else if argument.hasPrefix("-") {
                index += 1
            } else {
                return (index, argument)
            }
        }
        return nil
    }

    /// Commands within two edits of `word` (a transposition counts as one), or that it begins or
    /// that begin it: `psuh` → push, `stauts` → status, `conflict` → conflicts.
    static func suggestions(for word: String, among commands: [String]) -> [String] {
        let scored = commands.map { ($0, distance(Array(word), Array($0))) }
        let best = scored.filter { $0.1 <= 2 || $0.0.hasPrefix(word) && word.count >= 3 || word.hasPrefix($0.0) }
        return best.sorted { ($0.1, $0.0) < ($1.1, $1.0) }.prefix(2).map(\.0)
    }

    /// Optimal string alignment distance: insertions, deletions, substitutions and adjacent
    /// transpositions each cost one.
    private static func distance(_ a: [Character], _ b: [Character]) -> Int {
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
