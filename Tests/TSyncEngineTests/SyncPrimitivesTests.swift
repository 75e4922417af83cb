import GRDB
import Testing
import TSyncModel

@testable import TSyncEngine

/// The store-side steps push and pull build on, through the one path push uses: claim (mark in
/// flight), complete (apply the answers) and release.
@Suite struct SyncPrimitivesTests {
    /// `String.sameBytes` and `ItemKey`'s equality against the views' bytes compared one by one, on ids
    /// that differ only in their last byte, in length, in normalization (equal to Swift's `==`),
    /// small (stored inline) and large, built from substrings, and empty.
    @Test func itemKeysCompareTheBytesOfTheirTableAndId() {
        let large = String(repeating: "x", count: 40)
        let strings = [
            "", "a", "item-0000001", "item-0000002", "item-000000", "item-0000001 ", "\u{E9}", "e\u{301}", "日本", "日本語",
            large + "1", large + "2", large, String(("<" + large + "1>").dropFirst().dropLast()), String("item-0000001x".dropLast()),
        ]
        for a in strings {
            for b in strings {
                let general = a.utf8.elementsEqual(b.utf8)
                #expect(a.sameBytes(as: b) == general, "\(a) \(b)")
                #expect((ItemKey(table: "t", id: a) == ItemKey(table: "t", id: b)) == general)
                #expect((ItemKey(table: a, id: "i") == ItemKey(table: b, id: "i")) == general)
            }
        }
        #expect("\u{E9}" == "e\u{301}" && ItemKey(table: "t", id: "\u{E9}") != ItemKey(table: "t", id: "e\u{301}"))
        let items = Set(strings.map { ItemKey(table: "t", id: $0) } + strings.map { ItemKey(table: "t", id: $0) })
        #expect(items.count == strings.count - 2)  // the two substrings are two of the others
    }

    /// A claim with rounds on their way leaves their operations out by their state, and takes
    /// those an earlier push left in flight as it meets them (`LocalStore.selectPushable`): each
    /// claim of a push takes what the rule takes, read from the queue as it stands (queue order,
    /// the first operation of each item, none of a skipped operation's item, none skipped), with
    /// operations left in flight before and after the rounds', later changes of items on their
    /// way, a settled operation pending again, and two tables.
    @Test func claimsWithRoundsOnTheirWayTakeWhatTheRuleTakes() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        for table in ["todo", "notes"] {
            try store.insert(table: table, objects: (0..<40).map { ["id": .string("\(table)-\($0)"), "n": .int(Int64($0))] })
        }
        for index in stride(from: 0, to: 40, by: 3) { _ = try store.update(table: "todo", id: "todo-\(index)", fields: ["n": 100]) }
        // A push that died: all claimed, some completed, the rest left in flight (spread over the queue).
        let dead = try store.claimOperations(tables: nil, limit: 1_000)
        try store.completeOperations(
            dead.filter { $0.operation.seq % 4 != 1 }.map { AnsweredOperation($0, .succeeded(serverRecord: nil, alreadyApplied: false)) })
        let leftInFlight = try store.pendingOperations().filter { $0.state == .inflight }
        #expect(dead.count == 80 && leftInFlight.count == 20)
        for index in stride(from: 1, to: 40, by: 4) { _ = try store.update(table: "notes", id: "notes-\(index)", fields: ["n": 200]) }

