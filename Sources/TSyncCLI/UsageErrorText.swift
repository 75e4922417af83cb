import TSyncModel

/// ArgumentParser's own error messages in tsync's style (docs/DESIGN.md §3): after
/// "tsync: error: " a message starts lowercase, and a typo hint reads as tsync's own hints do.
/// ArgumentParser writes sentences ("Error: Unknown option '--jsn'. Did you mean '--json'?") and
/// has no hook to word them otherwise, so the first line is rewritten on its way out:
/// "unknown option '--jsn'; did you mean '--json'?". The two it words least like tsync are
/// reworded whole, as tsync's own `validate()` words the same mistakes:
/// - "Value to be set with flag '--theirs' had already been set with flag '--ours'" → "choose one
///   of --ours and --theirs";
/// - "The value 'mrege' is invalid for '--on-conflict <POLICY>'. Please provide one of 'fail',
///   'ours', 'theirs' or 'merge'." → "invalid value 'mrege' for --on-conflict: expected fail, ours,
///   theirs or merge; did you mean 'merge'?".
enum UsageErrorText {
    /// `line` without ArgumentParser's "Error: ", its first word lowercase, its hint after "; ".
    static func restyle(_ line: String) -> String {
        var text = line.hasPrefix("Error: ") ? String(line.dropFirst("Error: ".count)) : line
        text = text.replacingOccurrences(of: ". Did you mean ", with: "; did you mean ")
        return lowercasingFirstWord(exclusiveFlags(text) ?? invalidValue(text) ?? text)
    }

    /// "Value to be set with flag 'B' had already been set with flag 'A'": two flags of which
    /// one may be given.
    private static func exclusiveFlags(_ text: String) -> String? {
        guard let match = text.wholeMatch(of: #/Value to be set with (.+) had already been set with (.+)/#) else { return nil }
        return "choose one of \(flag(match.2)) and \(flag(match.1))"
    }

    /// "flag '--ours'" → "--ours"; "flag 'o' in '-oq'" → "-o".
    private static func flag(_ element: Substring) -> String {
        if let match = element.wholeMatch(of: #/flag '(.)' in '.*'/#) { return "-" + match.1 }
        if let match = element.wholeMatch(of: #/flag '(.*)'/#) { return String(match.1) }
        return String(element)
    }

    /// "The value 'V' is invalid for '--NAME <VALUE>'…": the option by its name, and the values
    /// it takes as a list to choose from, with the one meant when the value is a typo of it.
    private static func invalidValue(_ text: String) -> String? {
        guard let match = text.wholeMatch(of: #/The value '(.*)' is invalid for '([^']*)'(.*)/#) else { return nil }
        let value = String(match.1)
        let target = match.2.hasPrefix("-") ? String(match.2.prefix { $0 != " " }) : String(match.2)
        var rest = String(match.3)
        if rest.hasPrefix(". Please provide one of the following:") {
            rest = ": expected one of these:"
        } else if rest.hasPrefix(". Please provide one of "), rest.hasSuffix(".") {
            let list = rest.dropFirst(". Please provide one of ".count).dropLast()
            let values = list.matches(of: #/'([^']*)'/#).map { String($0.1) }
            rest = ": expected " + list.replacingOccurrences(of: "'", with: "") + Spelling.didYouMean(value, among: values)
        }
        return "invalid value '\(value)' for \(target)\(rest)"
    }

    /// "Unknown option …" → "unknown option …". A word with more capitals than its first letter
    /// is a name or an acronym (PostgreSQL, JSON, URL) and stays as it is, as git keeps them.
    static func lowercasingFirstWord(_ text: String) -> String {
        let word = text.prefix { $0.isLetter }
        guard let first = word.first, first.isUppercase, word.dropFirst().allSatisfy(\.isLowercase) else { return text }
        return first.lowercased() + text.dropFirst()
    }
}
