import GRDB
import TSyncModel

extension SQLiteStorage {
    // MARK: - Accounts

    public func createAccount(name: String, passwordHash: String, createdAt: Timestamp) async throws {
        try await pool.write { db in
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM tsync_accounts WHERE name = ?", arguments: [name]) == true {
                throw TSyncError(
                    .invalidInput, "an account named \(Identifiers.quoted(name)) already exists", remedy: .changePassword(account: name))
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
            // Its known clients were known by the old password: strangers' lockout holds them again.
            try db.execute(sql: "DELETE FROM tsync_known_clients WHERE account_name = ?", arguments: [name])
            return true
        }
    }

    public func removeAccount(name: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM tsync_accounts WHERE name = ?", arguments: [name])
            guard db.changesCount > 0 else { return false }
            try db.execute(sql: "DELETE FROM tsync_tokens WHERE account_name = ?", arguments: [name])
            try db.execute(sql: "DELETE FROM tsync_known_clients WHERE account_name = ?", arguments: [name])
            try db.execute(sql: "DELETE FROM tsync_account_labels WHERE account_name = ?", arguments: [name])
            try db.execute(sql: "DELETE FROM tsync_label_changes WHERE account_name = ?", arguments: [name])
            return true
        }
    }

    public func changeLabels(name: String, kind: AccountLabel, add: [String], remove: [String]) async throws -> Bool {
        try await pool.write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM tsync_accounts WHERE name = ?", arguments: [name]) == true else { return false }
            try self.changeLabels(db, name: name, kind: kind, add: add, remove: remove, now: self.clock())
            return true
        }
    }

    public func labels() async throws -> [String: [AccountLabel: [String]]] {
        try await pool.read { db in
            var labels: [String: [AccountLabel: [String]]] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT account_name, kind, label FROM tsync_account_labels ORDER BY label") {
                guard let kind = AccountLabel(rawValue: row[1]) else { continue }
                labels[row[0], default: [:]][kind, default: []].append(row[2])
            }
            return labels
        }
    }

    public func account(name: String) async throws -> Account? {
        let found = try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT name, password_hash, created_at FROM tsync_accounts WHERE lower(name) = lower(?)
                    ORDER BY name = ? DESC LIMIT 2
                    """,
                arguments: [name, name]
            ).map(Self.decodeAccount)
        }
        return Account.denoted(by: name, among: found)
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

    public func storeToken(hash: String, accountName: String, expiresAt: Timestamp, scope: String) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "INSERT INTO tsync_tokens (token_hash, account_name, expires_at, scope) VALUES (?, ?, ?, ?)",
                arguments: [hash, accountName, expiresAt.millisecondsSinceEpoch, scope]
            )
        }
    }

    public func caller(forTokenHash hash: String, now: Timestamp) async throws -> Caller? {
        let rows = try await pool.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT t.account_name, t.scope, l.kind, l.label FROM tsync_tokens AS t
                    LEFT JOIN tsync_account_labels AS l ON l.account_name = t.account_name
                    WHERE t.token_hash = ? AND t.expires_at > ?
                    """,
                arguments: [hash, now.millisecondsSinceEpoch]
            ).map { row -> (String, String, String?, String?) in (row[0], row[1], row[2], row[3]) }
        }
        return Caller(rows: rows)
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

    public func countLoginAttempt(key: String, windowMilliseconds: Int64, now: Timestamp) async throws -> LoginAttempts {
        let nowMs = now.millisecondsSinceEpoch
        return try await pool.write { db in
            // Windows that are over hold no information: keep the table small.
            try db.execute(sql: "DELETE FROM tsync_login_attempts WHERE window_end <= ?", arguments: [nowMs])
            // One statement, so concurrent attempts (from any instance) all count.
            let row = try Row.fetchOne(
                db,
                sql: """
                    INSERT INTO tsync_login_attempts (key, attempts, window_end) VALUES (?, 1, ?)
                    ON CONFLICT(key) DO UPDATE SET attempts = attempts + 1
                    RETURNING attempts, window_end
                    """,
                arguments: [key, nowMs + windowMilliseconds]
            )
            let attempts: Int = row?["attempts"] ?? 1
            let windowEnd: Int64 = row?["window_end"] ?? nowMs + windowMilliseconds
            return LoginAttempts(count: attempts, windowEnd: Timestamp(millisecondsSinceEpoch: windowEnd))
        }
    }

    public func loginAttempts(key: String, now: Timestamp) async throws -> LoginAttempts? {
        try await pool.read { db in
            try Row.fetchOne(
                db, sql: "SELECT attempts, window_end FROM tsync_login_attempts WHERE key = ? AND window_end > ?",
                arguments: [key, now.millisecondsSinceEpoch]
            ).map { LoginAttempts(count: $0["attempts"], windowEnd: Timestamp(millisecondsSinceEpoch: $0["window_end"])) }
        }
    }

    public func forgiveLoginAttempt(key: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "UPDATE tsync_login_attempts SET attempts = attempts - 1 WHERE key = ? AND attempts > 0", arguments: [key])
        }
    }

    public func clearLoginAttempts(key: String) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM tsync_login_attempts WHERE key = ?", arguments: [key])
        }
    }

    public func clearLoginAttempts(accountKey: String, knownClientsOf accountName: String, addressKeyPrefix: String) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    DELETE FROM tsync_login_attempts WHERE key = ? OR substr(key, 1, length(?)) = ?
                        OR key IN (SELECT key FROM tsync_known_clients WHERE account_name = ?)
                    """,
                arguments: [accountKey, addressKeyPrefix, addressKeyPrefix, accountName])
        }
    }

    // MARK: - Known clients

    public func rememberClient(key: String, accountName: String, expiresAt: Timestamp, now: Timestamp, keepPerAccount: Int) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM tsync_known_clients WHERE expires_at <= ?", arguments: [now.millisecondsSinceEpoch])
            try db.execute(
                sql: """
                    INSERT INTO tsync_known_clients (key, account_name, expires_at) VALUES (?, ?, ?)
                    ON CONFLICT(key) DO UPDATE SET account_name = excluded.account_name, expires_at = excluded.expires_at
                    """,
                arguments: [key, accountName, expiresAt.millisecondsSinceEpoch])
            try db.execute(
                sql: """
                    DELETE FROM tsync_known_clients WHERE account_name = ? AND key NOT IN (
                        SELECT key FROM tsync_known_clients WHERE account_name = ? ORDER BY expires_at DESC LIMIT ?)
                    """,
                arguments: [accountName, accountName, keepPerAccount])
        }
    }

    public func knownClient(key: String, now: Timestamp) async throws -> String? {
        try await pool.read { db in
            try String.fetchOne(
                db, sql: "SELECT account_name FROM tsync_known_clients WHERE key = ? AND expires_at > ?",
                arguments: [key, now.millisecondsSinceEpoch])
        }
    }
}
