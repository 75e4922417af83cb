import PostgresNIO

extension PostgresDatabase {
    /// Ready when a connection of its own opens and answers (not one of the pool's, which under
    /// load are all taken: `ReadinessCheck`), and the database takes writes: a hot standby, or a
    /// database turned read-only (`ALTER DATABASE … SET default_transaction_read_only = on`, which
    /// new sessions get), would answer every read and refuse every write.
    func checkReady() async throws {
        try await readiness.check { [self] in try await lookReady() }
    }

    private func lookReady() async throws {
        let look: (replica: Bool, readOnly: String)
        do {
            let connection = try await PostgresConnection.connect(configuration: try url.connectionConfiguration(), id: 2, logger: logger)
            let rows: [PostgresRow]
            do {
                let statement = PostgresStatement("SELECT pg_is_in_recovery(), current_setting('transaction_read_only')")
                rows = try await connection.query(statement.query, logger: logger).collect()
            } catch {
                try? await connection.close()
                throw error
            }
            try? await connection.close()
            look = try rows.first?.decode((Bool, String).self) ?? (false, "off")
        } catch {
            throw translated(error)
        }
        if look.replica {
            throw DatabaseTakesNoWrites(
                reason: "the database is a read-only replica",
                detail: "PostgreSQL at \(url) is a read-only replica (hot standby): every write would fail; point --db at the primary")
        }
        if look.readOnly == "on" {
            throw DatabaseTakesNoWrites(
                reason: "the database is read-only",
                detail:
                    "PostgreSQL at \(url) begins its transactions read-only (default_transaction_read_only is on): every write would fail")
        }
    }
}
