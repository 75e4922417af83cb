import Testing
import TSyncModel
@testable import TSyncServer

/// The backend-independent rules of a write, which every storage backend follows.
@Suite struct RecordWriterTests {
    let live = Record(id: "a", fields: ["x": 1], system: SystemProperties(version: "v1", deleted: false))
    let deleted = Record(id: "a", fields: ["x": 1], system: SystemProperties(version: "v2", deleted: true))

    @Test func plans() {
        #expect(RecordWriter.plan(.update(["x": 2]), on: live, expected: .any) == .write)
        #expect(RecordWriter.plan(.update(["x": 2]), on: live, expected: .oneOf(["v0", "v1"])) == .write)
        #expect(RecordWriter.plan(.update(["x": 2]), on: live, expected: .oneOf(["v0"])) == .versionMismatch)
        #expect(RecordWriter.plan(.update(["x": 2]), on: deleted, expected: .oneOf(["v0"])) == .notFound, "404 before 412")
        #expect(RecordWriter.plan(.softDelete, on: deleted, expected: .any) == .notFound)
        #expect(RecordWriter.plan(.undelete, on: deleted, expected: .oneOf(["v2"])) == .write)
        #expect(RecordWriter.plan(.undelete, on: deleted, expected: .oneOf(["v1"])) == .versionMismatch)
        #expect(RecordWriter.plan(.undelete, on: live, expected: .any) == .unchanged)
    }

    @Test func applyMergesAndRenews() {
        let stamp = Timestamp(millisecondsSinceEpoch: 42)
        let updated = RecordWriter.apply(.update(["y": "new", "x": .null]), to: live, updatedAt: stamp)
        #expect(updated.fields == ["x": .null, "y": "new"])
        #expect(updated.system.updatedAt == stamp)
        #expect(updated.system.version != live.system.version)
        #expect(RecordWriter.apply(.softDelete, to: live, updatedAt: stamp).system.deleted)
        #expect(!RecordWriter.apply(.undelete, to: deleted, updatedAt: stamp).system.deleted)
        #expect(RecordWriter.newVersion().count == 16)
    }
}