        /// What a claim of `limit` skipping `skipped` takes, by the rule, from the queue as it is.
        func expected(_ skipped: [[OutgoingOperation]], limit: Int) throws -> [Int64] {
            let queue = try store.read { db in
                try Row.fetchAll(db, sql: "SELECT seq, tbl, item_id FROM operations ORDER BY seq").map {
                    ($0[0] as Int64, ItemKey(table: $0[1], id: $0[2]))
                }
            }
            let skippedSeqs = Set(skipped.joined().map(\.operation.seq))
            var items = Set(skipped.joined().map { ItemKey(table: $0.operation.table, id: $0.operation.itemID) })
            var taken: [Int64] = []
            for (seq, item) in queue where taken.count < limit && !skippedSeqs.contains(seq) && items.insert(item).inserted {
                taken.append(seq)
            }
            return taken
        }
        var onItsWay: [[OutgoingOperation]] = []
        var settled: [OutgoingOperation] = []
        var claims = 0
        var leftoversTaken = 0
        while true {
            let limit = 2 + claims % 3
            let want = try expected(onItsWay + [settled], limit: limit)
            let claimed = try store.claimOperations(tables: nil, limit: limit, skipping: onItsWay + [settled])
            #expect(claimed.map(\.operation.seq) == want, "claim \(claims)")
            claims += 1
            leftoversTaken += claimed.filter(\.sentBefore).count
            if !claimed.isEmpty { onItsWay.append(claimed) }
            guard claimed.isEmpty || onItsWay.count == 3 else { continue }
            guard !onItsWay.isEmpty else { break }
            var oldest = onItsWay.removeFirst()
            if claims == 6, let first = oldest.first {
                // Settled as its answer came: pending again, its item waits for the push again.
                try store.write { db in
                    try db.execute(sql: "UPDATE operations SET state = 'pending' WHERE seq = ?", arguments: [first.operation.seq])
                }
                settled.append(first)
                oldest.removeFirst()
            }
            try store.completeOperations(oldest.map { AnsweredOperation($0, .succeeded(serverRecord: nil, alreadyApplied: false)) })
        }
        #expect(leftoversTaken == 20 && claims > 12, "\(claims) claims")
        #expect(Set(try store.pendingOperations().map(\.itemID)) == [try #require(settled.first).operation.itemID])
    }

    @Test func completingAnInsertTakesTheServerRecordAndDropsTheBase() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.insert("todo", ["id": "a", "text": "one"])
        let outgoing = try #require(try store.claimOperations(tables: nil, limit: 10).first)
        #expect(outgoing.version == nil && !outgoing.sentBefore)
        let server = LocalStore.serverRecord("a", ["text": "one"], version: "v1")
        try store.completeOperations([AnsweredOperation(outgoing, .succeeded(serverRecord: server, alreadyApplied: false))])
        #expect(try store.pendingOperations().isEmpty)
        #expect(try store.record(table: "todo", id: "a")?.system.version == "v1")
        #expect(try store.base(table: "todo", id: "a") == nil)
    }

    @Test func completionWithANewerLocalChangeKeepsLocalFieldsAndRebases() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.insert("todo", ["id": "a", "text": "one"])
        let outgoing = try #require(try store.claimOperations(tables: nil, limit: 10).first)
        try store.update(table: "todo", id: "a", fields: ["text": "two"])
        let server = LocalStore.serverRecord("a", ["text": "one"], version: "v1")
        try store.completeOperations([AnsweredOperation(outgoing, .succeeded(serverRecord: server, alreadyApplied: false))])

        let record = try #require(try store.record(table: "todo", id: "a"))
        #expect(record.fields == ["text": "two"], "the newer local change is kept")
        #expect(record.system.version == "v1", "but the item knows the server's version")
        #expect(try store.base(table: "todo", id: "a") == server)
        let update = try #require(try store.claimOperations(tables: nil, limit: 10).first)
        #expect(update.operation.kind == .update)
        #expect(update.version == "v1")
        #expect(update.item == ["id": "a", "text": "two"])
    }

    @Test func completingADeleteClearsTheItem() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.applyServerPage(table: "todo", records: [LocalStore.serverRecord("s", ["a": 1], version: "v1")])
        try store.delete(table: "todo", ids: ["s"])
        let outgoing = try #require(try store.claimOperations(tables: nil, limit: 10).first)
        #expect(outgoing.operation.kind == .delete && outgoing.version == "v1")
        try store.completeOperations([AnsweredOperation(outgoing, .succeeded(serverRecord: nil, alreadyApplied: false))])
        #expect(try store.pendingOperations().isEmpty)
        #expect(try store.base(table: "todo", id: "s") == nil)
        #expect(try store.record(table: "todo", id: "s") == nil)
    }

    @Test func releasePutsAnUndeliveredOperationBackButNeverOneSentBefore() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.insert("todo", ["id": "a"])
        try store.releaseOperations(try store.claimOperations(tables: nil, limit: 10))
        #expect(try store.pendingOperations()[0].state == .pending)
        // Pending again: a new change collapses into it.
        try store.update(table: "todo", id: "a", fields: ["b": 2])
        #expect(try store.queue("todo", "a") == ["insert"])

        // Claimed, and the push dies; the next push claims it again (sentBefore) and cannot
        // deliver it: it may have arrived the first time, so it stays in flight.
        _ = try store.claimOperations(tables: nil, limit: 10)
        let again = try temporary.reopen().claimOperations(tables: nil, limit: 10)
        #expect(again.map(\.sentBefore) == [true])
        try store.releaseOperations(again)
        #expect(try store.queue("todo", "a") == ["insert(inflight)"])
        try store.update(table: "todo", id: "a", fields: ["b": 3])
        #expect(try store.queue("todo", "a") == ["insert(inflight)", "update"])
    }

    @Test func resetItemEndsEveryLocalChangeOfTheItem() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let server = LocalStore.serverRecord("s", ["text": "server"], version: "v1")
        try store.applyServerPage(table: "todo", records: [server])
        try store.update(table: "todo", id: "s", fields: ["text": "mine"])
        try store.fail("s", status: 412)
        // --theirs: the server's newer copy wins.
        let theirs = LocalStore.serverRecord("s", ["text": "theirs"], version: "v2")
        try store.resetItem(table: "todo", id: "s", to: theirs)
        #expect(try store.record(table: "todo", id: "s") == theirs)
        #expect(try store.pendingOperations().isEmpty)
        #expect(try store.operationErrors().isEmpty)
        #expect(try store.base(table: "todo", id: "s") == nil)
        // --discard of a new item: it goes back to nothing.
        try store.insert("todo", ["id": "n"])
        try store.resetItem(table: "todo", id: "n", to: nil)
        #expect(try store.record(table: "todo", id: "n") == nil)
        #expect(try store.pendingOperations().isEmpty)
        #expect(throws: TSyncError.self) { try store.resetItem(table: "todo", id: "s", to: server.with(id: "x")) }
    }

    @Test func errorsBelongToOneOperationAndGoWithIt() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.insert(table: "todo", objects: [["id": "a"], ["id": "b"]])
        try store.fail("a", status: 409, serverRecord: LocalStore.serverRecord("a", ["x": 1], version: "v9"))
        let recorded = try #require(try store.operationErrors().first)
        #expect(recorded.table == "todo" && recorded.itemID == "a" && recorded.kind == .insert)
        #expect(recorded.serverItem?["x"] == 1 && recorded.sentItem == ["id": "a"])

        let after = try store.pendingOperations()
        #expect(after.map(\.state) == [.pending, .pending], "the failed one is pending again, the other was released")
        #expect(after[0].error?.httpStatus == 409)
        #expect(after[1].error == nil)
        #expect(try store.tables()[0].errors == 1)
        #expect(try store.status().errorCount == 1)

        // An error can be dropped (the operation stays) ...
        #expect(try store.deleteError(id: recorded.id))
        #expect(try store.pendingOperations().count == 2)
        #expect(try store.operationError(id: recorded.id) == nil)
        // ... the operation then fails again, with a new error ...
        try store.fail("a", status: 412)
        #expect(try store.operationErrors().map(\.httpStatus) == [412])

        // ... and an operation that leaves the queue takes its error along.
        try store.fail("b", status: 400)
        try store.delete(table: "todo", ids: ["b"])  // insert → delete: both vanish
        #expect(try store.operationErrors().map(\.itemID) == ["a"])
    }

    @Test func aServerPageIsAppliedAroundPendingItems() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.applyServerPage(
            table: "todo",
            records: [
                LocalStore.serverRecord("keep", ["v": 1], version: "1"),
                LocalStore.serverRecord("gone", ["v": 1], version: "1"),
                LocalStore.serverRecord("mine", ["v": 1], version: "1"),
            ])
        try store.update(table: "todo", id: "mine", fields: ["v": 2])
        var deleted = LocalStore.serverRecord("gone", [:], version: "2")
        deleted.system.deleted = true
        let query = SavedQuery(
            table: "todo", queryID: "all", filter: nil,
            checkpoint: Checkpoint(updatedAt: Timestamp(millisecondsSinceEpoch: 5_000), id: "mine"),
            lastPullAt: Timestamp(millisecondsSinceEpoch: 6_000))
        let result = try store.applyServerPage(
            table: "todo",
            records: [
                LocalStore.serverRecord("keep", ["v": 9], version: "2"), deleted,
                LocalStore.serverRecord("mine", ["v": 9], version: "2"),
                LocalStore.serverRecord("fresh", ["v": 9], version: "1"),
            ],
            saving: query)
        #expect(result == PageResult(upserted: 2, removed: 1, skipped: 1))
        #expect(try store.query(table: "todo").map(\.id) == ["fresh", "keep", "mine"])
        #expect(try store.record(table: "todo", id: "keep")?.fields == ["v": 9])
        #expect(try store.record(table: "todo", id: "mine")?.fields == ["v": 2])
        #expect(try store.base(table: "todo", id: "mine")?.system.version == "1", "the base stays what the user changed")
        #expect(try store.savedQuery(table: "todo", queryID: "all") == query)
    }

    /// Pages written together in one transaction (`applyServerPages`, a pull whose pages come
    /// faster than it writes them) leave the store as the same pages written one transaction
    /// each: the same results, records, bases, queue, skipped copies and checkpoint, with pages
    /// that name an id again, delete what a page before wrote, skip a pending item, and bring
    /// nothing.
    @Test func pagesWrittenTogetherLeaveTheStoreAsPagesWrittenOneByOne() async throws {
        func seeded() throws -> TemporaryStore {
            let temporary = try TemporaryStore()
            try temporary.store.applyServerPage(
                table: "todo",
                records: [
                    LocalStore.serverRecord("keep", ["v": 1], version: "1"),
                    LocalStore.serverRecord("gone", ["v": 1], version: "1"),
                    LocalStore.serverRecord("mine", ["v": 1], version: "1"),
                ])
            try temporary.store.update(table: "todo", id: "mine", fields: ["v": 2])
            return temporary
        }
        func deleted(_ id: String, version: String, at ms: Int64) -> TSyncModel.Record {
            var record = LocalStore.serverRecord(id, [:], version: version, at: ms)
            record.system.deleted = true
            return record
        }
        func query(after id: String, at ms: Int64) -> SavedQuery {
            SavedQuery(
                table: "todo", queryID: "all", filter: nil,
                checkpoint: Checkpoint(updatedAt: Timestamp(millisecondsSinceEpoch: ms), id: id),
                lastPullAt: Timestamp(millisecondsSinceEpoch: ms + 100))
        }
        let pages: [(records: [StoredRecord], query: SavedQuery?)] = [
            (
                [
                    LocalStore.serverRecord("keep", ["v": 9], version: "2", at: 2_000), deleted("gone", version: "2", at: 2_000),
                    LocalStore.serverRecord("mine", ["v": 9], version: "2", at: 2_000),
                    LocalStore.serverRecord("fresh", ["v": 9], version: "1", at: 2_000),
                ].map(StoredRecord.init), query(after: "mine", at: 2_000)
            ),
            (
                [
                    LocalStore.serverRecord("fresh", ["v": 10, "w": "x"], version: "2", at: 3_000),
                    deleted("keep", version: "3", at: 3_000),
                    LocalStore.serverRecord("mine", ["v": 10], version: "3", at: 3_000),
                    LocalStore.serverRecord("new", ["t": [1, 2]], version: "1", at: 3_000), deleted("never", version: "1", at: 3_000),
                ].map(StoredRecord.init), query(after: "new", at: 3_000)
            ),
            ([], query(after: "new", at: 3_000)),
            ([LocalStore.serverRecord("gone", ["back": true], version: "4", at: 4_000)].map(StoredRecord.init), nil),
        ]
        let general = try seeded()
        let together = try seeded()
        let expected = try pages.map { page in
            try general.store.applyServerPage(table: "todo", stored: page.records, saving: page.query)
        }
        #expect(try await together.store.applyServerPages(table: "todo", pages) == expected)
        let also: [(label: String, sql: String)] = [
            ("skipped", "SELECT tbl, id, item, updated_at FROM skipped ORDER BY tbl, id"),
            ("queries", "SELECT * FROM queries ORDER BY tbl, query_id"), ("tables", "SELECT name FROM tables ORDER BY name"),
        ]
        #expect(try together.store.rowsForComparison(also: also) == general.store.rowsForComparison(also: also))
        #expect(expected.map(\.skipped) == [1, 1, 0, 0] && expected.map(\.removed) == [1, 1, 0, 0])
    }

    /// The checkpoint's id order by `memcmp` is the general order of UTF-8 bytes, for ids held
    /// inline and on the heap, equal prefixes, composed and decomposed accents, and bytes above
    /// 0x7F (where a signed comparison would go wrong).
    @Test func checkpointIdsCompareByTheirBytesAsTheGeneralPathDoes() {
        let ids = [
            "", "a", "b", "ab", "aa", "A", "item-0000001", "item-0000002", "item-00000010",
            "a-much-longer-identifier-than-fits-inline", "a-much-longer-identifier-than-fits-inlinf",
            "a-much-longer-identifier-than-fits-inline-and-more", "\u{E9}", "e\u{301}", "e", "f", "\u{7F}", "\u{80}",
            "\u{FFFF}", "\u{1F600}", "z\u{1F600}z", "z\u{1F600}", "with\u{0}nul", "with",
        ]
        let time = Timestamp(millisecondsSinceEpoch: 1_000)
        for a in ids {
            for b in ids {
                let general = a.utf8.lexicographicallyPrecedes(b.utf8)
                #expect(Checkpoint.bytesPrecede(a, b) == general, "\(a.debugDescription) < \(b.debugDescription)")
                #expect((Checkpoint(updatedAt: time, id: a) < Checkpoint(updatedAt: time, id: b)) == general)
            }
        }
    }

    /// A page in the store's form moves the position as the same page of records does.
    @Test func aStoredPageMovesThePositionAsItsRecordsDo() throws {
        func record(_ id: String, _ milliseconds: Int64) -> TSyncModel.Record {
            TSyncModel.Record(id: id, fields: [:], system: SystemProperties(updatedAt: Timestamp(millisecondsSinceEpoch: milliseconds)))
        }
        let start = PullPosition(checkpoint: Checkpoint(updatedAt: Timestamp(millisecondsSinceEpoch: 5), id: "m"))
        let pages: [[TSyncModel.Record]] = [
            [record("n", 5), record("a", 6), record("b", 6), record("c", 7)],
            [record("b", 5), record("a", 5)],
            [record("n", 5), record("a", 6), record("a-much-longer-identifier-than-fits-inline", 6)],
            [],
        ]
        for page in pages {
            let general = try Checkpoint.position(after: page, from: start)
            #expect(try Checkpoint.position(afterStored: page.map(StoredRecord.init), from: start) == general)
        }
        #expect(try Checkpoint.position(after: pages[1], from: start).skip == 2)
    }

    /// A `Link` value of ASCII bytes is read from its bytes as the general path reads it through
    /// Foundation: tsync serve's own header, crafted ones, and 20,000 random values of the
    /// characters that matter (separators, brackets, blanks, quotes, CR LF, upper case).
    @Test func anASCIILinkIsReadAsTheGeneralPathReadsIt() {
        var values = [
            "<http://127.0.0.1:8080/tables/items?$top=1000&$orderby=updatedAt%2Cid&$skip=1000>; rel=next",
            #"</tables/items?%24top=1000&%24skip=1000>; rel="next""#, "<a>;rel=next", "<a> ; REL = NEXT ", "<a>; rel=prev",
            " ;<a>;rel=next", "<a>;;rel=next", "<>;rel=next", "<;rel=next", ">;rel=next", "<a>,<b>;rel=next", "<a>\t;\trel=next\t",
            "<a>;rel=next\r\n", "<a>; rel=\"next\", <b>; rel=next", "", ",", ";", " ", "<a>;rel= n e x t", "<a>;r e l=next",
            "<a>; rel=nexT; title=x", "<a>; title=x; rel=next", "< a >;rel=next", "<a>;rel=\"next", "\t<a>\t;rel=next",
        ]
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        let alphabet = [
            "<", ">", ",", ";", " ", "\t", "\r\n", "\"", "=", "r", "e", "l", "n", "x", "t", "R", "E", "L", "N", "X", "T", "a", "/",
        ]
        for _ in 0..<20_000 {
            var value = ""
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            for _ in 0..<Int(seed >> 59) + 4 {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                value += alphabet[Int(seed >> 33) % alphabet.count]
            }
            values.append(value)
            values.append("<" + value + ">;rel=next")
            values.append("<x>;" + value)
        }
        var found = 0
        for value in values {
            let general = LinkHeader.next(in: value)
            #expect(LinkHeader.nextInASCII(value) == general, "\(value.debugDescription)")
            if general != nil { found += 1 }
        }
        #expect(found > 1_000)
    }

    @Test func savedQueriesRoundTrip() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        let first = SavedQuery(table: "todo", queryID: "q", filter: "done eq false")
        try store.saveQuery(first)
        var second = first
        second.checkpoint = Checkpoint(updatedAt: Timestamp(millisecondsSinceEpoch: 1), id: "z")
        try store.saveQuery(second)
        try store.saveQuery(SavedQuery(table: "notes", queryID: "q", filter: nil))
        #expect(try store.savedQueries().map(\.table) == ["notes", "todo"])
        #expect(try store.savedQuery(table: "todo", queryID: "q") == second)
        #expect(try store.deleteQuery(table: "todo", queryID: "q"))
        #expect(try store.savedQuery(table: "todo", queryID: "q") == nil)
    }

    @Test func purgeIsRefusedWithPendingWorkUnlessForced() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.applyServerPage(
            table: "todo",
            records: [
                LocalStore.serverRecord("a", ["done": true], version: "1"),
                LocalStore.serverRecord("b", ["done": false], version: "1"),
                LocalStore.serverRecord("c", ["done": true], version: "1"),
            ],
            saving: SavedQuery(table: "todo", queryID: "all", filter: nil))
        try store.update(table: "todo", id: "c", fields: ["note": "mine"])
        try store.insert("todo", ["id": "d", "done": false])
        #expect(throws: TSyncError.self) { try store.purge(table: "todo") }
        #expect(throws: TSyncError.self) { try store.purge(table: "todo", filter: "done eq true") }
        #expect(try store.query(table: "todo").count == 4)

        // Forced, with a filter: only the purged items' operations go.
        let result = try store.purge(table: "todo", filter: "done eq true", force: true)
        #expect(result == PurgeResult(records: 2, ids: result.ids, operations: 1, queries: 0), "a filtered purge keeps the saved query")
        #expect(result.ids.sorted() == ["a", "c"])
        #expect(try store.query(table: "todo").map(\.id) == ["b", "d"])
        #expect(try store.pendingOperations().map(\.itemID) == ["d"])
        #expect(try store.base(table: "todo", id: "c") == nil)
        #expect(try store.savedQueries().count == 1)

        // Nothing pending among the purged: no force needed.
        #expect(try store.purge(table: "todo", filter: "id eq 'b'").records == 1)
        // Without a filter, pending deletes count too.
        try store.applyServerPage(table: "todo", records: [LocalStore.serverRecord("e", [:], version: "1")])
        try store.delete(table: "todo", ids: ["e"])
        #expect(try store.purge(table: "todo", force: true) == PurgeResult(records: 1, ids: ["d"], operations: 2, queries: 1))
        #expect(try store.pendingOperations().isEmpty)
    }

    /// A claim saves each record's item from its stored text (`LocalStore.savedItem`) where the
    /// text names only user fields; the JSON functions (`claimFromRecords`) save the rest. Both
    /// must save the same values, which the next push re-sends if no answer came.
    @Test func aClaimSavesFromTheStoredTextTheItemTheJSONFunctionsSave() throws {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.insert(
            table: "odd",
            objects: [
                ["id": "unicode", "s": "é e\u{301} 🦊 \u{7F}", "ключ": "значение"],
                ["id": "escapes", "s": "\"quoted\" \\ back\n\t\u{01} </script>"],
                ["id": "numbers", "a": .double(100), "b": .double(-0.0), "c": .int(.max), "d": .int(.min), "e": .double(1.5e-300)],
                ["id": "nested", "o": ["x": [1, ["y": nil], [], [:]], "": true], "z": false],
                ["id": "empty"],
            ])
        try store.applyServerPage(table: "odd", records: [LocalStore.serverRecord("pulled", ["n": 1], version: "v1")])
        try store.update(table: "odd", id: "pulled", fields: ["n": 2])
        try store.insert(table: "odd", objects: [["id": "written"], ["id": "names-version"], ["id": "names-id"]])
        // Stored texts as the store does not write them, but may hold (an older store's, a hand-made one).
        try store.write { db in
            for (id, body) in [
                ("written", #"{ "b" : 1e2, "a":-0,"s":"\u00e9\/" , "n":[1.0,2E+1]}"#),
                ("names-version", #"{"version":"mine","text":"t"}"#),
                ("names-id", #"{"id":"other","createdAt":"2020-01-01T00:00:00.000Z","x":1}"#),
            ] {
                try db.execute(sql: "UPDATE records SET body = ? WHERE tbl = 'odd' AND id = ?", arguments: [body, id])
            }
            try db.execute(sql: "UPDATE records SET version = 'v9' WHERE tbl = 'odd' AND id = 'names-version'")
        }
        func saved() throws -> [Int64: JSONValue] {
            try store.read { db in
                try Row.fetchAll(db, sql: "SELECT seq, item FROM operations WHERE state = 'inflight'").reduce(into: [:]) { saved, row in
                    saved[row[0]] = try JSONParser.parse(row[1] as String)
                }
            }
        }
        let claimed = try store.claimOperations(tables: nil, limit: 100)
        #expect(claimed.count == 9)
        let fromText = try saved()
        try store.write { db in
            let written = try String.fetchOne(db, sql: "SELECT o.item FROM operations o WHERE o.item_id = 'written'")
            #expect(written?.contains(#""b" : 1e2, "a":-0"#) == true, "taken from the text as it is")
        }

        try store.releaseOperations(claimed)
        let seqs = JSONSerializer.string(.array(claimed.map { .int($0.operation.seq) }))
        try store.write { db in try db.execute(sql: LocalStore.claimFromRecords, arguments: [seqs]) }
        let byFunctions = try saved()
        #expect(fromText.count == 9 && fromText == byFunctions)
        for outgoing in claimed {
            var item = outgoing.item
            if let version = outgoing.version { item["version"] = .string(version) }
            #expect(fromText[outgoing.operation.seq] == .object(item), "\(outgoing.operation.itemID)")
        }
        #expect(claimed.first { $0.operation.itemID == "pulled" }?.version == "v1")
        #expect(claimed.first { $0.operation.itemID == "names-version" }?.version == "v9")

        // Claimed again after a push that died: exactly the items the first claim took.
        let again = try temporary.reopen().claimOperations(tables: nil, limit: 100)
        #expect(again.map(\.sentBefore) == Array(repeating: true, count: 9))
        #expect(again.map(\.item) == claimed.map(\.item) && again.map(\.version) == claimed.map(\.version))
    }

    /// A claim saves its items, and a completion the server's properties and the delivered log, a
    /// chunk of rows per statement (`ChunkedRows`); record by record (`StoreRows.saveRecord`)
    /// is the general path. Over whole chunks and a part, two tables, ids to escape, answers
    /// that changed a record's fields and a record gone meanwhile, both leave the same store.
    @Test func chunkedClaimAndCompletionSaveWhatRecordByRecordSaves() throws {
        func ids(_ table: String) -> [String] {
            (0..<75).map { "\(table)-\($0)" + ["", " é", "'q'", "日本", "e\u{301}", "🦊"][$0 % 6] }
        }
        func prepared() throws -> (TemporaryStore, [(OutgoingOperation, TSyncModel.Record?)]) {
            let temporary = try TemporaryStore()
            let store = temporary.store
            for table in ["todo", "notes"] {
                try store.insert(table: table, objects: ids(table).enumerated().map { ["id": .string($1), "n": .int(Int64($0))] })
            }
            let claimed = try store.claimOperations(tables: nil, limit: 1_000)
            #expect(claimed.count == 150)
            // What each claim saved: the item sent, as the next push re-sends it.
            let saved = try store.read { db in
                try Row.fetchAll(db, sql: "SELECT seq, item FROM operations WHERE state = 'inflight'").reduce(into: [Int64: JSONValue]()) {
                    $0[$1[0]] = try JSONParser.parse($1[1] as String)
                }
            }
            #expect(saved.count == 150 && claimed.allSatisfy { saved[$0.operation.seq] == .object($0.item) })
            let answered = claimed.enumerated().map { index, outgoing -> (OutgoingOperation, TSyncModel.Record?) in
                var fields = outgoing.item
                fields.removeValue(forKey: "id")
                if index % 7 == 3 { fields["added"] = "by the server" }
                let record = LocalStore.serverRecord(
                    outgoing.operation.itemID, fields, version: "v\(index)", at: 1_000 + Int64(index) * 86_400_000)
                return (outgoing, index % 11 == 5 ? nil : record)
            }
            // Gone meanwhile (as no command of tsync does): saved again from the answer.
            try store.write { db in try db.execute(sql: "DELETE FROM records WHERE tbl = 'todo' AND id IN ('todo-1 é', 'todo-69日本')") }
            return (temporary, answered)
        }
        func contents(_ store: LocalStore) throws -> [[String?]] {
            func rows(_ sql: String, _ columns: Int) throws -> [[String?]] {
                try store.read { db in try Row.fetchAll(db, sql: sql).map { row in (0..<columns).map { row[$0] as String? } } }
            }
            return try rows("SELECT tbl, id, body, created_at, updated_at, version FROM records ORDER BY tbl, id", 6)
                + rows("SELECT tbl, item_id, kind, version FROM pushes ORDER BY id", 4)
        }

        let (chunked, answered) = try prepared()
        try chunked.store.completeOperations(answered.map { AnsweredOperation($0, .succeeded(serverRecord: $1, alreadyApplied: false)) })
        #expect(try chunked.store.pendingOperations().isEmpty)

        let (general, sameAnswers) = try prepared()
        try general.store.write { db in
            try db.execute(sql: "DELETE FROM operations")
            for (outgoing, answer) in sameAnswers {
                if let answer {
                    try StoreRows.saveRecord(db, table: outgoing.operation.table, record: answer, localFields: outgoing.item)
                }
                try db.execute(
                    sql: "INSERT INTO pushes (tbl, item_id, kind, version, pushed_at) VALUES (?, ?, ?, ?, 0)",
                    arguments: [
                        outgoing.operation.table, outgoing.operation.itemID, outgoing.operation.kind.rawValue, answer?.system.version,
                    ])
            }
        }
        let expected = try contents(general.store)
        #expect(expected.count == 300 && expected.contains { $0[1] == "todo-1 é" && $0[5] == "v1" })
        #expect(try contents(chunked.store) == expected)
    }
}
