import GRDB
import Testing
import TSyncModel

@testable import TSyncEngine

/// Errors settled a page to a transaction (`LocalStore.settle(_:dryRun:pageSize:)`) against the
/// general way, one transaction per error: the same outcomes and the same store, row for row; and
/// the server's copies read several requests at a time (`ServerCopies`).
@Suite struct SettlePagesTests {
    static let count = 9

    /// `count` items pulled at v1 and changed here: even ones on `text`, odd ones on `note`.
    private func changed() throws -> (TemporaryStore, [String]) {
        let temporary = try TemporaryStore()
        let ids = (0..<Self.count).map { "x\($0)" }
        try temporary.store.applyServerPage(
            table: "todo", records: ids.map { LocalStore.serverRecord($0, ["text": "base", "note": "n"], version: "v1") })
        for (index, id) in ids.enumerated() {
            _ = try temporary.store.update(
                table: "todo", id: id, fields: index % 2 == 0 ? ["text": .string("ours \(index)")] : ["note": "ours"])
        }
        return (temporary, ids)
    }

    /// `count` items pulled at v1 and changed here, each push answered 412 with a server copy:
    /// even items clash on `text` (a merge refuses them), odd ones do not.
    private func conflicted() throws -> (TemporaryStore, [Settlement]) {
        let (temporary, ids) = try changed()
        let store = temporary.store
        var theirs: [String: TSyncModel.Record] = [:]
        for id in ids { theirs[id] = LocalStore.serverRecord(id, ["text": .string("theirs \(id)"), "note": "n"], version: "v2") }
        let claimed = try store.claimOperations(tables: nil, limit: 100)
        try store.completeOperations(
            claimed.map { AnsweredOperation($0, .failed(status: 412, message: "m", serverRecord: theirs[$0.operation.itemID])) })
        let resolutions: [Resolution] = [.merge, .merge, .ours, .theirs, .discard, .cancel, .merge, .merge, .theirs]
        let settlements = try store.conflictDetails().enumerated().map { index, details in
            Settlement(
                errorID: details.error.id, with: resolutions[index % resolutions.count],
                theirs: theirs[details.error.itemID].map(ServerCopy.record), prefer: index == 7 ? .ours : nil)
        }
        #expect(settlements.count == Self.count)
        return (temporary, settlements)
    }

    /// Every row settling may write.
    private func rows(_ store: LocalStore) throws -> [String] {
        try store.rowsForComparison(also: [("errors", "SELECT id, operation_seq, http_status FROM errors ORDER BY id")])
    }

    @Test(arguments: [1, 2, 4, LocalStore.settlePageSize])
    func aPageSettlesAsOneTransactionPerError(pageSize: Int) throws {
        let (general, settlements) = try conflicted()
        var alone: [ResolutionOutcome] = []
        for settlement in settlements {
            alone.append(
                try general.store.settle(
                    errorID: settlement.errorID, with: settlement.resolution, theirs: settlement.theirs, prefer: settlement.prefer))
        }
        let (paged, same) = try conflicted()
        let outcomes = try paged.store.settle(same, pageSize: pageSize).map(\.outcome)
        #expect(outcomes == alone)
        #expect(outcomes.contains { if case .refused = $0 { true } else { false } }, "a refused merge is among them")
        #expect(try rows(paged.store) == rows(general.store))
    }

    @Test func aDryRunChangesNothing() throws {
        let (temporary, settlements) = try conflicted()
        let before = try rows(temporary.store)
        let dry = try temporary.store.settle(settlements, dryRun: true, pageSize: 4)
        #expect(try rows(temporary.store) == before)
        let (other, same) = try conflicted()
        #expect(dry.map(\.outcome) == (try other.store.settle(same, pageSize: 4).map(\.outcome)))
    }

    /// An error that cannot be settled stops the rest; those before it stay settled, in its page too.
    @Test func aFailureKeepsWhatWasSettledBefore() throws {
        let (temporary, settlements) = try conflicted()
        var broken = settlements
        broken.insert(Settlement(errorID: 999_999, with: .theirs, theirs: nil), at: 5)
        #expect(throws: TSyncError.self) { try temporary.store.settle(broken, pageSize: 4) }
        let (general, same) = try conflicted()
        for settlement in same[..<5] {
            _ = try general.store.settle(
                errorID: settlement.errorID, with: settlement.resolution, theirs: settlement.theirs, prefer: settlement.prefer)
        }
        #expect(try rows(temporary.store) == rows(general.store))
    }

