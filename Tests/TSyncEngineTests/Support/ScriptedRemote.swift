import Foundation
import Synchronization
import TSyncModel

@testable import TSyncEngine

/// An in-memory sync server behind `SyncRemote`, for the rules of `Pusher` and `Puller`: it keeps
/// records with versions and timestamps, answers 409, 412 and 404 as the protocol does, and fails
/// on demand. Not a replacement for the real server, which the end-to-end tests drive.
final class ScriptedRemote: SyncRemote, Sendable {
    enum Fault {
        /// The write is applied, then the answer is lost (the connection drops): `.unreachable`.
        case loseAnswer
        /// The token was revoked: `.unauthorized` for this call and every later write; nothing applied.
        case revokeToken
        /// Something in the server's place answers this (to every operation of a batch); nothing
        /// applied.
        case answer(RemoteAnswer)
        /// The write is applied, then this is answered instead (a 500 after the commit).
        case applyThenAnswer(RemoteAnswer)
    }

    let endpoint: RemoteEndpoint
    fileprivate struct State {
        var tables: [String: [String: Record]] = [:]
        var clock: Int64 = 1_700_000_000_000
        var writeCalls = 0
        var faults: [Int: Fault] = [:]
        /// The fault of the write call under way (set by `writeCall`).
        var current: Fault?
        var revoked = false
        var applied: [(kind: OperationKind, id: String)] = []
        var scriptedPage: (@Sendable (PageRequest) -> Page)?
        var scriptedSchema: JSONValue?
        var batchesArrived = 0
        /// `hold(batch:until:)`'s batch, the arrivals it waits for, and its waiter.
        var held: (batch: Int, until: Int, waiter: CheckedContinuation<Void, Never>?)?
        /// The batches that had arrived when the held one went on, nil before it did.
        var arrivedWhenReleased: Int?
    }
    private let state = Mutex(State())
    private let batchLimit: Int?
    /// When set, `readPage` answers with it instead of the stored records.
    var scriptedPage: (@Sendable (PageRequest) -> Page)? {
        get { state.withLock { $0.scriptedPage } }
        set { state.withLock { $0.scriptedPage = newValue } }
    }
    /// What `GET /tables/$schema/{table}` answers (`tableSchema`); nil: nothing a schema.
    var scriptedSchema: JSONValue? {
        get { state.withLock { $0.scriptedSchema } }
        set { state.withLock { $0.scriptedSchema = newValue } }
    }

    /// - Parameter batchLimit: the batch route's operation limit; nil for a server without one.
    init(batchLimit: Int? = nil) throws {
        endpoint = try RemoteEndpoint("http://scripted.invalid")
        self.batchLimit = batchLimit
    }

    /// Makes the `call`-th write request (an insert, update, delete, undelete or batch; from 1) fail.
    func fail(call: Int, with fault: Fault) { state.withLock { $0.faults[call] = fault } }

    /// Holds the `batch`-th batch request (from 1) before it is applied until `arrived` batch
    /// requests have reached the server, as a server busy with the first while the next come in;
    /// after `longest` it goes on anyway (`arrivedWhenReleased` tells which).
    func hold(batch: Int, until arrived: Int, longest: Duration = .seconds(5)) {
        state.withLock { $0.held = (batch, arrived, nil) }
        Task { [self] in
            try? await Task.sleep(for: longest)
            release()
        }
    }

    /// The batch requests that had reached the server when the held one went on; nil while held.
    var arrivedWhenReleased: Int? { state.withLock { $0.arrivedWhenReleased } }

