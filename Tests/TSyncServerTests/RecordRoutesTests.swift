import Foundation
import Testing
import TSyncModel
@testable import TSyncServer

@Suite struct RecordRoutesTests {
    @Test func insertGeneratesIDAndVersionAndIgnoresSystemProperties() async throws {
        try await withTestServer { http in
            let reply = try await http.post(
                "/tables/todo",
                [
                    "text": "milk", "version": "forged", "updatedAt": "2000-01-01T00:00:00.000Z", "createdAt": "2000-01-01T00:00:00.000Z",
                    "deleted": true,
                ]
            )
            #expect(reply.status == 201)
            let id = try #require(reply.object["id"]?.stringValue)
            #expect(!id.isEmpty)
            #expect(reply.object["text"] == "milk")
            #expect(reply.object["deleted"] == false)
            let version = try #require(reply.version)
            #expect(version != "forged")
            #expect(reply.etag == "\"\(version)\"")
            let updatedAt = try #require(reply.object["updatedAt"]?.stringValue)
            #expect(updatedAt != "2000-01-01T00:00:00.000Z")
            #expect(Timestamp(iso8601: updatedAt)?.iso8601 == updatedAt, "millisecond ISO text, stored exactly")
            #expect(reply.object["createdAt"]?.stringValue == updatedAt)

            let read = try await http.get("/tables/todo/\(id)")
            #expect(read.status == 200)
            #expect(read.object == reply.object)
            #expect(read.etag == reply.etag)
        }
    }

    @Test func insertWithExistingIDIs409WithTheExistingItem() async throws {
        try await withTestServer { http in
            let first = try await http.insert("todo", ["id": "a", "text": "first"])
            let second = try await http.post("/tables/todo", ["id": "a", "text": "second"])
            #expect(second.status == 409)
            #expect(second.object == first)
            #expect(second.etag == "\"\(first["version"]?.stringValue ?? "")\"")
        }
    }

    @Test func readsOfMissingItemsAndUnwrittenTables() async throws {
        try await withTestServer { http in
            let never = try await http.get("/tables/never_written")
            #expect(never.status == 200)
            #expect(never.json == .array([]))
            let counted = try await http.get("/tables/never_written?$inlinecount=allpages")
            #expect(counted.json == ["results": [], "count": 0])
            let missing = try await http.get("/tables/never_written/x")
            #expect(missing.status == 404)
            #expect(missing.error != nil)
            try await http.insert("todo", ["id": "a"])
            #expect(try await http.get("/tables/todo/b").status == 404)
        }
    }

    @Test func patchMergesFieldsAndBumpsVersionAndUpdatedAt() async throws {
        try await withTestServer { http in
            let item = try await http.insert("todo", ["id": "a", "text": "milk", "done": false])
            let reply = try await http.patch(
                "/tables/todo/a", ["done": true], headers: ["If-Match": "\"\(item["version"]?.stringValue ?? "")\""])
            #expect(reply.status == 200)
            #expect(reply.object["text"] == "milk")
            #expect(reply.object["done"] == true)
            #expect(reply.version != item["version"]?.stringValue)
            #expect(reply.etag == "\"\(reply.version ?? "")\"")
            #expect(reply.object["createdAt"] == item["createdAt"])
            let before = try #require(item["updatedAt"]?.stringValue)
            let after = try #require(reply.object["updatedAt"]?.stringValue)
            #expect(after > before)
            #expect(try await http.get("/tables/todo/a").object == reply.object)
        }
    }

