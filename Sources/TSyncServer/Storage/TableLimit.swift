import TSyncModel

/// The tables one account may create (`--max-tables`, docs/DESIGN.md §10.1). Both backends
/// register each table with the account whose write created it (`tsync_tables`); a write that
/// would create one more than the limit is refused with `WriteOutcome.overTableLimit`, and the
/// tables that exist stay writable for everyone.
enum TableLimit {
    /// The refusal of `account`'s write that would create `table`.
    static func refusal(account: String, table: String, limit: Int) -> WriteOutcome {
        .overTableLimit(
            "the account \(Identifiers.quoted(account)) has created \(limit) tables, the most this server allows one account, so table \(Identifiers.quoted(table)) cannot be created: write to a table that exists, or ask the server's operator to raise the limit (--max-tables)"
        )
    }
}
