/// A cheap look at a `$filter` before it is parsed: parsers, renderers and SQLite recurse once
/// per level of nesting, so a hostile filter made of thousands of `(` or `-` must be refused
/// before it reaches them rather than exhaust a thread's stack.
enum FilterGuard {
    static let maximumNesting = 100

    /// Throws 400 when the filter has more than `maximumNesting` open parentheses at once, or more
    /// than that many unary operators (`-`, `not`) in all. Text inside '…' literals is skipped.
    static func check(_ filter: String) throws(APIError) {
        var depth = 0
        var unary = 0
        var inString = false
        var word = ""
        for character in filter {
            if inString {
                if character == "'" { inString = false }  // an escaped '' leaves and re-enters at once
                continue
            }
            if character.isLetter || character.isNumber || character == "_" {
                word.append(character)
            } else {
                if word.lowercased() == "not" { unary += 1 }
                word = ""
            }
            switch character {
            case "'": inString = true
            case "(": depth += 1
            case ")": depth -= 1
            case "-": unary += 1
            default: break
            }
            if depth > maximumNesting || unary > maximumNesting {
                throw .badRequest("$filter nests more than \(maximumNesting) levels deep: simplify it")
            }
        }
    }
}
