import Testing
import TSyncModel

@testable import TSyncCLI
@testable import TSyncEngine

/// The text and `--json` forms of the reports, from values made here rather than from a store
/// and a server: what each line says, and the JSON field names scripts depend on.
@Suite struct FormatTests {
    private static let plain = Style(enabled: false)
    private static let noon = Timestamp(millisecondsSinceEpoch: 1_795_000_000_000)

    private static func operation(
        _ seq: Int64, _ table: String, _ id: String, _ kind: OperationKind, error: PendingOperation.ErrorSummary? = nil
    ) -> PendingOperation {
        PendingOperation(seq: seq, table: table, itemID: id, kind: kind, state: .pending, queuedAt: noon, error: error)
    }

    @Test func statusLongNamesEachTableItsItemsAndTheNextStep() {
        var todo = TableStatus(table: "todo")
        todo.inserts = 11
        todo.updates = 1
        todo.errors = 1
        let samples =
            (1...10).map { Self.operation(Int64($0), "todo", "i\($0)", .insert) }
            + [Self.operation(12, "todo", "u1", .update, error: .init(id: 7, httpStatus: 412, message: "changed on the server"))]
        let query = SavedQuery(table: "todo", queryID: "mine", filter: nil, stoppedAt: Self.noon)
        let report = StatusReport(
            storeDirectory: "/s/.tsync", remote: "http://h", tables: [todo], samples: samples, savedQueries: [query])
        let text = StatusFormat.long(report, style: Self.plain)
        #expect(text.hasPrefix("Store: /s/.tsync\nRemote: http://h\n\n12 pending operations in 1 table, 1 error:\n"), "\(text)")
        #expect(text.contains("\n  todo: 12 pending (11 inserts, 1 update), 1 error\n    added:     i1\n"), "\(text)")
        #expect(!text.contains("u1"), "the eleventh item is counted, not listed: \(text)")
        #expect(text.contains("    … and 2 more (`tsync status --porcelain` lists them all)\n"), "\(text)")
        #expect(text.contains("(1 operation failed: run `tsync conflicts`, then `tsync resolve`)"), "\(text)")
        #expect(text.contains("1 saved query (`tsync queries` lists them)"), "\(text)")
        #expect(
            text.contains(
                "  the pull of todo (query mine) stopped part way at \(Self.noon.iso8601); `tsync pull todo --query-id mine` goes on from where it stopped"
            ), "\(text)")
        #expect(!text.contains("\u{1B}["), "no colour when the style is off")
        #expect(StatusFormat.long(report, style: Style(enabled: true)).contains("\u{1B}[31m1 error\u{1B}[0m"))

