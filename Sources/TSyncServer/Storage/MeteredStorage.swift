import TSyncModel
import TSyncQuery

/// A `ServerStorage` that counts the records it reads and writes into `ServerMetrics` and hands
/// every call on to the real one: the routes stay unaware of metrics.
struct MeteredStorage: ServerStorage {
    let base: any ServerStorage
    let metrics: ServerMetrics

    /// The base's: without it a server with `--metrics` had no live route.
    var changes: ChangeFeed? { base.changes }

    func record(table: String, id: String, scope: OwnerScope) async throws -> Record? {
        let record = try await base.record(table: table, id: id, scope: scope)
        if record != nil { metrics.recordRead(records: 1) }
        return record
    }

    func query(table: String, _ query: RecordQuery, scope: OwnerScope) async throws -> RecordPage {
        let page = try await base.query(table: table, query, scope: scope)
        metrics.recordRead(records: page.count)
        return page
    }

    func quickQuery(table: String, _ query: RecordQuery, scope: OwnerScope, client: String?) async throws -> RecordPage? {
        guard let page = try await base.quickQuery(table: table, query, scope: scope, client: client) else { return nil }
        metrics.recordRead(records: page.count)
        return page
    }

    func query(table: String, _ query: RecordQuery, scope: OwnerScope, changes: ViewChanges) async throws -> RecordPage? {
        let page = try await base.query(table: table, query, scope: scope, changes: changes)
        metrics.recordRead(records: page?.count ?? 0)
        return page
    }

    func write(_ writes: [RecordWrite], atomic: Bool) async throws -> [WriteOutcome] {
        let outcomes = try await base.write(writes, atomic: atomic)
        let written = outcomes.count { outcome in
            switch outcome {
            case .inserted, .modified: true
            default: false
            }
        }
        metrics.recordWrite(batchSize: writes.count, written: written)
        return outcomes
    }

    func keepHistory(_ keeps: Bool) { base.keepHistory(keeps) }
    func shareReads(perClient: Int) { base.shareReads(perClient: perClient) }
    func limitTables(perAccount: Int) { base.limitTables(perAccount: perAccount) }

    func versions(table: String, id: String, scope: OwnerScope, top: Int, skip: Int) async throws -> [RecordVersion] {
        let versions = try await base.versions(table: table, id: id, scope: scope, top: top, skip: skip)
        metrics.recordRead(records: versions.count)
        return versions
    }

    func query(table: String, at time: Timestamp, _ query: RecordQuery, scope: OwnerScope) async throws -> RecordPage {
        let page = try await base.query(table: table, at: time, query, scope: scope)
        metrics.recordRead(records: page.count)
        return page
    }

    func maintain(_ retention: Retention, now: Timestamp, seed: Bool, settle: Duration) async throws -> MaintenanceReport {
        try await base.maintain(retention, now: now, seed: seed, settle: settle)
    }

    func declareIndexes(_ fields: [IndexedField]) async throws -> [String] { try await base.declareIndexes(fields) }
    func checkReady() async throws { try await base.checkReady() }

    func createAccount(name: String, passwordHash: String, createdAt: Timestamp) async throws {
        try await base.createAccount(name: name, passwordHash: passwordHash, createdAt: createdAt)
    }
    func setPasswordHash(name: String, passwordHash: String) async throws -> Bool {
        try await base.setPasswordHash(name: name, passwordHash: passwordHash)
    }
    func removeAccount(name: String) async throws -> Bool { try await base.removeAccount(name: name) }
    func account(name: String) async throws -> Account? { try await base.account(name: name) }
    func accounts() async throws -> [Account] { try await base.accounts() }

    func storeToken(hash: String, accountName: String, expiresAt: Timestamp) async throws {
        try await base.storeToken(hash: hash, accountName: accountName, expiresAt: expiresAt)
    }
    func accountName(forTokenHash hash: String, now: Timestamp) async throws -> String? {
        try await base.accountName(forTokenHash: hash, now: now)
    }
    func storeToken(hash: String, accountName: String, expiresAt: Timestamp, scope: String) async throws {
        try await base.storeToken(hash: hash, accountName: accountName, expiresAt: expiresAt, scope: scope)
    }
    func caller(forTokenHash hash: String, now: Timestamp) async throws -> Caller? { try await base.caller(forTokenHash: hash, now: now) }
    func changeLabels(name: String, kind: AccountLabel, add: [String], remove: [String]) async throws -> Bool {
        try await base.changeLabels(name: name, kind: kind, add: add, remove: remove)
    }
    func labels() async throws -> [String: [AccountLabel: [String]]] { try await base.labels() }
    func revokeToken(hash: String) async throws { try await base.revokeToken(hash: hash) }
    func purgeExpiredTokens(now: Timestamp) async throws { try await base.purgeExpiredTokens(now: now) }

    func countLoginAttempt(key: String, windowMilliseconds: Int64, now: Timestamp) async throws -> LoginAttempts {
        try await base.countLoginAttempt(key: key, windowMilliseconds: windowMilliseconds, now: now)
    }
    func loginAttempts(key: String, now: Timestamp) async throws -> LoginAttempts? { try await base.loginAttempts(key: key, now: now) }
    func forgiveLoginAttempt(key: String) async throws { try await base.forgiveLoginAttempt(key: key) }
    func clearLoginAttempts(key: String) async throws { try await base.clearLoginAttempts(key: key) }
    func clearLoginAttempts(accountKey: String, knownClientsOf accountName: String, addressKeyPrefix: String) async throws {
        try await base.clearLoginAttempts(accountKey: accountKey, knownClientsOf: accountName, addressKeyPrefix: addressKeyPrefix)
    }

    func rememberClient(key: String, accountName: String, expiresAt: Timestamp, now: Timestamp, keepPerAccount: Int) async throws {
        try await base.rememberClient(key: key, accountName: accountName, expiresAt: expiresAt, now: now, keepPerAccount: keepPerAccount)
    }
    func knownClient(key: String, now: Timestamp) async throws -> String? { try await base.knownClient(key: key, now: now) }
}
