import Hummingbird
import TSyncModel

/// A table's record type, a tsync extension (docs/DESIGN.md §4, §16): `GET /tables/$schema/{table}`
/// answers `{"table", "tag", "schema"}` for a table served with `--schema`, 404 `{"error"}` for
/// one without. A client learns that there is one from the `X-TSync-Schema` header of a page
/// read, so a plain v2 client never asks and tsync never assumes. Readable by whoever may read the
/// table: the schema says what its records look like, nothing of the records themselves.
struct SchemaRoutes: Sendable {
    let configuration: ServerConfiguration
    let tables: TableRoutes

    func register(on group: RouterGroup<ServerRequestContext>) {
        group.on(ServedRoutes.schema, use: schema)
    }

    @Sendable func schema(_ request: Request, context: ServerRequestContext) async throws -> Response {
        let table = try tables.tableName(context)
        _ = try tables.readView(table, context)
        guard let schema = configuration.schema(of: table) else {
            throw APIError(.notFound, "table \(Identifiers.quoted(table)) has no schema on this server")
        }
        return JSONResponse.make(.ok, ["table": .string(table), "tag": .string(schema.tag), "schema": schema.document])
    }
}
