/// ArgumentParser's own error messages in tsync's style (docs/DESIGN.md §3): after
/// "tsync: error: " a message starts lowercase, and a typo hint reads as tsync's own hints do.
/// ArgumentParser writes sentences ("Error: Unknown option '--jsn'. Did you mean '--json'?") and
/// has no hook to word them otherwise, so the first line is rewritten on its way out:
/// "unknown option '--jsn'; did you mean '--json'?".
enum UsageErrorText {
    /// `line` without ArgumentParser's "Error: ", its first word lowercase, its hint after "; ".
    static func restyle(_ line: String) -> String {
        var text = line.hasPrefix("Error: ") ? String(line.dropFirst("Error: ".count)) : line
        text = text.replacingOccurrences(of: ". Did you mean ", with: "; did you mean ")
        return lowercasingFirstWord(text)
    }

    /// "Unknown option …" → "unknown option …". A word with more capitals than its first letter
    /// is a name or an acronym (PostgreSQL, JSON, URL) and stays as it is, as git keeps them.
    static func lowercasingFirstWord(_ text: String) -> String {
        let word = text.prefix { $0.isLetter }
        guard let first = word.first, first.isUppercase, word.dropFirst().allSatisfy(\.isLowercase) else { return text }
        return first.lowercased() + text.dropFirst()
    }
}