        let clean = StatusFormat.long(StatusReport(storeDirectory: "/s", remote: nil, tables: [], savedQueries: []), style: Self.plain)
        #expect(clean == "Store: /s\nRemote: none (set one with `tsync remote URL`)\n\nNothing to push: no pending operations.\n")
        #expect(StatusFormat.short(report, style: Self.plain) == "todo: 11 added, 1 modified, 0 deleted, 1 failed\n")
    }

    @Test func thePushLineSaysWhatTheJSONCounts() {
        var summary = PushSummary()
        #expect(SyncFormat.pushSummary(summary, dryRun: false) == "nothing to push")
        summary.pushed = 120
        summary.alreadyApplied = 2
        summary.failed = 3
        summary.conflicts = 2
        summary.heldBack = 1
        summary.settled = [.theirs: 1, .merge: 2]
        summary.rounds = 2
        #expect(
            SyncFormat.pushSummary(summary, dryRun: false)
                == "pushed 120, 2 already on the server, settled 3 conflicts (2 merge, 1 theirs), 1 push again, 3 failed (2 conflicts), 1 held back by unsettled errors — run `tsync conflicts`"
        )
        let json = JSONSerializer.string(SyncReports.push(summary, dryRun: nil))
        #expect(
            json
                == #"{"alreadyApplied":2,"conflicts":2,"conflictsMet":0,"dryRun":false,"failed":3,"heldBack":1,"interrupted":false,"operations":[],"pushed":120,"requests":0,"rounds":2,"settled":{"merge":2,"theirs":1}}"#
        )
        var dry = PushSummary()
        dry.wouldPush = 1
        #expect(SyncFormat.pushSummary(dry, dryRun: true) == "would push 1 operation")
    }

    @Test func thePullLineAndItsJSON() {
        var summary = PullSummary(table: "todo", queryID: "mine")
        summary.counts.received = 1000
        summary.counts.upserted = 998
        summary.counts.deleted = 2
        summary.counts.pages = 1
        summary.push.pushed = 3
        summary.checkpoint = Checkpoint(updatedAt: Self.noon, id: "z")
        #expect(
            SyncFormat.pullSummary(summary) == "pushed 3 first; pulled todo (mine): 1000 received, 998 written, 2 deleted in 1 page")
        summary.horizonResync = HorizonResync(horizon: Self.noon, droppedIDs: ["a", "b"], kept: 1)
        #expect(
            SyncFormat.pullSummary(summary).hasPrefix(
                "the server removed deleted records of todo up to \(Self.noon.iso8601), after this query's checkpoint: read the query whole and dropped 2 local records the server no longer has, kept 1 with pending changes\npushed 3 first;"
            ))
        #expect(
            JSONSerializer.string(SyncReports.pull(summary))
                == #"{"checkpoint":{"id":"z","updatedAt":"\#(Self.noon.iso8601)"},"deleted":2,"interrupted":false,"pages":1,"pushed":3,"queryId":"mine","received":1000,"skipped":0,"table":"todo","upserted":998}"#
        )
    }

    @Test func aCheckSaysWhatWouldHappenToEachOperation() {
        let succeeds = PushPrediction(
            operation: Self.operation(1, "todo", "a", .insert), outcome: .succeeds, changedByUs: ["n"], changedByThem: [])
        let conflict = PushPrediction(
            operation: Self.operation(2, "todo", "b", .update), outcome: .fails(.versionConflict), settledBy: .merge,
            server: Record(id: "b", fields: [:], system: SystemProperties(version: "v2")), changedByUs: ["n"], changedByThem: ["t"])
        let held = PushPrediction(
            operation: Self.operation(3, "todo", "c", .delete), outcome: .heldBack, changedByUs: [], changedByThem: [])
        #expect(SyncFormat.checkLine(succeeds) == "ok\tinsert\ttodo\ta\n")
        #expect(
            SyncFormat.checkLine(conflict)
                == "version-conflict\tupdate\ttodo\tb\tserver version v2; ours changed n; theirs changed t; settled by merge\n")
        #expect(SyncFormat.checkLine(held) == "held-back\tdelete\ttodo\tc\n")
        #expect(
            SyncFormat.checkSummary([succeeds, conflict, held])
                == "of 3 queued operations, 1 would go through, 1 would be settled (1 merge), 1 would not (1 held back by unsettled errors)"
        )
        #expect(SyncFormat.checkSummary([]) == "nothing to push")
    }

    /// The read commands' `--json` field names: a stable interface.
    @Test func theReadReportsKeepTheirFieldNames() {
        #expect(
            JSONReports.line(JSONReports.tables([TableSummary(table: "todo", records: 3, pending: 1, errors: 0)]))
                == #"[{"errors":0,"pending":1,"records":3,"table":"todo"}]"# + "\n")
        let failed = Self.operation(4, "todo", "a", .update, error: .init(id: 9, httpStatus: nil, message: "no"))
        #expect(
            JSONSerializer.string(JSONReports.operation(failed))
                == #"{"id":"a","error":{"id":9,"message":"no","status":null},"kind":"update","queuedAt":"\#(Self.noon.iso8601)","seq":4,"state":"pending","table":"todo"}"#
        )
        let query = SavedQuery(table: "todo", queryID: "q", filter: "n gt 1", checkpoint: Checkpoint(updatedAt: Self.noon, id: "z"))
        #expect(
            JSONSerializer.string(JSONReports.savedQuery(query))
                == #"{"checkpoint":{"id":"z","updatedAt":"\#(Self.noon.iso8601)"},"filter":"n gt 1","lastPullAt":null,"queryId":"q","stoppedAt":null,"table":"todo"}"#
        )
        #expect(
            JSONSerializer.string(JSONReports.revertChange(RevertChange(table: "todo", id: "a", kind: .undelete, discarded: true)))
                == #"{"id":"a","discarded":true,"kind":"undelete","table":"todo"}"#)
        let version = RecordVersion(
            version: "v3", updatedAt: Self.noon, user: nil, operation: .update, item: Record(id: "a", fields: ["n": .int(2)]))
        #expect(
            JSONSerializer.string(JSONReports.recordVersion(version))
                == #"{"item":{"id":"a","deleted":false,"n":2},"operation":"update","updatedAt":"\#(Self.noon.iso8601)","user":null,"version":"v3"}"#
        )
    }

    /// `status --json` is written in two parts around its operations; together they are one object.
    @Test func statusJSONIsOneObjectAroundItsOperations() throws {
        var todo = TableStatus(table: "todo")
        todo.inserts = 1
        let report = StatusReport(storeDirectory: "/s", remote: nil, tables: [todo], savedQueries: [])
        let operation = Self.operation(1, "todo", "a", .insert)
        let bytes =
            JSONReports.statusHead(.init(isClean: false, errorCount: 0)) + JSONSerializer.bytes(JSONReports.operation(operation))
            + JSONReports.statusTail(report)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasSuffix("\n"))
        let parsed = try JSONParser.parse(String(text.dropLast()))
        let object = try #require(parsed.objectValue)
        #expect(Set(object.keys) == ["clean", "errors", "operations", "pending", "queries", "remote", "store", "tables"])
        #expect(object["pending"] == .int(1) && object["remote"] == .null && object["clean"] == .bool(false))
        #expect(
            JSONSerializer.string(try #require(object["tables"]))
                == #"[{"deletes":0,"errors":0,"inserts":1,"pending":1,"table":"todo","updates":0}]"#)
    }

    @Test func fieldChangesAreMinusAndPlusLines() {
        let changes = FieldChange.between(["a": .int(1), "b": .string("x"), "id": .string("i")], ["b": .string("y"), "c": .bool(true)])
        #expect(FieldChangeText.lines(changes, style: Self.plain) == "- a: 1\n- b: \"x\"\n+ b: \"y\"\n+ c: true\n")
        #expect(FieldChangeText.lines([], style: Self.plain) == "  (no field changes)\n")
        let diff = DiffEntry(table: "todo", id: "i", kind: .update, seq: 2, base: ["b": .string("x")], ours: nil, changes: changes)
        #expect(
            JSONSerializer.string(JSONReports.diff(diff))
                == #"{"id":"i","base":{"b":"x"},"changes":[{"before":1,"change":"removed","field":"a"},{"after":"y","before":"x","change":"modified","field":"b"},{"after":true,"change":"added","field":"c"}],"kind":"update","ours":null,"seq":2,"table":"todo"}"#
        )
    }
}
