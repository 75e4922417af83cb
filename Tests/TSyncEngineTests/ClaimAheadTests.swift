import Testing
import TSyncModel

@testable import TSyncEngine

/// A batched push's claim read ahead on a reader connection (`LocalStore.readClaim`), and a
/// round's completion joined with the next claim in one transaction, each against the steps they
/// replace: the same store, the same outcome.
@Suite struct ClaimAheadTests {
    /// What a claim sends and saves of an operation, comparable across two stores.
    private struct Sent: Equatable {
        var seq: Int64
        var id: String
        var kind: OperationKind
        var item: [String: JSONValue]
        var version: String?
        var sentBefore: Bool

        init(_ outgoing: OutgoingOperation) {
            (seq, id, kind) = (outgoing.operation.seq, outgoing.operation.itemID, outgoing.operation.kind)
            (item, version, sentBefore) = (outgoing.item, outgoing.version, outgoing.sentBefore)
        }
    }

    /// A store's queue, records and errors after a claim, comparable across two stores: the items
    /// saved with the operations in flight are what a push that died now would send again.
    private struct Outcome: Equatable {
        var claimed: [Sent]
        var queue: [String]
        var saved: [Sent]
        var records: [String: [String: JSONValue]]
        var errors: [String]

        init(_ claimed: [OutgoingOperation], _ temporary: TemporaryStore) throws {
            let store = temporary.store
            self.claimed = claimed.map(Sent.init)
            queue = try store.pendingOperations().map { "\($0.seq) \($0.kind.rawValue) \($0.itemID) \($0.state.rawValue)" }
            saved = try temporary.reopen().claimOperations(tables: nil, limit: 100).filter(\.sentBefore).map(Sent.init)
            var records: [String: [String: JSONValue]] = [:]
            for record in try store.query(table: "todo") {
                records[record.id] = record.fields.merging(["version": record.system.version.map { .string($0) } ?? .null]) { $1 }
            }
            self.records = records
            errors = try store.operationErrors().map { "\($0.operationSeq) \($0.httpStatus ?? 0)" }
        }
    }

    /// `todo/x` pulled at v1 and changed, ten new items, and a first round of four claimed
    /// (x, n0, n1, n2), as a push has it on its way.
    private func storeWithARoundOut() throws -> (TemporaryStore, LocalStore.ClaimedRound) {
        let temporary = try TemporaryStore()
        let store = temporary.store
        try store.applyServerPage(table: "todo", records: [LocalStore.serverRecord("x", ["text": "base", "note": "n"], version: "v1")])
        _ = try store.update(table: "todo", id: "x", fields: ["text": "ours"])
        for n in 0..<10 { try store.insert("todo", ["id": .string("n\(n)"), "text": .string("new \(n)")]) }
        try store.delete(table: "todo", ids: ["n9"])
        let first = try store.claimOperations(LocalStore.ClaimRequest(tables: nil, limit: 4, skipping: []))
        #expect(first.operations.map(\.operation.itemID) == ["x", "n0", "n1", "n2"])
        return (temporary, first)
    }

    /// With nothing written in between, the claim takes the operations read ahead, and they are
    /// what its own read takes: the same operations sent, the same items saved.
    @Test func aClaimReadAheadIsTheClaimItsTransactionMakes() async throws {
        var outcomes: [Outcome] = []
        for readAhead in [false, true] {
            let (temporary, first) = try storeWithARoundOut()
            var request = LocalStore.ClaimRequest(tables: nil, limit: 4, skipping: first.operations)
            if readAhead {
                request.ahead = await temporary.store.readClaim(request, after: first.mark)
                #expect(request.ahead != nil)
            }
            let claimed = try temporary.store.claimOperations(request)
            #expect(claimed.wereReadAhead == readAhead)
            #expect(claimed.operations.map(\.operation.itemID) == ["n3", "n4", "n5", "n6"])
            outcomes.append(try Outcome(claimed.operations, temporary))
        }
        #expect(outcomes[0] == outcomes[1])
    }

