import TSyncQuery

/// `X-TSync-Page-End: <updatedAt> <id>`: where a page in pull order ends, sent with the headers so
/// that a client can ask for the next page before this one's body has arrived (docs/DESIGN.md §8).
/// Only for a page in `updatedAt, id` order without `$select` (the order in which the last record
/// is a position, and a page that shows it), with records; only when both texts are visible
/// ASCII (an id of other characters would not come through a header as it is).
enum PageEnd {
    static let order = [SortKey(field: "updatedAt"), SortKey(field: "id")]

    /// Where the page ends, `<updatedAt> <id>`, whatever the id's characters: a stream goes on
    /// from it (`PageBody.position`); `header` says whether it may be sent.
    static func value(_ page: RecordPage, _ query: RecordQuery) -> String? {
        guard query.select == nil, query.orderBy == order, let end = page.end, !end.updatedAt.isEmpty, !end.id.isEmpty else { return nil }
        return end.updatedAt + " " + end.id
    }

    /// `value` when it can go in a header as it is.
    static func header(_ value: String) -> String? {
        guard let space = value.firstIndex(of: " ") else { return nil }
        return isVisible(value[..<space]) && isVisible(value[value.index(after: space)...]) ? value : nil
    }

    private static func isVisible(_ text: Substring) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }
}
