import Testing
import TSyncModel

@testable import TSyncEngine

/// The rules under `push --on-conflict`, `--prefer`, `tsync config` and `push --check`,
/// without a server.
@Suite("Conflict policies")
struct ConflictPolicyRulesTests {
    @Test func preferSettlesTheFieldsBothSidesChangedAndNothingElse() {
        let base: [String: JSONValue] = ["text": "milk", "note": "n0", "n": 1]
        let ours: [String: JSONValue] = ["text": "oat milk", "note": "n0", "n": 2]
        let theirs: [String: JSONValue] = ["text": "soy milk", "note": "n1", "n": 1]
        #expect(
            ThreeWayMerge.merge(base: base, ours: ours, theirs: theirs, prefer: .ours)
                == .merged(["text": "oat milk", "note": "n1", "n": 2]))
        #expect(
            ThreeWayMerge.merge(base: base, ours: ours, theirs: theirs, prefer: .theirs)
                == .merged(["text": "soy milk", "note": "n1", "n": 2]))
    }

    @Test func preferDecidesAChangeAgainstADelete() {
        let base: [String: JSONValue] = ["text": "milk"]
        let changed: [String: JSONValue] = ["text": "oat milk", "version": "v2"]
        // We deleted, they changed.
        #expect(ThreeWayMerge.merge(base: base, ours: nil, theirs: changed) == .deleteConflict(deletedBy: .ours))
        #expect(ThreeWayMerge.merge(base: base, ours: nil, theirs: changed, prefer: .ours) == .deleted)
        #expect(ThreeWayMerge.merge(base: base, ours: nil, theirs: changed, prefer: .theirs) == .merged(["text": "oat milk"]))
        // We changed, they deleted.
        #expect(ThreeWayMerge.merge(base: base, ours: changed, theirs: nil, prefer: .ours) == .merged(["text": "oat milk"]))
        #expect(ThreeWayMerge.merge(base: base, ours: changed, theirs: nil, prefer: .theirs) == .deleted)
    }

    @Test func theFlagBeatsTheTableWhichBeatsTheStore() throws {
        var configuration = StoreConfiguration()
        try configuration.set(.pushOnConflict, to: "theirs")
        try configuration.set(.tableOnConflict("todo"), to: "ours")
        try configuration.set(.pushPrefer, to: "theirs")
        let settings = try configuration.policySettings()
        let stored = ConflictPolicies(settings: settings)
        #expect(stored.policy(for: "todo") == .ours)
        #expect(stored.policy(for: "audit") == .theirs)
        #expect(stored.preference(for: "todo") == .theirs)
        let flagged = ConflictPolicies(settings: settings, onConflict: .fail, prefer: .ours)
        #expect(flagged.policy(for: "todo") == .fail && flagged.policy(for: "audit") == .fail)
        #expect(flagged.preference(for: "audit") == .ours)
        #expect(ConflictPolicies().policy(for: "todo") == .fail, "no flag, no setting: fail")
        // A push skips the settling pass only when no table can be settled.
        #expect(ConflictPolicies().settlesNothing && flagged.settlesNothing && !stored.settlesNothing)
        var oneTable = PolicySettings()
        oneTable.tables["audit"] = .init(onConflict: .merge, prefer: nil)
        #expect(!ConflictPolicies(settings: oneTable).settlesNothing)
    }

    @Test func configKeysAreCheckedAndListed() throws {
        #expect(try ConfigKey("table.todo.prefer") == .tablePrefer("todo"))
        #expect(try ConfigKey("remote.url") == .remoteURL)
        // Case-insensitive as git's keys, except the table name.
        #expect(try ConfigKey("push.onconflict") == .pushOnConflict)
        #expect(try ConfigKey("TABLE.todo.PREFER") == .tablePrefer("todo"))
        #expect(try ConfigKey("Core.Pager") == .corePager)
        for bad in ["remote", "REMOTE", "push.onconflicts", "table..prefer", "table.a.b.prefer", "table.9x.prefer", "log"] {
            #expect(throws: TSyncError.self, "\(bad)") { try ConfigKey(bad) }
        }
        var configuration = StoreConfiguration()
        #expect(throws: TSyncError.self) { try configuration.set(.pushOnConflict, to: "sometimes") }
        #expect(throws: TSyncError.self) { try configuration.set(.logMaxEntries, to: "-1") }
        try configuration.set(.logMaxEntries, to: "50")
        try configuration.set(.remoteURL, to: "http://127.0.0.1:8080")
        #expect(configuration.remote == "http://127.0.0.1:8080", "remote.url is the remote")
        #expect(try configuration.logMaxEntries() == 50)
        #expect(configuration.entries.map { "\($0.key)=\($0.value)" } == ["log.maxEntries=50", "remote.url=http://127.0.0.1:8080"])
        #expect(configuration.unset(.logMaxEntries) && !configuration.unset(.logMaxEntries))
        #expect(try configuration.logMaxEntries() == Journal.defaultMaxEntries)
    }

    @Test func checkJudgesAnOperationByTheServersCopy() {
        func outgoing(_ kind: OperationKind, version: String?, item: [String: JSONValue] = ["id": "x", "n": 2]) -> OutgoingOperation {
            OutgoingOperation(
                operation: PendingOperation(
                    seq: 1, table: "todo", itemID: "x", kind: kind, state: .pending, queuedAt: Timestamp(millisecondsSinceEpoch: 0)),
                item: item, version: version)
        }
        func server(_ version: String, n: Int64 = 1, deleted: Bool = false) -> TSyncModel.Record {
            TSyncModel.Record(id: "x", fields: ["n": .int(n)], system: SystemProperties(version: version, deleted: deleted))
        }
        #expect(PushCheck.failure(of: outgoing(.insert, version: nil), server: nil) == nil)
        #expect(PushCheck.failure(of: outgoing(.insert, version: nil), server: server("v1")) == .alreadyExists)
        #expect(PushCheck.failure(of: outgoing(.insert, version: nil), server: server("v1", n: 2)) == nil, "already applied")
        #expect(PushCheck.failure(of: outgoing(.update, version: "v1"), server: server("v1")) == nil)
        #expect(PushCheck.failure(of: outgoing(.update, version: "v1"), server: server("v2")) == .versionConflict)
        #expect(PushCheck.failure(of: outgoing(.update, version: "v1"), server: nil) == .missing)
        #expect(PushCheck.failure(of: outgoing(.update, version: "v1"), server: server("v2", deleted: true)) == .missing)
        #expect(PushCheck.failure(of: outgoing(.delete, version: "v1"), server: server("v2")) == .versionConflict)
        #expect(PushCheck.failure(of: outgoing(.delete, version: "v1"), server: nil) == nil, "already gone")
        #expect(PushCheck.failure(of: outgoing(.delete, version: "v1"), server: server("v2", deleted: true)) == nil)
    }

    @Test func aSampleKeepsTheFirstDistinctItemsAndCountsTheRest() {
        var sample = ItemSample()
        sample.add(table: "todo", id: "a")
        sample.add(table: "todo", id: "a")
        sample.add(table: "todo", ids: (0..<500).map { "r\($0)" })
        #expect(sample.items.count == ItemSample.limit && sample.items.first == "todo/a")
        #expect(sample.count == 501)
    }
}
