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

/// The byte reader of batch answers (`BatchResults.read`, `BatchAnswerDecoder`) against the
/// general one (`JSONParser`, then `BatchResults.match`) on the same answers: wherever the byte
/// reader answers, it answers exactly what the general one does (the same answers, or the same
/// refusal), and it does answer for what tsync serve writes.
@Suite struct BatchAnswerDecoderTests {
    let endpoint = try! RemoteEndpoint("http://127.0.0.1:1")
    static let operations = [
        BatchOperation(method: .update, table: "todo", id: "a", item: ["id": "a", "text": "x", "n": 1.0], version: "v1"),
        BatchOperation(
            method: .insert, table: "todo", id: "b",
            item: [
                "id": "b", "text": "y\u{e9}\"\\\n", "big": 1e300, "zero": -0.0, "list": [1, "two", nil, ["three": true]],
                "nested": ["z": 1, "a": ["b": []]],
            ], version: nil),
        BatchOperation(method: .insert, table: "todo", id: "c", item: ["id": "c"], version: nil),
    ]

    /// The answer tsync serve gives when every write is stored as sent.
    static func stored(_ operation: BatchOperation, version: String, index: Int, status: Int = 200) -> String {
        var fields = operation.item ?? [:]
        fields.removeValue(forKey: "id")
        let record = Record(
            id: operation.id, fields: fields,
            system: SystemProperties(
                createdAt: Timestamp(millisecondsSinceEpoch: 1_700_000_000_000),
                updatedAt: Timestamp(millisecondsSinceEpoch: 1_700_000_000_001), version: version))
        var bytes: [UInt8] = []
        JSONSerializer.writeRecord(record, to: &bytes)
        return
            #"{"id":\#(JSONSerializer.string(.string(operation.id))),"index":\#(index),"item":\#(String(decoding: bytes, as: UTF8.self)),"status":\#(status)}"#
    }

    static var servedAsSent: String {
        "{\"results\":[" + operations.enumerated().map { stored($1, version: "v\($0 + 2)", index: $0) }.joined(separator: ",") + "]}"
    }

    /// What the general reader makes of `body`: nil when it is no batch answer at all (not JSON,
    /// no `results` array), which the client refuses before any pairing.
    func general(_ body: String, _ operations: [BatchOperation]) -> Result<[RemoteAnswer], TSyncError>? {
        guard let json = try? JSONParser.parse(body), case .array(let results)? = json.objectValue?["results"] else { return nil }
        do {
            return .success(try BatchResults.match(results, to: operations, endpoint: endpoint))
        } catch {
            return .failure(error)
        }
    }

    func fast(_ body: String, _ operations: [BatchOperation]) -> Result<[RemoteAnswer], TSyncError>? {
        fastAsSent(body, operations)?.map(\.answers)
    }

