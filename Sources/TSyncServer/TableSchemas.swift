import Foundation
import Logging
import ServiceLifecycle
import TSyncModel
import TSyncQuery

/// The tables' record types given to `tsync serve --schema TABLE=FILE` (docs/DESIGN.md §16).
public enum TableSchemas {
    /// Reads each `TABLE=FILE`: a missing file is `.fileMissing` (exit 66), one that is not JSON
    /// or uses a keyword tsync does not check `.invalidConfiguration` (78), naming the file.
    public static func load(_ specifications: [String]) throws(TSyncError) -> [String: RecordSchema] {
        var schemas: [String: RecordSchema] = [:]
        for specification in specifications {
            let (table, path) = try parse(specification)
            guard let data = FileManager.default.contents(atPath: path) else {
                throw TSyncError(
                    .fileMissing, "cannot read the schema file \(Identifiers.quoted(path)) of table \(table): it is missing or unreadable")
            }
            let document: JSONValue
            do {
                document = try JSONParser.parse(String(decoding: data, as: UTF8.self))
            } catch {
                throw TSyncError(.invalidConfiguration, "the schema file \(Identifiers.quoted(path)) is not JSON: \(error.message)")
            }
            do {
                schemas[table.lowercased()] = try RecordSchema(document)
            } catch {
                throw TSyncError(.invalidConfiguration, "the schema file \(Identifiers.quoted(path)): \(error.message)")
            }
        }
        return schemas
    }

    /// `TABLE=FILE`, the table's name checked; thrown as a usage error (64).
    public static func parse(_ specification: String) throws(TSyncError) -> (table: String, path: String) {
        guard let equals = specification.firstIndex(of: "="), equals != specification.startIndex,
            specification.index(after: equals) != specification.endIndex
        else {
            throw TSyncError.usage("--schema \(specification): expected TABLE=FILE, e.g. --schema todo=todo.schema.json")
        }
        let table = String(specification[..<equals])
        do {
            try Identifiers.validateTableName(table)
        } catch {
            throw TSyncError.usage("--schema \(specification): \(error.message)")
        }
        return (table, String(specification[specification.index(after: equals)...]))
    }
}

/// Reads each table with a schema once after start-up and logs how many stored records would
/// not match it: a schema never rewrites what is stored (a record stored before it can still be
/// deleted, and an update must make it match), but the operator learns of them at once. Runs
/// beside serving, page by page in id order, so that start-up does not grow with the tables.
struct SchemaAudit: Service {
    let storage: any ServerStorage
    let schemas: [String: RecordSchema]
    let logger: Logger
    static let pageSize = 1000

    func run() async throws {
        await cancelWhenGracefulShutdown {
            for (table, schema) in schemas.sorted(by: { $0.key < $1.key }) {
                do {
                    try await audit(table, schema)
                } catch is CancellationError {
                    return
                } catch {
                    logger.warning("schema of \(table): the stored records could not be read to check them: \(error)")
                }
            }
        }
    }

    private func audit(_ table: String, _ schema: RecordSchema) async throws {
        var last: String?
        var checked = 0
        var failing = 0
        var first: String?
        while !Task.isCancelled {
            var query = RecordQuery()
            query.filter = last.map { .binary(.gt, .field("id"), .literal(.string($0))) }
            query.orderBy = [SortKey(field: "id")]
            query.top = Self.pageSize
            let records = try await storage.query(table: table, query, scope: .shared).records()
            for record in records {
                let violations = schema.violations(of: record.fields)
                guard !violations.isEmpty else { continue }
                failing += 1
                if first == nil { first = "\(Identifiers.quoted(record.id)): \(SchemaViolation.summary(violations, limit: 3))" }
            }
            checked += records.count
            guard records.count == Self.pageSize, let end = records.last?.id else { break }
            last = end
        }
        if failing > 0, let first {
            logger.warning(
                "schema of \(table): \(failing) of the \(checked) stored records do not match it (first \(first)); they stay as they are, an update must make them match"
            )
        } else {
            logger.info("schema of \(table): the \(checked) stored records match it")
        }
    }
}
