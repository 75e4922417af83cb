import GRDB
import TSyncModel

extension SQLiteStorage {
    // MARK: - Accounts

    public func createAccount(name: String, passwordHash: String, createdAt: Timestamp) async throws {
        try await pool.write { db in
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM tsync_accounts WHERE name = ?", arguments: [name]) == true {
                throw TSyncError.invalidInput("an account named \(Identifiers.quoted(name)) already exists: use `tsync user passwd` to change its password")
            }
            try db.execute(
                sql: "INSERT INTO tsync_accounts (name, password_hash, created_at) VALUES (?, ?, ?)",
                arguments: [name, passwordHash, createdAt.iso8601]
            )
        }
    }

    public func setPasswordHash(name: String, passwordHash: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "UPDATE tsync_accounts SET password_hash = ? WHERE name = ?", arguments: [passwordHash, name])
            guard db.changesCount > 0 else { return false }
            try db.execute(sql: "DELETE FROM tsync_tokens WHERE account_name = ?", arguments: [name])
            return true
        }
    }

    public func removeAccount(name: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM tsync_accounts WHERE name = ?", arguments: [name])
            guard db.changesCount > 0 else { return false }
            try db.execute(sql: "DELETE FROM tsync_tokens WHERE account_name = ?", arguments: [name])
            return true
        }
    }

    public func account(name: String) async throws -> Account? {
        try await pool.read { db in
            try Row.fetchOne(db, sql: "SELECT name, password_hash, created_at FROM tsync_accounts WHERE name = ?", arguments: [name])
                .map(Self.decodeAccount)
        }
    }

    public func accounts() async throws -> [Account] {
        try await pool.read { db in
            try Row.fetchAll(db, sql: "SELECT name, password_hash, created_at FROM tsync_accounts ORDER BY name").map(Self.decodeAccount)
        }
    }

    private static func decodeAccount(_ row: Row) -> Account {
        Account(
            name: row["name"], passwordHash: row["password_hash"],
            createdAt: Timestamp(iso8601: row["created_at"]) ?? Timestamp(millisecondsSinceEpoch: 0)
        )
    }

    // MARK: - Tokens

    public func storeToken(hash: String, accountName: String, expiresAt: Timestamp) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO tsync_tokens (token_hash, account_name, expires_at) VALUES (?, ?, ?)",
                arguments: [hash, accountName, expiresAt.millisecondsSinceEpoch]
            )
        }
    }

    public func accountName(forTokenHash hash: String, now: Timestamp) async throws -> String? {
        try await pool.read { db in
            try String.fetchOne(
                db, sql: "SELECT account_name FROM tsync_tokens WHERE token_hash = ? AND expires_at > ?",
                arguments: [hash, now.millisecondsSinceEpoch]
            )
        }
    }

    public func revokeToken(hash: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM tsync_tokens WHERE token_hash = ?", arguments: [hash])
        }
    }

    public func purgeExpiredTokens(now: Timestamp) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM tsync_tokens WHERE expires_at <= ?", arguments: [now.millisecondsSinceEpoch])
        }
    }

    // MARK: - Login throttling

    public func loginBlockedUntil(key: String, limit: Int, now: Timestamp) async throws -> Timestamp? {
        try await pool.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT failures, window_end FROM tsync_login_failures WHERE key = ?", arguments: [key])
            else { return nil }
            let failures: Int = row["failures"]
            let windowEnd: Int64 = row["window_end"]
            guard failures >= limit, windowEnd > now.millisecondsSinceEpoch else { return nil }
            return Timestamp(millisecondsSinceEpoch: windowEnd)
        }
    }

    public func recordLoginFailure(key: String, windowMilliseconds: Int64, now: Timestamp) async throws {
        let nowMs = now.millisecondsSinceEpoch
        try await pool.write { db in
            // One statement, so concurrent failures (from any instance) all count.
            try db.execute(
                sql: """
                    INSERT INTO tsync_login_failures (key, failures, window_end) VALUES (?, 1, ?)
                    ON CONFLICT(key) DO UPDATE SET
                        failures = CASE WHEN window_end > ? THEN failures + 1 ELSE 1 END,
                        window_end = CASE WHEN window_end > ? THEN window_end ELSE excluded.window_end END
                    """,
                arguments: [key, nowMs + windowMilliseconds, nowMs, nowMs]
            )
            // Windows that are over hold no information: keep the table small.
            try db.execute(sql: "DELETE FROM tsync_login_failures WHERE window_end <= ?", arguments: [nowMs])
        }
    }

    public func clearLoginFailures(key: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM tsync_login_failures WHERE key = ?", arguments: [key])
        }
    }
}
