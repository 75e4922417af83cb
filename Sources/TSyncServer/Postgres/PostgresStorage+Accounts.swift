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
            throw TSyncError(
                .invalidInput, "an account named \(Identifiers.quoted(name)) already exists", remedy: .changePassword(account: name))
        }
    }

    public func setPasswordHash(name: String, passwordHash: String) async throws -> Bool {
        try await database.transaction { transaction in
            var update = PostgresStatement("UPDATE tsync_accounts SET password_hash = ")
            update.append(update.bind(passwordHash) + " WHERE name = " + update.bind(name) + " RETURNING name")
            guard try await !transaction.rows(update).isEmpty else { return .rollback(false) }
            try await transaction.execute(Self.deletingTokens(of: name))
            // Its known clients were known by the old password: strangers' lockout holds them again.
            var forget = PostgresStatement("DELETE FROM tsync_known_clients WHERE account_name = ")
            forget.append(forget.bind(name))
            try await transaction.execute(forget)
            return .commit(true)
        }
    }

    public func removeAccount(name: String) async throws -> Bool {
        try await database.transaction { transaction in
            var delete = PostgresStatement("DELETE FROM tsync_accounts WHERE name = ")
            delete.append(delete.bind(name) + " RETURNING name")
            guard try await !transaction.rows(delete).isEmpty else { return .rollback(false) }
            try await transaction.execute(Self.deletingTokens(of: name))
            var forget = PostgresStatement("DELETE FROM tsync_known_clients WHERE account_name = ")
            forget.append(forget.bind(name))
            try await transaction.execute(forget)
            var labels = PostgresStatement("DELETE FROM tsync_account_labels WHERE account_name = ")
            labels.append(labels.bind(name))
            try await transaction.execute(labels)
            var changes = PostgresStatement("DELETE FROM tsync_label_changes WHERE account_name = ")
            changes.append(changes.bind(name))
            try await transaction.execute(changes)
            return .commit(true)
        }
    }

    public func changeLabels(name: String, kind: AccountLabel, add: [String], remove: [String]) async throws -> Bool {
        try await database.transaction { transaction in
            var exists = PostgresStatement("SELECT name FROM tsync_accounts WHERE name = ")
            exists.append(exists.bind(name))
            guard try await !transaction.rows(exists).isEmpty else { return .rollback(false) }
            try await self.changeLabels(transaction, name: name, kind: kind, add: add, remove: remove)
            return .commit(true)
        }
    }

    public func labels() async throws -> [String: [AccountLabel: [String]]] {
        var labels: [String: [AccountLabel: [String]]] = [:]
        for row in try await database.rows(PostgresStatement("SELECT account_name, kind, label FROM tsync_account_labels ORDER BY label")) {
            let (name, kindName, label) = try row.decode((String, String, String).self)
            guard let kind = AccountLabel(rawValue: kindName) else { continue }
            labels[name, default: [:]][kind, default: []].append(label)
        }
        return labels
    }

    public func account(name: String) async throws -> Account? {
        var select = PostgresStatement("SELECT name, password_hash, created_at FROM tsync_accounts WHERE lower(name) = lower(")
        select.append(select.bind(name) + ") ORDER BY name = " + select.bind(name) + " DESC LIMIT 2")
        return Account.denoted(by: name, among: try await database.rows(select).map(Self.decodeAccount))
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
        insert.append(
            [insert.bind(hash), insert.bind(accountName), insert.bind(expiresAt.millisecondsSinceEpoch)].joined(separator: ", ") + ")")
        try await database.rows(insert)
    }

    public func storeToken(hash: String, accountName: String, expiresAt: Timestamp, scope: String) async throws {
        var insert = PostgresStatement("INSERT INTO tsync_tokens (token_hash, account_name, expires_at, scope) VALUES (")
        insert.append(
            [insert.bind(hash), insert.bind(accountName), insert.bind(expiresAt.millisecondsSinceEpoch), insert.bind(scope)].joined(
                separator: ", ") + ")")
        try await database.rows(insert)
    }

    public func caller(forTokenHash hash: String, now: Timestamp) async throws -> Caller? {
        var select = PostgresStatement(
            "SELECT t.account_name, t.scope, l.kind, l.label FROM tsync_tokens AS t "
                + "LEFT JOIN tsync_account_labels AS l ON l.account_name = t.account_name WHERE t.token_hash = ")
        select.append(select.bind(hash) + " AND t.expires_at > " + select.bind(now.millisecondsSinceEpoch))
        let rows = try await database.rows(select).map { try $0.decode((String, String, String?, String?).self) }
        return Caller(rows: rows)
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

    public func countLoginAttempt(key: String, windowMilliseconds: Int64, now: Timestamp) async throws -> LoginAttempts {
        let nowMs = now.millisecondsSinceEpoch
        // Windows that are over hold no information: keep the table small.
        var purge = PostgresStatement("DELETE FROM tsync_login_attempts WHERE window_end <= ")
        purge.append(purge.bind(nowMs))
        try await database.rows(purge)
        // One statement, so concurrent attempts (from any instance) all count. A window that ended
        // between the purge and here starts again.
        var upsert = PostgresStatement("INSERT INTO tsync_login_attempts AS a (key, attempts, window_end) VALUES (")
        let current = upsert.bind(nowMs)
        upsert.append(upsert.bind(key) + ", 1, " + upsert.bind(nowMs + windowMilliseconds) + ") ")
        upsert.append(
            """
            ON CONFLICT (key) DO UPDATE SET
                attempts = CASE WHEN a.window_end > \(current) THEN a.attempts + 1 ELSE 1 END,
                window_end = CASE WHEN a.window_end > \(current) THEN a.window_end ELSE excluded.window_end END
            RETURNING attempts, window_end
            """)
        guard let row = try await database.rows(upsert).first else {
            throw TSyncError.failure("PostgreSQL at \(database.url) returned nothing for a login attempt count")
        }
        let (attempts, windowEnd) = try row.decode((Int32, Int64).self)
        return LoginAttempts(count: Int(attempts), windowEnd: Timestamp(millisecondsSinceEpoch: windowEnd))
    }

    public func loginAttempts(key: String, now: Timestamp) async throws -> LoginAttempts? {
        var select = PostgresStatement("SELECT attempts, window_end FROM tsync_login_attempts WHERE key = ")
        select.append(select.bind(key) + " AND window_end > " + select.bind(now.millisecondsSinceEpoch))
        guard let row = try await database.rows(select).first else { return nil }
        let (attempts, windowEnd) = try row.decode((Int32, Int64).self)
        return LoginAttempts(count: Int(attempts), windowEnd: Timestamp(millisecondsSinceEpoch: windowEnd))
    }

    public func forgiveLoginAttempt(key: String) async throws {
        var update = PostgresStatement("UPDATE tsync_login_attempts SET attempts = attempts - 1 WHERE key = ")
        update.append(update.bind(key) + " AND attempts > 0")
        try await database.rows(update)
    }

    public func clearLoginAttempts(key: String) async throws {
        var delete = PostgresStatement("DELETE FROM tsync_login_attempts WHERE key = ")
        delete.append(delete.bind(key))
        try await database.rows(delete)
    }

    public func clearLoginAttempts(accountKey: String, knownClientsOf accountName: String, addressKeyPrefix: String) async throws {
        var delete = PostgresStatement("DELETE FROM tsync_login_attempts WHERE key = ")
        delete.append(delete.bind(accountKey) + " OR left(key, char_length(" + delete.bind(addressKeyPrefix) + ")) = ")
        delete.append(delete.bind(addressKeyPrefix) + " OR key IN (SELECT key FROM tsync_known_clients WHERE account_name = ")
        delete.append(delete.bind(accountName) + ")")
        try await database.rows(delete)
    }

    // MARK: - Known clients

    public func rememberClient(key: String, accountName: String, expiresAt: Timestamp, now: Timestamp, keepPerAccount: Int) async throws {
        try await database.transaction { transaction in
            var purge = PostgresStatement("DELETE FROM tsync_known_clients WHERE expires_at <= ")
            purge.append(purge.bind(now.millisecondsSinceEpoch))
            try await transaction.execute(purge)
            var upsert = PostgresStatement("INSERT INTO tsync_known_clients (key, account_name, expires_at) VALUES (")
            upsert.append(
                [upsert.bind(key), upsert.bind(accountName), upsert.bind(expiresAt.millisecondsSinceEpoch)].joined(separator: ", "))
            upsert.append(") ON CONFLICT (key) DO UPDATE SET account_name = excluded.account_name, expires_at = excluded.expires_at")
            try await transaction.execute(upsert)
            var trim = PostgresStatement("DELETE FROM tsync_known_clients WHERE account_name = ")
            let account = trim.bind(accountName)
            trim.append(account + " AND key NOT IN (SELECT key FROM tsync_known_clients WHERE account_name = " + account)
            trim.append(" ORDER BY expires_at DESC LIMIT " + trim.bind(Int64(keepPerAccount)) + ")")
            try await transaction.execute(trim)
            return .commit(())
        }
    }

    public func knownClient(key: String, now: Timestamp) async throws -> String? {
        var select = PostgresStatement("SELECT account_name FROM tsync_known_clients WHERE key = ")
        select.append(select.bind(key) + " AND expires_at > " + select.bind(now.millisecondsSinceEpoch))
        return try await database.rows(select).first?.decode(String.self)
    }
}
