import NIOHTTP1
import TSyncModel

/// What `GET /tables/$history` says of the server's record history (a tsync extension,
/// docs/DESIGN.md §4, §15): how long it keeps older versions and soft-deleted records.
package struct HistoryCapabilities: Sendable, Equatable {
    /// Seconds an older version of a record is kept (a record's current version is never pruned).
    package var keepSeconds: Int
    /// Seconds a soft-deleted record is kept before the server removes it.
    package var keepDeletedSeconds: Int?
}

/// One version of a record as the server's history keeps it (`GET /tables/$history/{table}/{id}`).
public struct RecordVersion: Sendable, Equatable {
    /// What the write that made the version did.
    public enum Operation: String, Sendable, CaseIterable {
        case insert, update, delete, undelete
    }

    /// The record's version after the write.
    public var version: String
    /// The record's `updatedAt` after the write.
    public var updatedAt: Timestamp
    /// The account that wrote it; nil when the server does not know (no accounts).
    public var user: String?
    /// What the write did.
    public var operation: Operation
    /// The whole record after the write, system properties included; a delete's is marked
    /// deleted and holds the body it deleted.
    public var item: Record
}

/// One page of a record's versions, newest first.
struct RecordVersionPage {
    var versions: [RecordVersion]
    var nextLink: String?
}

extension RemoteClient {
    /// `GET /tables/$history`: the history route's description, nil when the server has none (a
    /// plain v2 server's 404, tsync serve with no history kept: anything but that shape).
    package func historyCapabilities() async throws(TSyncError) -> HistoryCapabilities? {
        let response = try await send(.GET, endpoint.url(path: ["tables", "/$history"]), body: nil, discovering: true)
        guard response.status == 200, let object = response.json?.objectValue, case .int(let keep)? = object["keepSeconds"], keep >= 0
        else { return nil }
        var deleted: Int?
        if case .int(let seconds)? = object["keepDeletedSeconds"] { deleted = Int(seconds) }
        return HistoryCapabilities(keepSeconds: Int(keep), keepDeletedSeconds: deleted)
    }

    /// One page of the versions of `table`/`id`, newest first (`$top`, `$skip`, or the previous
    /// page's `Link`). Every version must be of that record: an answer about another is one tsync
    /// cannot explain (`.unreachable`, exit 3).
    func recordVersions(table: String, id: String, top: Int, skip: Int, nextLink: String?) async throws(TSyncError)
        -> RecordVersionPage
    {
        let url =
            nextLink
            ?? endpoint.url(path: ["tables", "/$history", table, id], query: [("$top", String(top)), ("$skip", String(skip))])
        let response = try await send(.GET, url, bytes: nil)
        switch response.status {
        case 200: break
        case 404:
            throw TSyncError(
                .invalidInput,
                "\(endpoint) has no history of \(table)/\(id) (no such record, or not one this account can read)")
        default:
            throw .failure(
                "reading the history of \(table)/\(id) from \(endpoint) failed with HTTP \(response.status): \(response.errorMessage ?? "no message")"
            )
        }
        guard case .array(let results)? = response.json?.objectValue?["results"] else {
            throw unexplainedHistory("its answer for the history of \(table)/\(id) holds no list of versions")
        }
        var versions: [RecordVersion] = []
        for result in results {
            guard let version = Self.recordVersion(result) else {
                throw unexplainedHistory(
                    "a version in the history of \(table)/\(id) is not one (\(JSONSerializer.string(result).prefix(120)))")
            }
            guard version.item.id.utf8.elementsEqual(id.utf8) else {
                throw unexplainedHistory(
                    "asked for the history of \(table)/\(id), it answered with a version of \(Identifiers.quoted(version.item.id))")
            }
            versions.append(version)
        }
        var next: String?
        if let link = LinkHeader.next(in: response.headers) {
            guard let resolved = endpoint.resolve(link: link) else {
                throw .failure("the server's next-page link points to another server (\(link)); refusing to follow it")
            }
            next = resolved
        }
        return RecordVersionPage(versions: versions, nextLink: next)
    }

