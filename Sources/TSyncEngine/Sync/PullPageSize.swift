import Synchronization

/// How many records a pull asks for in each page: `--page-size` when the user chose it, else
/// `PullRequest.defaultPageSize` until the server says how many it takes (`X-TSync-Max-Top`,
/// docs/DESIGN.md §4), then as many as that, up to `PullRequest.largestPageSize`. Never more than
/// the server takes, so a server whose operator lowered `--max-top` is followed, not refused.
///
/// Shared by the pages asked ahead (`PageFetch`), which read it as they leave: a pull asks its
/// first pages at the default and the rest at the size learnt, and any size is a right page,
/// since the next page starts after the last record written, whatever the page before held.
final class PullPageSize: Sendable {
    private let chosen: Int?
    private let size: Mutex<Int>

    init(chosen: Int?) {
        self.chosen = chosen
        size = Mutex(chosen ?? PullRequest.defaultPageSize)
    }

    var current: Int { size.withLock { $0 } }

    /// What a page's answer said of the server's largest page, if anything.
    func learn(_ largest: Int?) {
        guard let largest, largest >= 1 else { return }
        let limit = chosen ?? PullRequest.largestPageSize
        size.withLock { $0 = min(largest, limit) }
    }
}