    @Test func stalePatchesAre412WithIfMatchAnd409WithABodyVersion() async throws {
        try await withTestServer { http in
            let original = try await http.insert("todo", ["id": "a", "text": "v1"])
            let oldVersion = try #require(original["version"]?.stringValue)
            let current = try await http.patch("/tables/todo/a", ["text": "v2"])
            #expect(current.status == 200)

            let stale = try await http.patch("/tables/todo/a", ["text": "v3"], headers: ["If-Match": "\"\(oldVersion)\""])
            #expect(stale.status == 412)
            #expect(stale.object == current.object, "412 carries the server's current item")
            #expect(stale.etag == current.etag)

            let staleBody = try await http.patch("/tables/todo/a", ["text": "v3", "version": .string(oldVersion)])
            #expect(staleBody.status == 409)
            #expect(staleBody.object == current.object)

            let fresh = try await http.patch("/tables/todo/a", ["text": "v3", "version": .string(current.version ?? "")])
            #expect(fresh.status == 200)
            #expect(fresh.object["text"] == "v3")
            // If-Match compares strongly (RFC 9110 §13.1.1): a weak tag never matches (docs/DESIGN.md §4).
            let weakTag = "W/\"\(fresh.version ?? "")\""
            let weak = try await http.patch("/tables/todo/a", ["text": "v4"], headers: ["If-Match": weakTag])
            #expect(weak.status == 412)
            #expect(weak.object["text"] == "v3", "412 with the current item")
            #expect(try await http.delete("/tables/todo/a", headers: ["If-Match": weakTag]).status == 412)
            #expect(try await http.post("/tables/todo/a", headers: ["If-Match": weakTag]).status == 412)
            let mixed = try await http.patch(
                "/tables/todo/a", ["text": "v4"], headers: ["If-Match": "\(weakTag), \"\(fresh.version ?? "")\""])
            #expect(mixed.status == 200, "the strong tag in the list matches")
            let star = try await http.patch("/tables/todo/a", ["text": "v5"], headers: ["If-Match": "*"])
            #expect(star.status == 200)
        }
    }

    @Test func patchRejectsAnotherIDAndMissingItems() async throws {
        try await withTestServer { http in
            try await http.insert("todo", ["id": "a"])
            let other = try await http.patch("/tables/todo/a", ["id": "b", "text": "x"])
            #expect(other.status == 400)
            #expect(other.error?.contains("not the id in the URL") == true)
            #expect(try await http.patch("/tables/todo/a", ["id": "a", "text": "x"]).status == 200)
            let missing = try await http.patch("/tables/todo/zzz", ["text": "x"])
            #expect(missing.status == 404)
            #expect(missing.error != nil)
            #expect(try await http.patch("/tables/nothing_here/zzz", ["text": "x"]).status == 404)
        }
    }

    @Test func deleteIsSoftAndUndeleteBringsItBack() async throws {
        try await withTestServer { http in
            let item = try await http.insert("todo", ["id": "a", "text": "milk"])
            try await http.insert("todo", ["id": "b", "text": "eggs"])
            let stale = try await http.delete("/tables/todo/a", headers: ["If-Match": "\"nope\""])
            #expect(stale.status == 412)
            #expect(stale.object == item)

            let deleted = try await http.delete("/tables/todo/a", headers: ["If-Match": "\"\(item["version"]?.stringValue ?? "")\""])
            #expect(deleted.status == 200)
            #expect(deleted.object["deleted"] == true)
            #expect(deleted.object["text"] == "milk")
            #expect(deleted.version != item["version"]?.stringValue)
            #expect((deleted.object["updatedAt"]?.stringValue ?? "") > (item["updatedAt"]?.stringValue ?? "~"))

            #expect(try await http.get("/tables/todo/a").status == 404)
            #expect(try await http.get("/tables/todo").ids == ["b"])
            let withDeleted = try await http.get("/tables/todo?__includeDeleted=true")
            #expect(withDeleted.ids == ["a", "b"])
            #expect(withDeleted.array.first?.objectValue?["deleted"] == true)
            #expect(try await http.delete("/tables/todo/a").status == 404, "deleting a deleted item")
            #expect(try await http.patch("/tables/todo/a", ["text": "x"]).status == 404, "updating a deleted item")
            #expect(try await http.delete("/tables/todo/zzz").status == 404)

            let restored = try await http.post("/tables/todo/a")
            #expect(restored.status == 200)
            #expect(restored.object["deleted"] == false)
            #expect(restored.object["text"] == "milk")
            #expect(restored.version != deleted.version)
            #expect(try await http.get("/tables/todo/a").status == 200)
            #expect(try await http.get("/tables/todo").ids == ["a", "b"])
            #expect(try await http.post("/tables/todo/zzz").status == 404)
        }
    }