    private func release() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let held = state.held, state.arrivedWhenReleased == nil else { return nil }
            state.arrivedWhenReleased = state.batchesArrived
            state.held = nil
            return held.waiter
        }
        waiter?.resume()
    }

    func records(_ table: String) -> [String: Record] { state.withLock { $0.tables[table] ?? [:] } }
    var writeRequests: Int { state.withLock { $0.writeCalls } }
    /// Every write the server was asked to do, in the order it did them (refused ones included).
    var log: [(kind: OperationKind, id: String)] { state.withLock { $0.applied } }

    // MARK: - SyncRemote

    func tableSchema(table: String) async throws(TSyncError) -> JSONValue? { scriptedSchema }

    func readPage(_ request: PageRequest) async throws(TSyncError) -> Page {
        if let scriptedPage { return scriptedPage(request) }
        return storedPage(request)
    }

    /// A page of the stored records as a v2 server answers it: after the checkpoint of the
    /// request's filter (the only filter tsync sends here), in (updatedAt, id) order, `$skip`
    /// and `$top` applied (`$top` capped at `maxTop`), and no `Link`.
    func storedPage(_ request: PageRequest, maxTop: Int = .max) -> Page {
        let after = Self.checkpoint(in: request.filter)
        let records = state.withLock {
            ($0.tables[request.table] ?? [:]).values.map {
                ($0, Checkpoint(updatedAt: $0.system.updatedAt ?? Timestamp(millisecondsSinceEpoch: 0), id: $0.id))
            }
            .filter { after == nil || after! < $0.1 }
            .sorted { $0.1 < $1.1 }
            .map(\.0)
        }
        return Page(records: Array(records.dropFirst(request.skip ?? 0).prefix(min(request.top ?? 50, maxTop))), nextLink: nil)
    }

    /// The checkpoint `Checkpoint.filterAfter` wrote into a filter, if any.
    static func checkpoint(in filter: String?) -> Checkpoint? {
        guard let filter, let time = filter.firstMatch(of: /datetimeoffset'([^']*)'/)?.1,
            let timestamp = Timestamp(iso8601: String(time)), let id = filter.firstMatch(of: /id gt '((?:[^']|'')*)'/)?.1
        else { return nil }
        return Checkpoint(updatedAt: timestamp, id: id.replacingOccurrences(of: "''", with: "'"))
    }

    func read(table: String, id: String) async throws(TSyncError) -> RemoteAnswer {
        state.withLock {
            guard let record = $0.tables[table]?[id] else { return .rejected(status: 404, message: "not found", serverRecord: nil) }
            return .accepted(status: 200, record: record)
        }
    }

    func insert(table: String, item: [String: JSONValue]) async throws(TSyncError) -> RemoteAnswer {
        try writeCall { $0.apply(.insert, table: table, id: item["id"]?.stringValue ?? "", item: item, version: nil) }
    }

    func update(table: String, id: String, item: [String: JSONValue], version: String?) async throws(TSyncError) -> RemoteAnswer {
        try writeCall { $0.apply(.update, table: table, id: id, item: item, version: version) }
    }

    func delete(table: String, id: String, version: String?) async throws(TSyncError) -> RemoteAnswer {
        try writeCall { $0.apply(.delete, table: table, id: id, item: nil, version: version) }
    }

    func undelete(table: String, id: String, version: String?) async throws(TSyncError) -> RemoteAnswer {
        try writeCall { _ in .rejected(status: 400, message: "undelete is not scripted", serverRecord: nil) }
    }

    func batchCapabilities() async throws(TSyncError) -> BatchCapabilities? {
        batchLimit.map { BatchCapabilities(maxOperations: $0, maxBytes: 1 << 24, maxItemBytes: 1 << 20, atomic: false) }
    }

    func batch(_ operations: [BatchOperation], atomic: Bool) async throws(TSyncError) -> BatchReply {
        let (arrival, held) = state.withLock { state in
            state.batchesArrived += 1
            return (state.batchesArrived, state.held)
        }
        if let held, arrival >= held.until { release() }
        if held?.batch == arrival {
            await withCheckedContinuation { waiter in
                let stillHeld = state.withLock { state in
                    guard state.held != nil else { return false }
                    state.held?.waiter = waiter
                    return true
                }
                if !stillHeld { waiter.resume() }
            }
        }
        return try writeCall { state in
            .answers(
                operations.map { operation in
                    switch operation.method {
                    case .insert: state.apply(.insert, table: operation.table, id: operation.id, item: operation.item, version: nil)
                    case .update:
                        state.apply(.update, table: operation.table, id: operation.id, item: operation.item, version: operation.version)
                    case .delete: state.apply(.delete, table: operation.table, id: operation.id, item: nil, version: operation.version)
                    }
                })
        }
    }

    // MARK: - The server's rules

    /// Counts a write request and applies its fault, if any, around `body` (run under the lock).
    private func writeCall<Answer>(_ body: (inout State) -> Answer) throws(TSyncError) -> Answer {
        try state.withLock { (state: inout State) throws(TSyncError) -> Answer in
            state.writeCalls += 1
            state.current = state.faults[state.writeCalls]
            defer { state.current = nil }
            if case .revokeToken? = state.current { state.revoked = true }
            if state.revoked { throw TSyncError(.unauthorized, "the token was revoked") }
            let answer = body(&state)
            if case .loseAnswer? = state.current { throw TSyncError(.unreachable, "the connection dropped before the answer") }
            return answer
        }
    }
}

extension ScriptedRemote.State {
    mutating func apply(_ kind: OperationKind, table: String, id: String, item: [String: JSONValue]?, version: String?) -> RemoteAnswer {
        if case .answer(let answer)? = current { return answer }
        let real = applyForReal(kind, table: table, id: id, item: item, version: version)
        if case .applyThenAnswer(let answer)? = current { return answer }
        return real
    }

    private mutating func applyForReal(_ kind: OperationKind, table: String, id: String, item: [String: JSONValue]?, version: String?)
        -> RemoteAnswer
    {
        applied.append((kind, id))
        let current = tables[table]?[id]
        if kind == .insert, let current { return .rejected(status: 409, message: "exists", serverRecord: current) }
        if kind != .insert {
            guard let current, !current.system.deleted else { return .rejected(status: 404, message: "not found", serverRecord: nil) }
            if let version, version != current.system.version { return .rejected(status: 412, message: "stale", serverRecord: current) }
        }
        clock += 1
        let now = Timestamp(millisecondsSinceEpoch: clock)
        var fields = item ?? current?.fields ?? [:]
        fields.removeValue(forKey: "id")
        let record = Record(
            id: id, fields: fields,
            system: SystemProperties(
                createdAt: current?.system.createdAt ?? now, updatedAt: now, version: "v\(clock)", deleted: kind == .delete))
        tables[table, default: [:]][id] = record
        return .accepted(status: kind == .insert ? 201 : 200, record: record)
    }
}
