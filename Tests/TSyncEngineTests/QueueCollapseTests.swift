import Testing
import TSyncModel

@testable import TSyncEngine

/// The collapse table of docs/DESIGN.md §1, row by row, on the pure rule.
@Suite struct QueueCollapseTests {
    private func outcome(_ newest: OperationKind?, inFlight: Bool = false, _ new: OperationKind) throws
        -> QueueCollapse.Outcome
    {
        try QueueCollapse.outcome(newest: newest, inFlight: inFlight, new: new, table: "t", id: "x")
    }

    @Test func noPendingOperationAppends() throws {
        for kind in OperationKind.allCases {
            #expect(try outcome(nil, kind) == .append(kind))
        }
    }

    @Test func collapsingRows() throws {
        #expect(try outcome(.insert, .update) == .keep(.insert))
        #expect(try outcome(.insert, .delete) == .cancel)
        #expect(try outcome(.update, .update) == .keep(.update))
        #expect(try outcome(.update, .delete) == .keep(.delete))
    }

    @Test func rejectedRows() throws {
        for (pending, new) in [
            (OperationKind.insert, OperationKind.insert), (.update, .insert), (.delete, .insert), (.delete, .update),
            (.delete, .delete),
        ] {
            #expect(throws: TSyncError.self) { try outcome(pending, new) }
            do {
                _ = try outcome(pending, new)
            } catch let error as TSyncError {
                #expect(error.kind == .invalidInput)
                #expect(error.message.contains("t/x"))
            }
        }
    }

    @Test func inFlightOperationsAreNeverMergedInto() throws {
        #expect(try outcome(.insert, inFlight: true, .update) == .append(.update))
        #expect(try outcome(.insert, inFlight: true, .delete) == .append(.delete))
        #expect(try outcome(.update, inFlight: true, .update) == .append(.update))
        #expect(try outcome(.update, inFlight: true, .delete) == .append(.delete))
        // A delete being pushed still blocks reuse of the id.
        #expect(throws: TSyncError.self) { try outcome(.delete, inFlight: true, .insert) }
    }
}
