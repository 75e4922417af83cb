import Synchronization
import Testing
import TSyncModel

@testable import TSyncServer

/// The server reads a walk's next page while its request is on the way (`PullReadAhead`,
/// docs/DESIGN.md §10): a page read ahead goes to its own walk's request, once, and what a
/// client can make the server hold stays bounded.
struct PullReadAheadTests {
    @Test func aFullPageReadsTheNextAheadForThatWalkOnly() async throws {
        let reads = Reads(top: 2)
        let readAhead = PullReadAhead<PullPage.Page>(lifetime: Self.never)
        let first = Self.walk()
        _ = try await readAhead.page(first, read: reads.read)
        let next = first.next(after: PullPage.Start(updatedAt: "2026-01-01T00:00:00.000Z", id: "from-start"))
        try await reads.waitFor(2)
        #expect(reads.walks == [first, next], "the next page is read without a request")

        var otherUser = next
        otherUser.owner = "mallory"
        _ = try await readAhead.page(otherUser, read: reads.read)
        try await reads.waitFor(4)
        #expect(reads.walks[2] == otherUser, "another user's walk reads for itself (and reads its own next page ahead)")
        #expect(readAhead.pagesTaken.load(ordering: .relaxed) == 0)

        _ = try await readAhead.page(next, read: reads.read)
        #expect(readAhead.pagesTaken.load(ordering: .relaxed) == 1, "the walk's own request took the page read ahead")
        try await reads.waitFor(5)
        _ = try await readAhead.page(next, read: reads.read)
        #expect(reads.walks[5] == next, "a page read ahead is taken once: the same request again reads")
        #expect(readAhead.pagesTaken.load(ordering: .relaxed) == 1)
    }

    @Test func aShortPageReadsNothingAhead() async throws {
        let reads = Reads(top: 5)
        let readAhead = PullReadAhead<PullPage.Page>()
        var walk = Self.walk()
        walk.top = 10
        _ = try await readAhead.page(walk, read: reads.read)
        // That nothing is read ahead is shown only by time passing without it.
        try await Task.sleep(for: .milliseconds(50))
        #expect(reads.walks == [walk])
    }

    @Test func aFullPageOverTheByteBoundReadsNothingAhead() async throws {
        let reads = Reads(top: 2)
        let first = Self.walk()
        let bytes = try #require(try await reads.read(first)?.walkedBytes)
        let bounded = PullReadAhead<PullPage.Page>(lifetime: Self.never, maximumBytes: bytes - 1)
        _ = try await bounded.page(first, read: reads.read)
        // That nothing is read ahead is shown only by time passing without it.
        try await Task.sleep(for: .milliseconds(50))
        #expect(reads.walks == [first, first], "the test's own read, then the request's; none ahead")
        let within = PullReadAhead<PullPage.Page>(lifetime: Self.never, maximumBytes: bytes)
        _ = try await within.page(first, read: reads.read)
        try await reads.waitFor(4)
        #expect(reads.walks.count == 4, "a page of the bound reads the next ahead")
    }

    @Test func atMostCapacityWalksWait() async throws {
        let reads = Reads(top: 2)
        let readAhead = PullReadAhead<PullPage.Page>(capacity: 3, lifetime: Self.never)
        for index in 0..<10 {
            var walk = Self.walk()
            walk.table = "t\(index)"
            _ = try await readAhead.page(walk, read: reads.read)
        }
        try await reads.waitFor(13)
        // That no fourteenth read comes is shown only by time passing without it.
        try await Task.sleep(for: .milliseconds(50))
        #expect(reads.walks.count == 13, "10 requests and 3 pages read ahead, not 10")
    }

    @Test func aReadAheadThatFailsOrWaitedTooLongIsReadAgain() async throws {
        let reads = Reads(top: 2, failingAhead: true)
        let readAhead = PullReadAhead<PullPage.Page>(lifetime: Self.never)
        let first = Self.walk()
        let next = first.next(after: PullPage.Start(updatedAt: "2026-01-01T00:00:00.000Z", id: "from-start"))
        _ = try await readAhead.page(first, read: reads.read)
        try await reads.waitFor(2)
        let page = try await readAhead.page(next, read: reads.read)
        #expect(page?.written.count == 2, "the request read for itself")
        #expect(readAhead.pagesTaken.load(ordering: .relaxed) == 0)

        let slow = Reads(top: 2)
        let shortLived = PullReadAhead<PullPage.Page>(lifetime: .milliseconds(20))
        _ = try await shortLived.page(first, read: slow.read)
        try await slow.waitFor(2)
        try await Task.sleep(for: .milliseconds(60))  // past the 20 ms lifetime under test
        _ = try await shortLived.page(next, read: slow.read)
        #expect(shortLived.pagesTaken.load(ordering: .relaxed) == 0, "a page that waited past its lifetime is read again")
        #expect(slow.walks.filter { $0 == next }.count == 2)
    }

    /// A lifetime no run of a test reaches, however loaded the machine: only the test of the
    /// lifetime lets a page expire.
    private static let never = Duration.seconds(3600)

    private static func walk() -> PullPage.Walk {
        PullPage.Walk(table: "t", owner: nil, includeDeleted: true, start: PullPage.Start(updatedAt: "", id: ""), top: 2)
    }
}

/// A stand-in for the database: each read gives `top` records, the last named after where the
/// page started; it remembers every walk it was asked for.
private final class Reads: Sendable {
    private let asked = Mutex<[PullPage.Walk]>([])
    private let top: Int
    /// Reads of pages after the first fail (as a read ahead whose connection broke would).
    private let failingAhead: Bool

    init(top: Int, failingAhead: Bool = false) {
        self.top = top
        self.failingAhead = failingAhead
    }

    var walks: [PullPage.Walk] { asked.withLock { $0 } }

    var read: @Sendable (PullPage.Walk) async throws -> PullPage.Page? {
        { [self] walk in
            let count = asked.withLock { asked in
                asked.append(walk)
                return asked.count
            }
            if failingAhead, count == 2 { throw TSyncError.failure("the connection broke") }
            var written = WrittenRecords()
            for index in 0..<top { try written.append(.parsed(Record(id: "r\(index)", fields: [:]))) }
            let last = PullPage.Start(updatedAt: "2026-01-01T00:00:00.000Z", id: walk.start.id.isEmpty ? "from-start" : walk.start.id + "+")
            return PullPage.Page(written: written, last: last)
        }
    }

    /// Waits until `count` reads were asked for (reads ahead run on their own tasks).
    func waitFor(_ count: Int) async throws {
        try await eventually(timeout: .seconds(10)) { walks.count >= count }
        #expect(walks.count >= count, "\(walks.count) reads, expected \(count)")
    }
}
