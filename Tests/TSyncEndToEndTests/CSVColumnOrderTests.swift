import Foundation
import Testing

/// `query --csv`'s columns in the order the user gave the fields (as sqlite-utils does):
/// `id`, the fields in the order of the table's inserts and upserts (a CSV header's columns, the
/// first JSON object's names as written, names given later appended), then the other names by
/// name. The store keeps the order per table (DESIGN §6.1); a table only pulled keeps the order
/// by name.
@Suite struct CSVColumnOrderTests {
    private func header(_ store: TSyncSandbox, _ table: String) async throws -> String {
        let csv = try await store.ok(["query", table, "--csv"])
        return String(csv.prefix { !$0.isNewline })
    }

    @Test func aCSVHeadersOrderComesBack() async throws {
        let store = try await TSyncSandbox()
        // The streamed insert.
        try await store.ok(["insert", "people", "--csv", "-q"], stdin: "name,zeta,alpha\n\"ann\",1,2\n\"bob\",3,\n")
        #expect(try await header(store, "people") == "id,name,zeta,alpha,deleted")
        // The general path (upsert), id anywhere in the header.
        try await store.ok(["upsert", "pets", "--csv", "-q"], stdin: "kind,id,legs\n\"cat\",\"tom\",4\n")
        #expect(try await header(store, "pets") == "id,kind,legs,deleted")
        // What query --csv writes goes back in, order and all.
        let written = try await store.ok(["query", "people", "--csv"])
        try await store.ok(["insert", "copy", "--csv", "-q"], stdin: written)
        #expect(try await header(store, "copy") == "id,name,zeta,alpha,deleted")
        // --select still decides when given.
        #expect(try await store.ok(["query", "people", "--csv", "--select", "alpha,name"]).hasPrefix("alpha,name\r\n"))
    }

    @Test func theFirstJSONObjectsOrderComesBackAndLaterFieldsFollow() async throws {
        let store = try await TSyncSandbox()
        try await store.ok(["insert", "t", "-q"], stdin: #"{"id": "1", "b": 1, "a": 2}"# + "\n" + #"{"id": "2", "a": 3}"# + "\n")
        #expect(try await header(store, "t") == "id,b,a,deleted")
        // A field first given later comes after those known, in its input's order.
        try await store.ok(["insert", "t", #"{"id": "3", "zz": true, "c": 1, "a": 0}"#])
        #expect(try await header(store, "t") == "id,b,a,zz,c,deleted")
        try await store.ok(["upsert", "t", "-q"], stdin: #"[{"id": "1", "y": 1, "b": 2}]"#)
        #expect(try await header(store, "t") == "id,b,a,zz,c,y,deleted")
        // A field set by update is known by name only: after the others.
        try await store.ok(["update", "t", "2", "--set", "m=1"])
        #expect(try await header(store, "t") == "id,b,a,zz,c,y,deleted,m")
        // A JSON array, its first object's names not sorted.
        try await store.ok(["insert", "u", "-q"], stdin: #"[{"z": 1, "id": "x", "m": {"b": 1, "a": 2}, "createdAt": "no"}, {"a": 1}]"#)
        #expect(try await header(store, "u") == "id,z,m,a,deleted")
    }

    @Test func aTableOnlyPulledKeepsTheOrderByName() async throws {
        let server = try await ServeFixture()
        let a = try await TSyncSandbox(remote: server.url)
        try await a.ok(["insert", "todo", #"{"id": "x", "zeta": 1, "alpha": 2}"#])
        try await a.ok(["push"])
        #expect(try await header(a, "todo") == "id,zeta,alpha,createdAt,deleted,updatedAt,version")
        let b = try await TSyncSandbox(remote: server.url)
        try await b.ok(["pull", "todo"])
        #expect(try await header(b, "todo") == "id,alpha,createdAt,deleted,updatedAt,version,zeta")
    }
}
