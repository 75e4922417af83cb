import TSyncModel

/// How the listing commands (`tables`, `queries`) print their rows, one piece so they agree:
/// `--json` prints one array (an empty one too); otherwise the rows as text, and an empty list
/// says so, with how to fill it, on a terminal only, so a script reading stdout gets nothing
/// where there is nothing (as `conflicts` and `user list` do).
enum Listing {
    static func print<Row>(
        _ rows: [Row], json: Bool, as jsonValue: ([Row]) -> JSONValue, whenEmpty hint: String, text: ([Row]) -> String
    ) {
        if json {
            Console.write(JSONReports.line(jsonValue(rows)))
            return
        }
        guard !rows.isEmpty else {
            if Console.stdoutIsTerminal { Console.note(hint) }
            return
        }
        Console.write(text(rows))
    }
}
