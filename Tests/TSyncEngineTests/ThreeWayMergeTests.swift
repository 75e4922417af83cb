import Testing
import TSyncModel

@testable import TSyncEngine

@Suite("Three-way merge")
struct ThreeWayMergeTests {
    @Test func disjointFieldChangesAreBothKept() {
        let base: [String: JSONValue] = ["text": "milk", "complete": false, "count": 1]
        let ours: [String: JSONValue] = ["text": "oat milk", "complete": false, "count": 1]
        let theirs: [String: JSONValue] = ["text": "milk", "complete": true, "count": 1]
        #expect(ThreeWayMerge.merge(base: base, ours: ours, theirs: theirs) == .merged(["text": "oat milk", "complete": true, "count": 1]))
    }

    @Test func sameFieldChangedDifferentlyIsAConflictAndNothingIsMerged() {
        let base: [String: JSONValue] = ["text": "milk", "complete": false]
        let ours: [String: JSONValue] = ["text": "oat milk", "complete": true]
        let theirs: [String: JSONValue] = ["text": "soy milk", "complete": false]
        guard case .conflicting(let conflicts) = ThreeWayMerge.merge(base: base, ours: ours, theirs: theirs) else {
            Issue.record("expected a conflict")
            return
        }
        #expect(conflicts == [.init(field: "text", base: "milk", ours: "oat milk", theirs: "soy milk")])
    }

    @Test func sameChangeOnBothSidesIsNotAConflict() {
        let base: [String: JSONValue] = ["text": "milk"]
        let both: [String: JSONValue] = ["text": "oat milk", "n": 2]
        #expect(ThreeWayMerge.merge(base: base, ours: both, theirs: ["text": "oat milk", "n": 2.0]) == .merged(both))
    }

    @Test func addedAndRemovedFieldsMergeLikeValues() {
        let base: [String: JSONValue] = ["a": 1, "gone": "x"]
        let ours: [String: JSONValue] = ["a": 1, "new": true]  // removed "gone", added "new"
        let theirs: [String: JSONValue] = ["a": 2, "gone": "x"]
        #expect(ThreeWayMerge.merge(base: base, ours: ours, theirs: theirs) == .merged(["a": 2, "new": true]))
    }

    @Test func systemPropertiesNeverTakePart() {
        let ours: [String: JSONValue] = ["a": 1, "version": "v1"]
        let theirs: [String: JSONValue] = ["a": 1, "version": "v2"]
        #expect(ThreeWayMerge.merge(base: ["a": 1], ours: ours, theirs: theirs) == .merged(["a": 1]))
    }

    @Test func withoutABaseOnlyEqualFieldsMerge() {
        #expect(ThreeWayMerge.merge(base: nil, ours: ["a": 1], theirs: ["b": 2]) == .merged(["a": 1, "b": 2]))
        guard case .conflicting(let conflicts) = ThreeWayMerge.merge(base: nil, ours: ["a": 1], theirs: ["a": 2]) else {
            Issue.record("expected a conflict")
            return
        }
        #expect(conflicts.map(\.field) == ["a"])
    }

    @Test func deletions() {
        let base: [String: JSONValue] = ["a": 1]
        #expect(ThreeWayMerge.merge(base: base, ours: nil, theirs: nil) == .deleted)
        #expect(ThreeWayMerge.merge(base: base, ours: nil, theirs: ["a": 1]) == .deleted)
        #expect(ThreeWayMerge.merge(base: base, ours: nil, theirs: ["a": 2]) == .deleteConflict(deletedBy: .ours))
        #expect(ThreeWayMerge.merge(base: base, ours: ["a": 1], theirs: nil) == .deleted)
        #expect(ThreeWayMerge.merge(base: base, ours: ["a": 3], theirs: nil) == .deleteConflict(deletedBy: .theirs))
    }

    @Test func differingFieldsTreatMissingAsNull() {
        #expect(ThreeWayMerge.differingFields(["a": 1, "b": nil], ["a": 1]) == [])
        #expect(ThreeWayMerge.differingFields(["a": 1, "b": "x"], ["a": 2, "c": 3, "updatedAt": "z"]) == ["a", "b", "c"])
        #expect(ThreeWayMerge.differingFields(nil, ["a": 1]) == ["a"])
    }
}

@Suite("Push verdicts and conflict classes")
struct PushVerdictTests {
    private func server(_ fields: [String: JSONValue], deleted: Bool = false) -> Record {
        Record(id: "x", fields: fields, system: SystemProperties(version: "v9", deleted: deleted))
    }

