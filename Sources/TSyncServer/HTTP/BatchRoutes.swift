import Hummingbird
import NIOCore
import TSyncModel

/// `POST /tables/$batch`, a tsync extension of the v2 protocol: many writes in one request, applied
/// in order in one transaction, each answered exactly as its single route would answer it.
/// `GET /tables/$batch` describes the route, so a client discovers it (a plain v2 server answers
/// 404 or 400 there, and the client keeps one request per operation). `$` cannot start a table
/// name, so the path never clashes with a table.
///
/// Request: `{"atomic": false, "operations": [{"method": "POST"|"PATCH"|"DELETE", "table", "id"?,
/// "item"?, "ifMatch"?}, …]}` — `POST` without `id` inserts `item`, `POST` with `id` undeletes,
/// `ifMatch` is an `If-Match` header value. Answer: `{"results": [{"index", "id", "status", "item"} |
/// {"index", "id", "status", "error"}, …]}`, one per operation, in order; `index` and `id` name the
/// operation (an addition a plain client ignores, and a client pairs results by). With `"atomic": true` nothing is written
/// unless every operation succeeds; the others then answer 424.
struct BatchRoutes: Sendable {
    let storage: any ServerStorage
    let configuration: ServerConfiguration
    let tables: TableRoutes

    func register(on group: RouterGroup<ServerRequestContext>) {
        group.on(ServedRoutes.batchDescription, use: describe)
        group.on(ServedRoutes.batch, use: batch)
    }

    @Sendable func describe(_ request: Request, context: ServerRequestContext) async throws -> Response {
        JSONResponse.make(
            .ok,
            [
                "maxOperations": .int(Int64(configuration.maximumBatchOperations)),
                "maxBytes": .int(Int64(configuration.maximumBatchBytes)),
                "maxItemBytes": .int(Int64(configuration.maximumBodyBytes)),
                "atomic": true,
            ])
    }

    @Sendable func batch(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let (body, bodyBytes) = try await request.jsonBody(
            limit: configuration.maximumBatchBytes, maximumValues: configuration.maximumBatchValues)
        // Every item of a body within the item limit is too: none is serialized again to be measured.
        let itemsFit = bodyBytes <= configuration.maximumBodyBytes
        guard case .array(let operations)? = body["operations"] else {
            throw APIError.badRequest(#"a batch is {"operations": [...]}: the "operations" array is missing"#)
        }
        guard operations.count <= configuration.maximumBatchOperations else {
            throw APIError(
                .contentTooLarge,
                "a batch holds at most \(configuration.maximumBatchOperations) operations; this one has \(operations.count): split it")
        }
        let atomic: Bool
        switch body["atomic"] {
        case nil, .null?: atomic = false
        case .bool(let value)?: atomic = value
        case let other?: throw APIError.badRequest(#""atomic" must be true or false, not \#(other.kindName)"#)
        }

        // Each operation becomes a write, or the error its single route would have answered.
        var parsed: [Result<WriteRequest, APIError>] = []
        parsed.reserveCapacity(operations.count)
        var permits: [PermitKey: TableRoutes.WritePermit] = [:]
        for (index, operation) in operations.enumerated() {
            do throws(APIError) {
                parsed.append(.success(try writeRequest(operation, itemsFit: itemsFit, permits: &permits, context: context)))
            } catch {
                parsed.append(.failure(APIError(error.status, "operation \(index + 1): \(error.message)", item: error.item)))
            }
        }
        // The valid operations' writes, taken out once: a list of the requests, then one of their
        // writes, copied each twice (a cost of every batch, in a profile of a push).
        var writes: [RecordWrite] = []
        writes.reserveCapacity(parsed.count)
        for index in parsed.indices {
            if case .success(let request) = parsed[index] { writes.append(request.write) }
        }
        var outcomes: [WriteOutcome] = []
        if atomic, writes.count < parsed.count {
            outcomes = Array(repeating: .notApplied, count: writes.count)
        } else if !writes.isEmpty {
            outcomes = try await storage.write(writes, atomic: atomic)
        }
        var results = Array(#"{"results":["#.utf8)
        results.reserveCapacity(256 * parsed.count)
        var next = outcomes.makeIterator()
        for index in parsed.indices {
            if index > 0 { results.append(UInt8(ascii: ",")) }
            switch parsed[index] {
            case .success(let write):
                WriteAnswer(next.next() ?? .notApplied, for: write).write(to: &results, index: index, id: write.write.id)
            case .failure(let error):
                WriteAnswer(error).write(to: &results, index: index, id: Self.itemID(operations[index]))
            }
        }
        results.append(contentsOf: "]}".utf8)
        return JSONResponse.make(.ok, bytes: results)
    }

    /// The item id an operation names (`id`, or its item's for an insert), if it is text.
    private static func itemID(_ operation: JSONValue) -> String? {
        guard let object = operation.objectValue else { return nil }
        return object["id"]?.stringValue ?? object["item"]?.objectValue?["id"]?.stringValue
    }

    /// A table and an operation on it, by which a batch keeps the permits it was given.
    private struct PermitKey: Hashable {
        var table: String
        var operation: AccessOperation
    }

    /// The write an operation asks for. An item is measured as the serializer writes it, unless
    /// `itemsFit` (the whole body was within the item limit). `permits`: those of the batch's
    /// earlier operations; a refusal is not kept, so each refused operation is asked again and
    /// answers as its single route would.
    private func writeRequest(
        _ operation: JSONValue, itemsFit: Bool, permits: inout [PermitKey: TableRoutes.WritePermit], context: ServerRequestContext
    ) throws(APIError) -> WriteRequest {
        guard let object = operation.objectValue else {
            throw APIError.badRequest("an operation is a JSON object, not \(operation.kindName)")
        }
        guard let methodName = object["method"]?.stringValue, let method = WriteRequest.Method(rawValue: methodName) else {
            throw APIError.badRequest(#""method" must be "POST", "PATCH" or "DELETE""#)
        }
        guard let table = object["table"]?.stringValue else { throw APIError.badRequest(#""table" is missing"#) }
        var id: String?
        switch object["id"] {
        case nil, .null?: id = nil
        case .string(let value)?: id = value
        case let other?: throw APIError.badRequest(#""id" must be a string, not \#(other.kindName)"#)
        }
        var item: [String: JSONValue]?
        switch object["item"] {
        case nil, .null?: item = nil
        case .object(let value)?:
            guard itemsFit || JSONSerializer.bytes(.object(value)).count <= configuration.maximumBodyBytes else {
                throw APIError(.contentTooLarge, "the item is larger than \(configuration.maximumBodyBytes) bytes")
            }
            item = value
        case let other?: throw APIError.badRequest(#""item" must be a JSON object, not \#(other.kindName)"#)
        }
        let key = PermitKey(table: table, operation: TableRoutes.accessOperation(method, id: id))
        let permit: TableRoutes.WritePermit
        if let kept = permits[key] {
            permit = kept
        } else {
            permit = try tables.writePermit(table, key.operation, context)
            permits[key] = permit
        }
        return try tables.writeRequest(
            method, table: table, id: id, body: item, ifMatch: object["ifMatch"]?.stringValue, context, permit: permit)
    }
}
