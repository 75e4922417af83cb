import Testing
import TSyncModel
@testable import TSyncServer

/// The backend-independent rules of a write, which every storage backend follows.
@Suite struct WriteRulesTests {
    let live = Record(id: "a", fields: ["x": 1], system: SystemProperties(version: "v1", deleted: false))
    let deleted = Record(id: "a", fields: ["x": 1], system: SystemProperties(version: "v2", deleted: true))

    @Test func plans() {
        #expect(WriteRules.plan(.update(["x": 2]), on: live, expected: .any) == .write)
        #expect(WriteRules.plan(.update(["x": 2]), on: live, expected: .oneOf(["v0", "v1"])) == .write)
        #expect(WriteRules.plan(.update(["x": 2]), on: live, expected: .oneOf(["v0"])) == .versionMismatch)
        #expect(WriteRules.plan(.update(["x": 2]), on: deleted, expected: .oneOf(["v0"])) == .notFound, "404 before 412")
        #expect(WriteRules.plan(.softDelete, on: deleted, expected: .any) == .notFound)
        #expect(WriteRules.plan(.undelete, on: deleted, expected: .oneOf(["v2"])) == .write)
        #expect(WriteRules.plan(.undelete, on: deleted, expected: .oneOf(["v1"])) == .versionMismatch)
        #expect(WriteRules.plan(.undelete, on: live, expected: .any) == .unchanged)
    }

    @Test func applyMergesAndRenews() {
        let stamp = Timestamp(millisecondsSinceEpoch: 42)
        let updated = WriteRules.apply(.update(["y": "new", "x": .null]), to: live, updatedAt: stamp)
        #expect(updated.fields == ["x": .null, "y": "new"])
        #expect(updated.system.updatedAt == stamp)
        #expect(updated.system.version != live.system.version)
        #expect(WriteRules.apply(.softDelete, to: live, updatedAt: stamp).system.deleted)
        #expect(!WriteRules.apply(.undelete, to: deleted, updatedAt: stamp).system.deleted)
        #expect(WriteRules.newVersion().count == 16)
    }
}
