import TSyncModel
import TSyncQuery

/// The server's current copies of some items, read with GET requests only: a filter on a list of
/// ids, deleted copies included (`__includeDeleted`, which every v2 server understands). Used by
/// `push --check` and by settling, which must not trust a copy recorded with an error: another
/// writer may have changed the item since.
enum ServerCopies {
    /// Ids per GET: small enough for any server's page size and URL limit.
    static let idsPerRequest = 25

    /// Reads in flight at once: one after the other, reading 10,000 copies was 400 round trips end
    /// to end, most of the time settling them took.
    static let concurrency = SyncSession.defaultPushConcurrency

    /// The copies found, by item; an item the server has no copy of (or does not show this user)
    /// is absent. The first error stops the reads and is thrown.
    static func read(_ keys: [ItemKey], from remote: any SyncRemote) async throws(TSyncError) -> [ItemKey: TSyncModel.Record] {
        var byTable: [String: [String]] = [:]
        var seen = Set<ItemKey>()
        for key in keys where seen.insert(key).inserted { byTable[key.table, default: []].append(key.id) }
        var requests: [PageRequest] = []
        for (table, ids) in byTable.sorted(by: { $0.key < $1.key }) {
            var start = 0
            while start < ids.count {
                let chunk = ids[start..<min(ids.count, start + idsPerRequest)]
                start += chunk.count
                requests.append(PageRequest(table: table, filter: filter(ids: chunk), top: chunk.count, includeDeleted: true))
            }
        }
        var found: [ItemKey: TSyncModel.Record] = [:]
        let result = await withTaskGroup(of: Result<(String, Page), TSyncError>.self) { group -> TSyncError? in
            var next = 0
            func startNext() {
                guard next < requests.count else { return }
                let request = requests[next]
                next += 1
                group.addTask {
                    do throws(TSyncError) {
                        return .success((request.table, try await remote.readPage(request)))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            for _ in 0..<min(concurrency, requests.count) { startNext() }
            while let answer = await group.next() {
                switch answer {
                case .success(let (table, page)):
                    for record in page.records { found[ItemKey(table: table, id: record.id)] = record }
                    startNext()
                case .failure(let error):
                    group.cancelAll()
                    return error
                }
            }
            return nil
        }
        if let result { throw result }
        return found
    }

    /// `id eq 'a' or id eq 'b' …`: the filter of a few ids.
    static func filter(ids: some Collection<String>) -> String {
        anyOf(ids.map { FilterExpression.binary(.eq, .field("id"), .literal(.string($0))) }).odataText
    }

    /// `a or b or …`, as a balanced tree (a chain of 25 would nest 25 deep in parentheses).
    private static func anyOf(_ terms: some Collection<FilterExpression>) -> FilterExpression {
        if terms.count == 1, let only = terms.first { return only }
        let middle = terms.index(terms.startIndex, offsetBy: terms.count / 2)
        return .binary(.or, anyOf(terms[..<middle]), anyOf(terms[middle...]))
    }
}