    /// The byte reader's answers, and the positions whose record it says has the fields sent:
    /// each of those records has them, as a push then takes them unchecked.
    func fastAsSent(_ body: String, _ operations: [BatchOperation], sourceLocation: SourceLocation = #_sourceLocation)
        -> Result<(answers: [RemoteAnswer], fieldsAsSent: Set<Int>), TSyncError>?
    {
        var sent: [UInt8] = []
        let items = operations.map { $0.write(to: &sent) }
        do {
            guard
                let read = try BatchResults.read(
                    Array(body.utf8), to: operations, sentItems: { index in items[index].map { sent[$0] } }, endpoint: endpoint)
            else { return nil }
            for index in read.fieldsAsSent {
                var fields = operations[index].item
                fields?.removeValue(forKey: "id")
                switch read.answers[index] {
                case .accepted(_, let record?), .rejected(_, _, let record?):
                    #expect(record.fields == fields, "\(body)", sourceLocation: sourceLocation)
                default:
                    Issue.record("answer \(index) has no record, but its fields are said to be as sent", sourceLocation: sourceLocation)
                }
            }
            return .success(read)
        } catch {
            return .failure(error)
        }
    }

    /// Checks that the byte reader agrees with the general one; returns whether it answered.
    @discardableResult
    func agree(_ body: String, _ operations: [BatchOperation] = operations, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        guard let fast = fast(body, operations) else { return false }
        guard let general = general(body, operations) else {
            Issue.record("the byte reader read what is no batch answer: \(body)", sourceLocation: sourceLocation)
            return true
        }
        switch (fast, general) {
        case (.success(let a), .success(let b)):
            #expect(a == b, "\(body)", sourceLocation: sourceLocation)
        case (.failure(let a), .failure(let b)):
            #expect(a.message == b.message && a.kind == b.kind, "\(body)", sourceLocation: sourceLocation)
        default:
            Issue.record("byte reader \(fast), general \(general) for \(body)", sourceLocation: sourceLocation)
        }
        return true
    }

    @Test func theOperationsAreWrittenAsTheSerializerWritesThem() {
        for operation in Self.operations + [
            BatchOperation(method: .delete, table: "t\u{e9}", id: "x\"y", item: nil, version: "v\\1"),
            BatchOperation(method: .update, table: "todo", id: "a", item: nil, version: nil),
        ] {
            var bytes: [UInt8] = []
            let range = operation.write(to: &bytes)
            #expect(bytes == JSONSerializer.bytes(operation.json))
            #expect(range.map { Array(bytes[$0]) } == operation.item.map { JSONSerializer.bytes(.object($0)) })
        }
    }

    @Test func whatTsyncServeWritesIsReadFromItsBytes() throws {
        #expect(agree(Self.servedAsSent), "tsync serve's answer went the general way")
        guard case .success(let read)? = fastAsSent(Self.servedAsSent, Self.operations) else { return }
        #expect(read.fieldsAsSent == [0, 1, 2], "every record stored as sent is taken as sent")
        guard case .success(let answers)? = fast(Self.servedAsSent, Self.operations) else { return }
        guard case .accepted(200, let record?) = answers[1] else { throw TestFailure("not accepted: \(answers[1])") }
        #expect(record.fields["big"] == .double(1e300) && record.fields["zero"] == .double(-0.0) && record.system.version == "v3")
        #expect(BatchResults.sameFields(#"{}"#, asSentItem: Array(#"{"id":"c"}"#.utf8)[...], id: "c"))
        #expect(!BatchResults.sameFields(#"{"a":1}"#, asSentItem: Array(#"{"id":"c"}"#.utf8)[...], id: "c"))
        #expect(!BatchResults.sameFields(#"{"a":2}"#, asSentItem: Array(#"{"id":"c","a":1}"#.utf8)[...], id: "c"))
        #expect(!BatchResults.sameFields(#"{"a":1}"#, asSentItem: Array(#"{"id":"d","a":1}"#.utf8)[...], id: "c"))
    }

    /// Odd but valid answers: white space, members in another order, escapes, fields the
    /// server added or changed, conflicts and errors, the plain shape without `index`.
    @Test(arguments: [
        // white space and another order of the members
        """
        { "results" : [ {"status": 200, "index": 0, "id": "a", "item": {"version": "v2", "text": "x", "n": 1.0, "id": "a", "deleted": false}},
          {"index":1,"status":201,"item":{"id":"b","big":1e300,"zero":-0.0,"text":"y\\u00e9\\"\\\\\\n","list":[1,"two",null,{"three":true}],"nested":{"z":1,"a":{"b":[]}}}},
          {"index":2,"status":201,"item":{"id":"c"}} ] }\n
        """,
        // fields the server changed or added, escapes in them, a real written another way
        #"{"results":[{"index":0,"status":200,"item":{"id":"a","text":"x\u0041","n":1,"extra":[1.50,2E3]}},{"index":1,"status":201,"item":{"id":"b"}},{"index":2,"status":201,"item":{"id":"c","createdAt":null,"updatedAt":"2026-01-01T00:00:00Z","version":null,"deleted":null}}]}"#,
        // a conflict, a plain error, one without item
        #"{"results":[{"index":0,"id":"a","status":412,"item":{"id":"a","text":"theirs","version":"v9","deleted":true}},{"error":"gone","index":1,"status":404},{"index":2,"status":204}]}"#,
        // the plain shape, in order
        #"{"results":[{"status":200,"item":{"id":"a","text":"x","n":1.0,"version":"v2"}},{"status":201},{"status":201,"item":{"id":"c","version":"v3"}}]}"#,
        // a result naming another item, a record of another item, an index out of range, twice,
        // missing, some indexed and some not, no status, too few
        #"{"results":[{"index":0,"id":"b","status":200},{"index":1,"status":200},{"index":2,"status":200}]}"#,
        #"{"results":[{"index":0,"status":200,"item":{"id":"b","version":"v2"}},{"index":1,"status":200},{"index":2,"status":200}]}"#,
        #"{"results":[{"index":0,"status":200},{"index":3,"status":200},{"index":2,"status":200}]}"#,
        #"{"results":[{"index":0,"status":200},{"index":0,"status":200},{"index":2,"status":200}]}"#,
        #"{"results":[{"index":0,"status":200},{"status":200},{"index":2,"status":200}]}"#,
        #"{"results":[{"index":0},{"index":1,"status":200},{"index":2,"status":200}]}"#,
        #"{"results":[{"status":200},{"status":200}]}"#,
        #"{"results":[]}"#,
        #"{"results":[{},{},{}]}"#,
        #"{"results":[{"index":-1,"status":200},{"index":1,"status":200},{"index":2,"status":200}]}"#,
    ])
    func oddButValidAnswersAreReadAsTheGeneralReaderReadsThem(body: String) {
        #expect(agree(body), "a valid answer of tsync serve's shape went the general way: \(body)")
    }

    /// What the byte reader is not sure of goes the general way (which decides it): unknown or
    /// repeated members, escaped messages, members of other types, records it cannot take,
    /// integers beyond 64 bits, damaged or truncated answers, and what is no batch answer at all.
    @Test(arguments: [
        #"{"results":[{"index":0,"status":200,"extra":1},{"index":1,"status":200},{"index":2,"status":200}]}"#,
        #"{"results":[{"index":0,"status":200,"status":201},{"index":1,"status":200},{"index":2,"status":200}]}"#,
        #"{"results":[{"index":0,"status":404,"error":"no \"a\""},{"index":1,"status":200},{"index":2,"status":200}]}"#,
        #"{"results":[{"index":"0","status":200},{"index":1,"status":200},{"index":2,"status":200}]}"#,
        #"{"results":[{"index":0,"status":"200"},{"index":1,"status":200},{"index":2,"status":200}]}"#,
        #"{"results":[{"index":0,"id":null,"status":200},{"index":1,"status":200},{"index":2,"status":200}]}"#,
        #"{"results":[{"index":0,"status":200,"item":null},{"index":1,"status":200},{"index":2,"status":200}]}"#,
        #"{"results":[{"index":0,"status":200,"item":{"text":"no id"}},{"index":1,"status":200},{"index":2,"status":200}]}"#,
        #"{"results":[{"index":0,"status":200,"item":{"id":"a","version":5}},{"index":1,"status":200},{"index":2,"status":200}]}"#,
        #"{"results":[{"index":0,"status":200,"item":{"id":"a","text":1,"text":2}},{"index":1,"status":200},{"index":2,"status":200}]}"#,
        #"{"results":[{"index":0,"status":200,"item":{"id":"a","n":123456789012345678901234567890}},{"index":1,"status":200},{"index":2,"status":200}]}"#,
        #"{"results":[{"index":0,"status":400,"error":"bad","violations":[]},{"index":1,"status":200},{"index":2,"status":200}]}"#,
        #"{"results":[{"index":0,"status":200},{"index":1,"status":200},{"index":2,"status":200}],"more":true}"#,
        #"{"results":[{"index":0,"status":200},{"index":1,"status":200},{"index":2,"status":200}]"#,
        #"{"results":[{"index":0,"status":200},{"index":1,"status":200},{"index":2,"status":200}]}x"#,
        #"{"results":[{"index":0,"status":200},{"index":1,"status":200},3]}"#,
        #"{"results":{}}"#,
        #"[]"#,
        "",
        "<html>Bad Gateway</html>",
    ])
    func whatTheByteReaderIsNotSureOfGoesTheGeneralWay(body: String) {
        #expect(fast(body, Self.operations) == nil, "\(body)")
    }
}

private struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
