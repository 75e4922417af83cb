import Testing
import TSyncModel

@testable import TSyncEngine

/// Pairing a batch answer's results with the operations sent (docs/DESIGN.md §4):
/// by `index` when the server names it, by position otherwise, and never when the pairing is in
/// doubt.
@Suite struct BatchResultsTests {
    let endpoint = try! RemoteEndpoint("http://127.0.0.1:1")
    let operations = [
        BatchOperation(method: .update, table: "todo", id: "a", item: ["id": "a", "text": "x"], version: "v1"),
        BatchOperation(method: .update, table: "todo", id: "b", item: ["id": "b", "text": "y"], version: "v1"),
    ]

    static func record(_ id: String, _ version: String) -> JSONValue {
        ["id": .string(id), "text": "theirs", "version": .string(version), "deleted": false]
    }

    @Test func resultsOutOfOrderArePairedByIndex() throws {
        let results: [JSONValue] = [
            ["index": 1, "id": "b", "status": 200, "item": Self.record("b", "v2")],
            ["index": 0, "id": "a", "status": 412, "item": Self.record("a", "v7")],
        ]
        let answers = try BatchResults.match(results, to: operations, endpoint: endpoint)
        guard case .rejected(412, _, let theirs?) = answers[0], case .accepted(200, let ours?) = answers[1] else {
            Issue.record("paired wrongly: \(answers)")
            return
        }
        #expect(theirs.id == "a" && ours.id == "b")
    }

    @Test func aPlainAnswerInOrderIsTaken() throws {
        let results: [JSONValue] = [["status": 200, "item": Self.record("a", "v2")], ["status": 404, "error": "gone"]]
        let answers = try BatchResults.match(results, to: operations, endpoint: endpoint)
        #expect(answers.count == 2)
        #expect(answers[1] == .rejected(status: 404, message: "gone", serverRecord: nil))
    }

    @Test(
        arguments: [
            // reversed, plain: the records name the other items
            [["status": 200, "item": record("b", "v2")], ["status": 412, "item": record("a", "v7")]],
            // a result twice, one missing
            [["index": 0, "status": 200, "item": record("a", "v2")], ["index": 0, "status": 200, "item": record("a", "v2")]],
            // an index out of range
            [["index": 0, "status": 200], ["index": 2, "status": 200]],
            // some indexed, some not
            [["index": 0, "status": 200], ["status": 200]],
            // an id that is not the operation's
            [["index": 0, "id": "b", "status": 200], ["index": 1, "id": "a", "status": 200]],
            // too few, plain
            [["status": 200, "item": record("a", "v2")]],
            // no status
            [["index": 0, "id": "a"], ["index": 1, "id": "b", "status": 200]],
        ] as [[JSONValue]])
    func resultsThatDoNotPairAreAProtocolError(results: [JSONValue]) {
        #expect {
            _ = try BatchResults.match(results, to: operations, endpoint: endpoint)
        } throws: { error in
            guard let error = error as? TSyncError else { return false }
            return error.kind == .unreachable && error.message.contains("do not match the operations sent")
        }
    }
}