    /// A page of `table` as it was at `time` (`GET /tables/$history/{table}?at=…`), with the
    /// parameters of a normal read; read and checked as a normal page is.
    func readPage(_ request: PageRequest, at time: Timestamp) async throws(TSyncError) -> Page {
        let url =
            request.nextLink
            ?? endpoint.url(path: ["tables", "/$history", request.table], query: [("at", time.iso8601)] + request.queryItems)
        let response = try await send(.GET, url, bytes: nil)
        if response.status == 400 || response.status == 404 {
            throw .failure(
                "\(endpoint) cannot show \(request.table) as it was at \(time.iso8601): \(response.errorMessage ?? "HTTP \(response.status)")"
            )
        }
        return try page(from: response, request)
    }

    /// The `X-TSync-Deleted-Horizon` of an answer: the server removed the soft-deleted records up to
    /// that `updatedAt` (docs/DESIGN.md §15). Nil when absent or not a time (a plain v2 server sends none).
    static func deletedHorizon(_ headers: HTTPHeaders) -> Timestamp? {
        headers.first(name: "X-TSync-Deleted-Horizon").flatMap(Timestamp.init(iso8601:))
    }

    /// `X-TSync-Max-Top: N`: the largest `$top` the server takes (docs/DESIGN.md §4). Nil when
    /// absent or not a positive count (a plain v2 server sends none).
    static func maximumTop(_ headers: HTTPHeaders) -> Int? {
        guard let value = headers.first(name: "X-TSync-Max-Top"), value.utf8.count <= 9, let top = Int(value), top >= 1 else {
            return nil
        }
        return top
    }

    /// `X-TSync-Page-End: <updatedAt> <id>`: where the page ends, as its server claims (docs/DESIGN.md
    /// §8). Nil when absent or not in that form (a plain v2 server, or a proxy that drops it, sends none).
    static func pageEnd(_ headers: HTTPHeaders) -> (id: String, updatedAt: Timestamp)? {
        guard let value = headers.first(name: "X-TSync-Page-End"), value.utf8.count <= 512,
            let space = value.firstIndex(of: " "), let updatedAt = Timestamp(iso8601: String(value[..<space]))
        else { return nil }
        let id = String(value[value.index(after: space)...])
        guard !id.isEmpty else { return nil }
        return (id, updatedAt)
    }

    private static func recordVersion(_ value: JSONValue) -> RecordVersion? {
        guard let object = value.objectValue, let version = object["version"]?.stringValue,
            let updatedAt = object["updatedAt"]?.stringValue.flatMap(Timestamp.init(iso8601:)),
            let operation = object["operation"]?.stringValue.flatMap(RecordVersion.Operation.init(rawValue:)),
            let item = object["item"]?.objectValue, let record = try? Record(wire: item)
        else { return nil }
        let user: String?
        switch object["user"] {
        case .string(let name)?: user = name
        case nil, .null?: user = nil
        default: return nil
        }
        return RecordVersion(version: version, updatedAt: updatedAt, user: user, operation: operation, item: record)
    }

    /// An answer of the history route that no tsync server gives: exit 3, nothing was changed.
    private func unexplainedHistory(_ what: String) -> TSyncError {
        Unanswered.unexplainedHistory(endpoint, what: what).error
    }
}

extension RemoteClient {
    /// `X-TSync-Schema`: the tag of the table's schema a page read announces.
    static func schemaTag(_ headers: HTTPHeaders) -> String? {
        guard let value = headers.first(name: "X-TSync-Schema"), !value.isEmpty, value.utf8.count <= 64,
            value.unicodeScalars.allSatisfy({ $0.isASCII && $0.properties.isAlphabetic || ("0"..."9").contains($0) })
        else { return nil }
        return value
    }

    /// `GET /tables/$schema/{table}`: the table's schema document, nil for any answer that is
    /// not one (a 404, a plain v2 server, a proxy's page).
    package func tableSchema(table: String) async throws(TSyncError) -> JSONValue? {
        let response = try await send(.GET, endpoint.url(path: ["tables", "/$schema", table]), body: nil, discovering: true)
        guard response.status == 200, let object = response.json?.objectValue, let schema = object["schema"] else { return nil }
        return schema
    }
}
