import TSyncQuery

/// `X-TSync-Page-End: <updatedAt> <id>`: where a page in pull order ends, sent with the headers so
/// that a client can ask for the next page before this one's body has arrived (docs/DESIGN.md §8).
/// Only for a page in `updatedAt, id` order without `$select` (the order in which the last record
/// is a position, and a page that shows it), with records; only when both texts are visible
/// ASCII (an id of other characters would not come through a header as it is).
enum PageEnd {
    static let order = [SortKey(field: "updatedAt"), SortKey(field: "id")]

    static func value(_ page: RecordPage, _ query: RecordQuery) -> String? {
        guard query.select == nil, query.orderBy == order, let end = page.end, isVisible(end.updatedAt), isVisible(end.id) else {
            return nil
        }
        return end.updatedAt + " " + end.id
    }

    private static func isVisible(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }
}