    /// A write between the read ahead and the claim's transaction, by another process (another
    /// connection) or by this one's own, may change, collapse or cancel an operation read: the
    /// claim reads again, and sends the edit, never the copy read before it (which the
    /// completion would then write over the edit), and never an insert the edit cancelled.
    @Test(arguments: ["edit", "delete", "edit here"])
    func aWriteAfterTheReadAheadIsSeenByTheClaim(writer: String) async throws {
        var outcomes: [Outcome] = []
        for readAhead in [false, true] {
            let (temporary, first) = try storeWithARoundOut()
            var request = LocalStore.ClaimRequest(tables: nil, limit: 4, skipping: first.operations)
            if readAhead { request.ahead = await temporary.store.readClaim(request, after: first.mark) }
            switch writer {
            case "edit": _ = try temporary.reopen().update(table: "todo", id: "n3", fields: ["text": "edited"])
            case "delete": try temporary.reopen().delete(table: "todo", ids: ["n4"])
            default: _ = try temporary.store.update(table: "todo", id: "n3", fields: ["text": "edited"])
            }
            let claimed = try temporary.store.claimOperations(request)
            #expect(!claimed.wereReadAhead)
            if writer == "delete" {
                #expect(claimed.operations.map(\.operation.itemID) == ["n3", "n5", "n6", "n7"])
            } else {
                #expect(claimed.operations.first?.item["text"] == "edited")
            }
            outcomes.append(try Outcome(claimed.operations, temporary))
        }
        #expect(outcomes[0] == outcomes[1])
    }

    /// A read ahead that skipped less than the claim must, or was cut short, is not taken.
    @Test func aReadAheadForAnotherClaimIsNotTaken() async throws {
        let (temporary, first) = try storeWithARoundOut()
        let store = temporary.store
        var request = LocalStore.ClaimRequest(tables: nil, limit: 4, skipping: first.operations)
        request.ahead = await store.readClaim(LocalStore.ClaimRequest(tables: nil, limit: 4, skipping: []), after: first.mark)
        let claimed = try store.claimOperations(request)
        #expect(!claimed.wereReadAhead && claimed.operations.map(\.operation.itemID) == ["n3", "n4", "n5", "n6"])

        var rest = LocalStore.ClaimRequest(tables: nil, limit: 4, skipping: first.operations + claimed.operations)
        rest.ahead = await store.readClaim(rest, after: claimed.mark)
        let last = try store.claimOperations(rest)
        #expect(!last.wereReadAhead && last.operations.map(\.operation.itemID) == ["n7", "n8"], "n9 was cancelled")
    }

    /// A round's completion, the release of what it did not deliver and the next claim in one
    /// transaction leave what the three transactions left, and the claim sees the completion: the
    /// change queued behind `x` goes against the version the answer brought.
    @Test func aCompletionAndTheNextClaimInOneTransactionAreTheSteps() throws {
        var outcomes: [Outcome] = []
        for joined in [false, true] {
            let (temporary, first) = try storeWithARoundOut()
            let store = temporary.store
            _ = try store.update(table: "todo", id: "x", fields: ["text": "later"])
            let round = first.operations
            let x = LocalStore.serverRecord("x", ["text": "ours", "note": "n"], version: "v2")
            let n0 = LocalStore.serverRecord("n0", ["text": "new 0"], version: "w1")
            let n1 = LocalStore.serverRecord("n1", ["text": "theirs"], version: "w2")
            let answers: [(OutgoingOperation, PushVerdict)] = [
                (round[0], .succeeded(serverRecord: x, alreadyApplied: false)),
                (round[1], .succeeded(serverRecord: n0, alreadyApplied: false)),
                (round[2], .failed(status: 409, message: "taken", serverRecord: n1)),
            ]
            let next = LocalStore.ClaimRequest(tables: nil, limit: 10, skipping: [])
            let claimed: [OutgoingOperation]
            if joined {
                let done = try store.completeOperations(answers, settling: nil, fieldsKept: [], releasing: [round[3]], thenClaiming: next)
                claimed = try #require(done.claimed).operations
            } else {
                try store.completeOperations(answers)
                try store.releaseOperations([round[3]])
                claimed = try store.claimOperations(next).operations
            }
            #expect(claimed.map(\.operation.itemID) == ["n2", "n3", "n4", "n5", "n6", "n7", "n8", "x"], "n1 waits behind its error")
            #expect(claimed.last?.version == "v2" && claimed.last?.item["text"] == "later")
            outcomes.append(try Outcome(claimed, temporary))
        }
        #expect(outcomes[0] == outcomes[1])
    }
}
