import TSyncModel

/// Pairs the `results` of a batch answer with the operations sent (docs/DESIGN.md §4).
///
/// A result is an operation's answer only when the pairing is certain: a result attached to the
/// wrong operation makes another writer's copy look like this operation's success, or a 412 of one
/// item settle another. tsync serve names each result's operation (`index`, its
/// position in the request, and `id`); a plain answer without them is paired by position, which
/// is checked as far as the results allow (a record must be the operation's item). Anything that
/// does not pair one to one (a result missing, twice, out of range, or naming another item) is a
/// protocol error for the whole batch: nothing of it is settled, every operation stays in flight.
enum BatchResults {
    static func match(_ results: [JSONValue], to operations: [BatchOperation], endpoint: RemoteEndpoint) throws(TSyncError)
        -> [RemoteAnswer]
    {
        func refuse(_ why: String) -> TSyncError {
            endpoint.unexplained("its batch results do not match the operations sent (\(why))", operations: operations.count)
        }
        var objects: [[String: JSONValue]] = []
        objects.reserveCapacity(results.count)
        for result in results {
            guard let object = result.objectValue else { throw refuse("a result is \(result.kindName), not an object") }
            objects.append(object)
        }
        let indexed = objects.filter { $0["index"] != nil }.count
        var ordered = [[String: JSONValue]?](repeating: nil, count: operations.count)
        if indexed == 0 {
            guard objects.count == operations.count else {
                throw refuse("\(objects.count) results for \(operations.count) operations")
            }
            ordered = objects
        } else {
            guard indexed == objects.count else { throw refuse("some results carry an index, others none") }
            for object in objects {
                guard case .int(let index)? = object["index"], index >= 0, index < operations.count else {
                    throw refuse("a result's index is not one of the operations'")
                }
                guard ordered[Int(index)] == nil else { throw refuse("two results for operation \(index)") }
                ordered[Int(index)] = object
            }
            if let missing = ordered.firstIndex(where: { $0 == nil }) { throw refuse("no result for operation \(missing)") }
        }
        var answers: [RemoteAnswer] = []
        answers.reserveCapacity(operations.count)
        for (operation, result) in zip(operations, ordered) {
            let object = result ?? [:]
            if let id = object["id"], id.stringValue?.utf8.elementsEqual(operation.id.utf8) != true {
                throw refuse("the result for \(operation.table)/\(operation.id) names another item")
            }
            guard case .int(let code)? = object["status"] else { throw refuse("a result has no status") }
            let status = Int(code)
            let record = object["item"]?.objectValue.flatMap { try? Record(wire: $0) }
            if let record, !record.id.utf8.elementsEqual(operation.id.utf8) {
                throw refuse("the result for \(operation.table)/\(operation.id) carries the record of \(record.id)")
            }
            if (200..<300).contains(status) {
                answers.append(.accepted(status: status, record: record))
            } else {
                answers.append(.rejected(status: status, message: object["error"]?.stringValue ?? "HTTP \(status)", serverRecord: record))
            }
        }
        return answers
    }
}