    @Test func acceptedAnswersSucceed() {
        let record = server(["a": 1])
        #expect(
            PushVerdict.classify(kind: .update, sent: ["a": 1], answer: .accepted(status: 200, record: record))
                == .succeeded(serverRecord: record, alreadyApplied: false))
        #expect(
            PushVerdict.classify(kind: .delete, sent: nil, answer: .accepted(status: 204, record: nil))
                == .succeeded(serverRecord: nil, alreadyApplied: false))
    }

    @Test func insertConflictWithTheSameItemIsALostResponse() {
        let record = server(["text": "milk", "n": 1])
        let answer = RemoteAnswer.rejected(status: 409, message: "exists", serverRecord: record)
        #expect(
            PushVerdict.classify(kind: .insert, sent: ["id": "x", "text": "milk", "n": 1.0], answer: answer)
                == .succeeded(serverRecord: record, alreadyApplied: true))
        #expect(
            PushVerdict.classify(kind: .insert, sent: ["id": "x", "text": "bread", "n": 1], answer: answer)
                == .failed(status: 409, message: "exists", serverRecord: record))
    }

    @Test func updatePreconditionFailureWithOurItemIsALostResponse() {
        let record = server(["text": "milk"])
        let answer = RemoteAnswer.rejected(status: 412, message: "stale", serverRecord: record)
        #expect(
            PushVerdict.classify(kind: .update, sent: ["id": "x", "text": "milk"], answer: answer)
                == .succeeded(serverRecord: record, alreadyApplied: true))
        #expect(
            PushVerdict.classify(kind: .update, sent: ["id": "x", "text": "soy"], answer: answer)
                == .failed(status: 412, message: "stale", serverRecord: record))
        let deleted = server(["text": "milk"], deleted: true)
        #expect(
            PushVerdict.classify(
                kind: .update, sent: ["id": "x", "text": "milk"], answer: .rejected(status: 412, message: "m", serverRecord: deleted))
                == .failed(status: 412, message: "m", serverRecord: deleted))
        #expect(
            PushVerdict.classify(kind: .update, sent: ["text": "milk"], answer: .rejected(status: 412, message: "m", serverRecord: nil))
                == .failed(status: 412, message: "m", serverRecord: nil))
    }

    @Test func deleteOfAnItemAlreadyGoneSucceeds() {
        #expect(
            PushVerdict.classify(kind: .delete, sent: nil, answer: .rejected(status: 404, message: "m", serverRecord: nil))
                == .succeeded(serverRecord: nil, alreadyApplied: true))
        let deleted = server([:], deleted: true)
        #expect(
            PushVerdict.classify(kind: .delete, sent: nil, answer: .rejected(status: 412, message: "m", serverRecord: deleted))
                == .succeeded(serverRecord: deleted, alreadyApplied: true))
        let live = server(["a": 1])
        #expect(
            PushVerdict.classify(kind: .delete, sent: nil, answer: .rejected(status: 412, message: "m", serverRecord: live))
                == .failed(status: 412, message: "m", serverRecord: live))
    }

    @Test func otherFailuresAreRecorded() {
        #expect(
            PushVerdict.classify(kind: .update, sent: [:], answer: .rejected(status: 404, message: "m", serverRecord: nil))
                == .failed(status: 404, message: "m", serverRecord: nil))
        #expect(
            PushVerdict.classify(kind: .insert, sent: [:], answer: .rejected(status: 500, message: "m", serverRecord: nil))
                == .failed(status: 500, message: "m", serverRecord: nil))
    }

    @Test func failureClasses() {
        #expect(FailureClass(kind: .insert, status: 409) == .alreadyExists)
        #expect(FailureClass(kind: .update, status: 409) == .versionConflict)
        #expect(FailureClass(kind: .delete, status: 412) == .versionConflict)
        #expect(FailureClass(kind: .update, status: 404) == .missing)
        #expect(FailureClass(kind: .insert, status: 400) == .rejected)
        #expect(
            FailureClass(kind: .insert, status: 400, message: "the item does not match the schema of table \"t\": $.a: is required")
                == .schema)
        #expect(FailureClass(kind: .update, status: 503) == .serverError)
        #expect(FailureClass(kind: .update, status: 412).isConflict)
        #expect(!FailureClass(kind: .update, status: 500).isConflict)
    }
}
