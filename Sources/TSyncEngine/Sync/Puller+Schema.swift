import TSyncModel

extension Puller {
    /// Keeps the store's copy of the table's schema (docs/DESIGN.md §16) the server's: a page that
    /// announces a tag the store does not hold makes the pull read the schema
    /// (`SyncRemote.tableSchema`) and keep it; a page that announces none drops the store's (the
    /// server has none now, or is a plain v2 server). Once per pull, on its first page. A schema
    /// this tsync cannot check (a keyword it does not know), or one that is not the schema the page
    /// announced (a cache replaying an older answer), is not kept, and said: changes then go
    /// unchecked until they reach the server, which still checks them, and the next pull asks again.
    /// Keeping a stale one could refuse here a change the server takes.
    func refreshSchema(_ page: StoredPage, table: String, summary: inout PullSummary) async throws(TSyncError) {
        guard !summary.schemaSeen else { return }
        summary.schemaSeen = true
        let held = try store.schemaTag(of: table)
        guard page.schemaTag != held else { return }
        guard let tag = page.schemaTag else {
            try store.saveSchema(nil, of: table)
            return
        }
        guard let document = try await remote.tableSchema(table: table) else { return }
        do {
            let schema = try RecordSchema(document)
            guard schema.tag == tag else {
                try store.saveSchema(nil, of: table)
                summary.warnings.append(
                    "the server announced schema \(tag) for table \(table) but sent another (\(schema.tag)): a cache replaying an older answer? Kept none: changes to it are checked only by the server until a pull reads the one announced"
                )
                return
            }
            try store.saveSchema(schema, of: table)
        } catch {
            try store.saveSchema(nil, of: table)
            summary.warnings.append(
                "the server's schema of table \(table) is one this tsync cannot check (\(error.message)): changes to it are checked only by the server"
            )
        }
    }
}
