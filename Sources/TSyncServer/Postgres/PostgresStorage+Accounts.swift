import PostgresNIO
import TSyncModel

/// Accounts, tokens and login counters live in the database, so that a token issued by one
/// instance is honoured by every other, and a password-guessing client meets the same limit
/// whichever instance it reaches.
extension PostgresStorage {
    // MARK: - Accounts

    public func createAccount(name: String, passwordHash: String, createdAt: Timestamp) async throws {
        var insert = PostgresStatement("INSERT INTO tsync_accounts (name, password_hash, created_at) VALUES (")
        insert.append([insert.bind(name), insert.bind(passwordHash), insert.bind(createdAt.iso8601)].joined(separator: ", "))
        insert.append(") ON CONFLICT (name) DO NOTHING RETURNING name")
        if try await database.rows(insert).isEmpty {
            throw TSyncError.invalidInput(
                "an account named \(Identifiers.quoted(name)) already exists: use `tsync user passwd` to change its password")
        }
    }

    public func setPasswordHash(name: String, passwordHash: String) async throws -> Bool {
        try await database.transaction { transaction in
            var update = PostgresStatement("UPDATE tsync_accounts SET password_hash = ")
            update.append(update.bind(passwordHash) + " WHERE name = " + update.bind(name) + " RETURNING name")
            guard try await !transaction.rows(update).isEmpty else { return .rollback(false) }
            try await transaction.execute(Self.deletingTokens(of: name))
            return .commit(true)
        }
    }

    public func removeAccount(name: String) async throws -> Bool {
        try await database.transaction { transaction in
            var delete = PostgresStatement("DELETE FROM tsync_accounts WHERE name = ")
            delete.append(delete.bind(name) + " RETURNING name")
            guard try await !transaction.rows(delete).isEmpty else { return .rollback(false) }
            try await transaction.execute(Self.deletingTokens(of: name))
            return .commit(true)
        }
    }

    public func account(name: String) async throws -> Account? {
        var select = PostgresStatement("SELECT name, password_hash, created_at FROM tsync_accounts WHERE name = ")
        select.append(select.bind(name))
        return try await database.rows(select).first.map(Self.decodeAccount)
    }

    public func accounts() async throws -> [Account] {
        try await database.rows(PostgresStatement("SELECT name, password_hash, created_at FROM tsync_accounts ORDER BY name COLLATE \"C\""))
            .map(Self.decodeAccount)
    }

    private static func decodeAccount(_ row: PostgresRow) throws -> Account {
        let (name, passwordHash, createdAt) = try row.decode((String, String, String).self)
        return Account(
            name: name, passwordHash: passwordHash, createdAt: Timestamp(iso8601: createdAt) ?? Timestamp(millisecondsSinceEpoch: 0))
    }

    private static func deletingTokens(of name: String) -> PostgresStatement {
        var delete = PostgresStatement("DELETE FROM tsync_tokens WHERE account_name = ")
        delete.append(delete.bind(name))
        return delete
    }

    // MARK: - Tokens

    public func storeToken(hash: String, accountName: String, expiresAt: Timestamp) async throws {
        var insert = PostgresStatement("INSERT INTO tsync_tokens (token_hash, account_name, expires_at) VALUES (")
        insert.append([insert.bind(hash), insert.bind(accountName), insert.bind(expiresAt.millisecondsSinceEpoch)].joined(separator: ", ") + ")")
        try await database.rows(insert)
    }

    public func accountName(forTokenHash hash: String, now: Timestamp) async throws -> String? {
        var select = PostgresStatement("SELECT account_name FROM tsync_tokens WHERE token_hash = ")
        select.append(select.bind(hash) + " AND expires_at > " + select.bind(now.millisecondsSinceEpoch))
        return try await database.rows(select).first?.decode(String.self)
    }

    public func revokeToken(hash: String) async throws {
        var delete = PostgresStatement("DELETE FROM tsync_tokens WHERE token_hash = ")
        delete.append(delete.bind(hash))
        try await database.rows(delete)
    }

    public func purgeExpiredTokens(now: Timestamp) async throws {
        var delete = PostgresStatement("DELETE FROM tsync_tokens WHERE expires_at <= ")
        delete.append(delete.bind(now.millisecondsSinceEpoch))
        try await database.rows(delete)
    }

    // MARK: - Login throttling

    public func loginBlockedUntil(key: String, limit: Int, now: Timestamp) async throws -> Timestamp? {
        var select = PostgresStatement("SELECT window_end FROM tsync_login_failures WHERE throttle_key = ")
        select.append(select.bind(key) + " AND failures >= " + select.bind(Int64(limit)))
        select.append(" AND window_end > " + select.bind(now.millisecondsSinceEpoch))
        return try await database.rows(select).first.map { Timestamp(millisecondsSinceEpoch: try $0.decode(Int64.self)) }
    }

    public func recordLoginFailure(key: String, windowMilliseconds: Int64, now: Timestamp) async throws {
        let nowMs = now.millisecondsSinceEpoch
        // One statement, so concurrent failures (from any instance) all count.
        var upsert = PostgresStatement("INSERT INTO tsync_login_failures AS f (throttle_key, failures, window_end) VALUES (")
        let current = upsert.bind(nowMs)
        upsert.append(upsert.bind(key) + ", 1, " + upsert.bind(nowMs + windowMilliseconds) + ") ")
        upsert.append(
            """
            ON CONFLICT (throttle_key) DO UPDATE SET
                failures = CASE WHEN f.window_end > \(current) THEN f.failures + 1 ELSE 1 END,
                window_end = CASE WHEN f.window_end > \(current) THEN f.window_end ELSE excluded.window_end END
            """)
        try await database.rows(upsert)
        // Windows that are over hold no information: keep the table small.
        var purge = PostgresStatement("DELETE FROM tsync_login_failures WHERE window_end <= ")
        purge.append(purge.bind(nowMs))
        try await database.rows(purge)
    }

    public func clearLoginFailures(key: String) async throws {
        var delete = PostgresStatement("DELETE FROM tsync_login_failures WHERE throttle_key = ")
        delete.append(delete.bind(key))
        try await database.rows(delete)
    }
}
