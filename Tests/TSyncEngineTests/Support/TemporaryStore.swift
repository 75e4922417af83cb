import Foundation
import Testing
import TSyncModel

@testable import TSyncEngine

/// A fresh store in a temporary directory, removed when the value goes away.
final class TemporaryStore {
    let root: String
    let store: LocalStore

    init(busyTimeout: TimeInterval = LocalStore.defaultBusyTimeout) throws {
        root =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("tsync-engine-tests-\(UUID().uuidString)").path
        store = try LocalStore.initialize(
            StoreLocation.forInitializing(root, workingDirectory: "/"), remote: nil, busyTimeout: busyTimeout
        ).store
    }

    /// Another connection to the same store, as a second process would have.
    func reopen(busyTimeout: TimeInterval = LocalStore.defaultBusyTimeout) throws -> LocalStore {
        try LocalStore.open(store.location, busyTimeout: busyTimeout)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }
}

extension LocalStore {
    /// Inserts one record and returns its id.
    @discardableResult
    func insert(_ table: String, _ object: [String: JSONValue]) throws -> String {
        try insert(table: table, objects: [object])[0]
    }

    /// Kind and state of each queued operation of an item, in queue order.
    func queue(_ table: String, _ id: String) throws -> [String] {
        try pendingOperations(table: table).filter { $0.itemID == id }.map {
            $0.state == .inflight ? "\($0.kind.rawValue)(inflight)" : $0.kind.rawValue
        }
    }

    /// Pushes the item's first pushable operation as far as the store is concerned: claims the
    /// queue, records the server's failure for that item, and releases the rest.
    func fail(_ id: String, status: Int, serverRecord: Record? = nil) throws {
        let batch = try claimOperations(tables: nil, limit: 100)
        let target = try #require(batch.first { $0.operation.itemID == id })
        try completeOperations([AnsweredOperation(target, .failed(status: status, message: "HTTP \(status)", serverRecord: serverRecord))])
        try releaseOperations(batch.filter { $0.operation.seq != target.operation.seq })
    }

    /// A server copy of a record, as a pull or push response would bring it.
    static func serverRecord(_ id: String, _ fields: [String: JSONValue], version: String, at ms: Int64 = 1_000)
        -> Record
    {
        Record(
            id: id, fields: fields,
            system: SystemProperties(
                createdAt: Timestamp(millisecondsSinceEpoch: ms), updatedAt: Timestamp(millisecondsSinceEpoch: ms),
                version: version))
    }
}

extension Record {
    func with(id: String) -> Record {
        var copy = self
        copy.id = id
        return copy
    }
}
