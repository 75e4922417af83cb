import TSyncModel

/// The query options of a table read: `$filter`, `$orderby` and `$select` (docs/DESIGN.md §4).
///
/// Keywords, operators and function names are lowercase, as OData v3 writes them; `AND` or
/// `StartsWith` are errors that name the lowercase spelling. Every error is
/// `TSyncError(.invalidInput, "invalid $<option> at position N: …")` with N counted in characters
/// from 1, so a server can answer 400 with it as is.
public enum ODataParser {
    /// Throws TSyncError(.invalidInput, "invalid $filter at position N: <what>") — N is 1-based.
    public static func parseFilter(_ text: String) throws(TSyncError) -> FilterExpression {
        do {
            return try FilterParser.parse(text)
        } catch {
            throw .invalidInput("invalid $filter at position \(error.position): \(error.message)")
        }
    }

    /// "a desc, b asc, c" → [SortKey]; field names validated. Directions are `asc` (the default)
    /// and `desc`; a field may appear once.
    public static func parseOrderBy(_ text: String) throws(TSyncError) -> [SortKey] {
        var keys: [SortKey] = []
        for item in try items(of: text, option: "$orderby") {
            let words = item.words
            guard let name = words.first else { throw item.error("expected a field name", option: "$orderby") }
            try validateName(name, option: "$orderby")
            var key = SortKey(field: name.text, descending: false)
            if words.count > 1 {
                switch words[1].text {
                case "asc": key.descending = false
                case "desc": key.descending = true
                default:
                    throw words[1].error("expected asc or desc after \(name.text), found '\(words[1].text)'", option: "$orderby")
                }
            }
            if words.count > 2 {
                throw words[2].error("expected ',' or the end after \(name.text) \(words[1].text)", option: "$orderby")
            }
            if keys.contains(where: { $0.field == key.field }) {
                throw name.error("\(name.text) appears more than once", option: "$orderby")
            }
            keys.append(key)
        }
        return keys
    }

    /// "a,b,c" → ["a","b","c"]; field names validated, repeats dropped.
    public static func parseSelect(_ text: String) throws(TSyncError) -> [String] {
        var names: [String] = []
        for item in try items(of: text, option: "$select") {
            let words = item.words
            guard let name = words.first else { throw item.error("expected a field name", option: "$select") }
            if words.count > 1 {
                throw words[1].error("expected ',' or the end after \(name.text)", option: "$select")
            }
            if name.text == "*" {
                throw name.error("'*' is not supported; leave out $select to get every field", option: "$select")
            }
            try validateName(name, option: "$select")
            if !names.contains(name.text) { names.append(name.text) }
        }
        return names
    }

    // MARK: Comma-separated lists

    /// A piece of the option text with its 1-based starting position.
    private struct Piece {
        var text: String
        var position: Int

        /// The whitespace-separated words of an item.
        var words: [Piece] {
            var result: [Piece] = []
            var word = ""
            var start = position
            for (offset, character) in text.enumerated() {
                if character.isWhitespace {
                    if !word.isEmpty { result.append(Piece(text: word, position: start)) }
                    word = ""
                } else {
                    if word.isEmpty { start = position + offset }
                    word.append(character)
                }
            }
            if !word.isEmpty { result.append(Piece(text: word, position: start)) }
            return result
        }

        func error(_ message: String, option: String) -> TSyncError {
            .invalidInput("invalid \(option) at position \(position): \(message)")
        }
    }

    private static func items(of text: String, option: String) throws(TSyncError) -> [Piece] {
        guard text.contains(where: { !$0.isWhitespace }) else {
            throw .invalidInput("invalid \(option) at position 1: it is empty; give at least one field name")
        }
        var pieces: [Piece] = []
        var current = Piece(text: "", position: 1)
        for (offset, character) in text.enumerated() {
            if character == "," {
                pieces.append(current)
                current = Piece(text: "", position: offset + 2)
            } else {
                current.text.append(character)
            }
        }
        pieces.append(current)
        for piece in pieces where piece.words.isEmpty {
            throw piece.error("empty item (remove the extra ',')", option: option)
        }
        return pieces
    }

    private static func validateName(_ name: Piece, option: String) throws(TSyncError) {
        guard Identifiers.isSimpleName(name.text) else {
            throw name.error(
                "invalid field name \(Identifiers.quoted(name.text)) (use letters, digits and '_', starting with a letter or '_')",
                option: option)
        }
    }
}