    @Test func pagesCarryALinkToTheNextPageOnlyWhenFull() async throws {
        try await withTestServer { http in
            for index in 1...7 { try await http.insert("todo", ["id": .string("r\(index)"), "n": .int(Int64(index))]) }
            var uri = "/tables/todo?$filter=n%20gt%200&$orderby=n%20desc&$top=3"
            var seen: [String] = []
            var pages = 0
            while true {
                let page = try await http.get(uri)
                #expect(page.status == 200)
                seen += page.ids
                pages += 1
                guard let link = page.link else {
                    #expect(page.ids.count < 3)
                    break
                }
                #expect(page.ids.count == 3)
                #expect(link.hasSuffix(">; rel=next"))
                let url = try #require(URL(string: String(link.dropFirst().prefix { $0 != ">" })))
                #expect(url.scheme == "http")
                #expect(url.host != nil, "the link is absolute")
                #expect(!link.dropFirst().prefix { $0 != ">" }.contains(","), "no raw comma inside the link target")
                uri = url.path + "?" + (url.query ?? "")
                #expect(pages < 5)
            }
            #expect(pages == 3)
            #expect(seen == ["r7", "r6", "r5", "r4", "r3", "r2", "r1"])

            // A last page that is exactly full still links to an empty page, which has no link.
            let six = try await http.get("/tables/todo?$top=6&$skip=1")
            #expect(six.ids.count == 6)
            #expect(six.link?.contains("%24skip=7") == true || six.link?.contains("$skip=7") == true)
            let empty = try await http.get("/tables/todo?$top=6&$skip=7")
            #expect(empty.ids.isEmpty)
            #expect(empty.link == nil)
        }
    }

    @Test func defaultPageIs50AndTopIsBounded() async throws {
        var configuration = ServerConfiguration(requiresAuthentication: false)
        configuration.maximumPageSize = 60
        try await withTestServer(configuration) { http in
            for index in 0..<55 { try await http.insert("bulk", ["id": .string(String(format: "k%03d", index))]) }
            let first = try await http.get("/tables/bulk")
            #expect(first.ids.count == 50)
            #expect(first.link != nil)
            #expect(try await http.get("/tables/bulk?$top=60").ids.count == 55)
            for bad in ["61", "-1", "ten", "99999999999999999999", "1.5"] {
                let reply = try await http.get("/tables/bulk?$top=\(bad)")
                #expect(reply.status == 400, "$top=\(bad)")
                #expect(reply.error != nil)
            }
            #expect(try await http.get("/tables/bulk?$skip=-3").status == 400)
            #expect(try await http.get("/tables/bulk?$top=0").ids.isEmpty)
            #expect(try await http.get("/tables/bulk?$top=0").link == nil)
        }
    }

    @Test func inlineCountSelectAndOrderTieBreak() async throws {
        try await withTestServer { http in
            for (id, group) in [("c", 1), ("a", 2), ("b", 1), ("d", 2), ("e", 1)] {
                try await http.insert("todo", ["id": .string(id), "group": .int(Int64(group)), "text": .string("t-\(id)")])
            }
            let counted = try await http.get("/tables/todo?$inlinecount=allpages&$top=2&$filter=group%20eq%201")
            #expect(counted.object["count"] == 3)
            #expect(counted.object["results"]?.arrayCount == 2)
            #expect(counted.link != nil)

            #expect(try await http.get("/tables/todo?$orderby=group").ids == ["b", "c", "e", "a", "d"])
            #expect(try await http.get("/tables/todo?$orderby=group%20desc").ids == ["a", "d", "b", "c", "e"])

            let selected = try await http.get("/tables/todo?$select=id,text&$orderby=id")
            #expect(selected.array.first == ["id": "a", "text": "t-a"])
            #expect(try await http.get("/tables/todo?$select=id;drop").status == 400)
            #expect(try await http.get("/tables/todo?$inlinecount=some").status == 400)
            #expect(try await http.get("/tables/todo?__includeDeleted=maybe").status == 400)
        }
    }

    @Test func tableNamesAreCaseInsensitive() async throws {
        try await withTestServer { http in
            try await http.insert("TodoItem", ["id": "a"])
            #expect(try await http.get("/tables/todoitem/a").status == 200)
            #expect(try await http.post("/tables/TODOITEM", ["id": "a"]).status == 409)
        }
    }

    @Test func idsArePercentDecodedAndValidated() async throws {
        try await withTestServer { http in
            try await http.insert("todo", ["id": "todo 1 é"])
            #expect(try await http.get("/tables/todo/todo%201%20%C3%A9").status == 200)
            let slash = try await http.get("/tables/todo/a%2Fb")
            #expect(slash.status == 400)
            #expect(slash.error?.contains("invalid id") == true)
            #expect(try await http.post("/tables/todo", ["id": "a?b"]).status == 400)
            #expect(try await http.post("/tables/todo", ["id": 5]).status == 400)
            let table = try await http.get("/tables/bad-name")
            #expect(table.status == 400)
            #expect(table.error?.contains("invalid table name") == true)
            #expect(try await http.get("/tables/_ok%20").status == 400)
        }
    }
}

extension JSONValue {
    var arrayCount: Int? {
        if case .array(let items) = self { return items.count }
        return nil
    }
}