    /// A page reads its errors at its start; an item met again after the page settled it is read
    /// again: the same error twice stops there (settled already), as it does a page apart.
    @Test(arguments: [1, LocalStore.settlePageSize])
    func anItemMetTwiceInAPageIsReadAgain(pageSize: Int) throws {
        let (temporary, settlements) = try conflicted()
        let twice = Array(settlements[..<3]) + [settlements[1]] + settlements[3...]
        #expect {
            try temporary.store.settle(twice, pageSize: pageSize)
        } throws: { error in
            (error as? TSyncError)?.message.contains("no error \(settlements[1].errorID)") == true
        }
        let (general, same) = try conflicted()
        for settlement in same[..<3] {
            _ = try general.store.settle(
                errorID: settlement.errorID, with: settlement.resolution, theirs: settlement.theirs, prefer: settlement.prefer)
        }
        #expect(try rows(temporary.store) == rows(general.store))
    }

    /// A push's policy settles without reading each item back, to the same rows and outcomes.
    @Test func outcomesAloneSettleTheSame() throws {
        let (general, settlements) = try conflicted()
        let full = try general.store.settle(settlements).map(\.outcome)
        let (lean, same) = try conflicted()
        #expect(try lean.store.settleOutcomes(same, pageSize: 4) == full)
        #expect(try rows(lean.store) == rows(general.store))
    }

    /// `count` items pulled at v1 and changed here, claimed, each answered 412 with a server copy
    /// at v2: even items clash on `text` with it, odd ones do not; x4 has a newer copy a pull
    /// skipped (v3), and x5 a second change queued behind the one in flight.
    private func answered() throws -> (TemporaryStore, [AnsweredOperation]) {
        let (temporary, ids) = try changed()
        let store = temporary.store
        try store.applyServerPage(
            table: "todo", records: [LocalStore.serverRecord("x4", ["text": "skipped", "note": "n"], version: "v3", at: 3_000)])
        let claimed = try store.claimOperations(tables: nil, limit: 100)
        #expect(claimed.map(\.operation.itemID) == ids, "each changed item is in flight, once")
        _ = try store.update(table: "todo", id: "x5", fields: ["priority": 2])
        return (
            temporary,
            claimed.map { outgoing in
                let id = outgoing.operation.itemID
                let theirs = LocalStore.serverRecord(id, ["text": .string("theirs \(id)"), "note": "n"], version: "v2", at: 2_000)
                return AnsweredOperation(outgoing, .failed(status: 412, message: "m", serverRecord: theirs))
            }
        )
    }

    /// A push's policy settles the 412s it meets as their answers are applied
    /// (`completeOperations(_:settling:)`): the same store and outcomes as recording each answer
    /// in the error table and settling the errors on the copies they carried, as the policy's
    /// general path does, for every policy, refused merges (left as errors) among them.
    @Test(arguments: [ConflictPolicy.merge, .ours, .theirs], [ThreeWayMerge.Side?.none, .ours])
    func answersSettledAtOnceSettleAsTheErrorTable(policy: ConflictPolicy, prefer: ThreeWayMerge.Side?) throws {
        let policies = ConflictPolicies(onConflict: policy, prefer: prefer)
        let (general, results) = try answered()
        try general.store.completeOperations(results)
        let details = try general.store.conflictDetails()
        let resolution = try #require(policy.resolution)
        let outcomes = try general.store.settleOutcomes(
            details.map { Settlement(errorID: $0.error.id, with: resolution, theirs: $0.theirs.map(ServerCopy.record), prefer: prefer) })
        var expected: [String: ResolutionOutcome] = [:]
        for (details, outcome) in zip(details, outcomes) { expected[details.error.itemID] = outcome }

        let (atOnce, same) = try answered()
        let settled = try atOnce.store.completeOperations(same, settling: policies)
        var got: [String: ResolutionOutcome] = [:]
        for answered in same { got[answered.outgoing.operation.itemID] = settled[answered.outgoing.operation.seq]?.outcome }
        #expect(got == expected)
        #expect(settled.values.allSatisfy { $0.policy == policy })
        if policy == .merge && prefer == nil {
            #expect(expected.values.contains { if case .refused = $0 { true } else { false } }, "a refused merge is among them")
            #expect(
                try settledRows(atOnce.store).contains { $0.hasPrefix("skipped") && $0.contains("x4") }, "a refused merge changes nothing")
        }
        #expect(try settledRows(atOnce.store) == settledRows(general.store))
    }

    /// A settle that fails as the answers are applied rolls their transaction back: the
    /// answers are applied again with every failure recorded, as without a policy.
    @Test func aSettleThatFailsAtOnceLeavesEveryAnswerRecorded() throws {
        let (plain, results) = try answered()
        try plain.store.completeOperations(results)
        let (failing, same) = try answered()
        try failing.store.pool.write { db in
            try db.execute(
                sql: "CREATE TEMP TRIGGER refuse_x3 BEFORE UPDATE ON records WHEN NEW.id = 'x3' BEGIN SELECT RAISE(ABORT, 'refused'); END")
        }
        let settled = try failing.store.completeOperations(same, settling: ConflictPolicies(onConflict: .merge, prefer: .ours))
        #expect(settled.isEmpty)
        #expect(try settledRows(failing.store) == settledRows(plain.store))
    }

    /// Every row settling may write; errors without their number and time, which depend on the
    /// order they were recorded in.
    private func settledRows(_ store: LocalStore) throws -> [String] {
        try store.rowsForComparison(also: [
            (
                "errors",
                "SELECT operation_seq, tbl, item_id, kind, http_status, message, sent_item, server_item FROM errors ORDER BY operation_seq"
            ),
            ("skipped", "SELECT tbl, id, item FROM skipped ORDER BY tbl, id"),
        ])
    }

    /// Copies of more items than one request asks for, in two tables, some missing on the server.
    @Test func serverCopiesAreReadInSeveralRequests() async throws {
        let remote = try ScriptedRemote()
        let stored = (0..<70).map { LocalStore.serverRecord("r\($0)", ["n": .int($0)], version: "v") }
        remote.scriptedPage = { request in
            let asked = Set(request.filter?.matches(of: /id eq '([^']*)'/).map { String($0.1) } ?? [])
            #expect(asked.count <= ServerCopies.idsPerRequest)
            return Page(records: request.table == "a" ? stored.filter { asked.contains($0.id) } : [], nextLink: nil)
        }
        let keys = (0..<100).map { ItemKey(table: "a", id: "r\($0)") } + [ItemKey(table: "b", id: "r1")]
        let found = try await ServerCopies.read(keys, from: remote)
        #expect(found.count == 70)
        #expect(found[ItemKey(table: "a", id: "r42")]?.fields["n"] == .int(42))
        #expect(found[ItemKey(table: "b", id: "r1")] == nil)
    }
}
