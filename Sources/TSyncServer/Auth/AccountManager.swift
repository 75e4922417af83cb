import TSyncModel

/// Account administration for `tsync user`: the rules and hashing live here, not in the command.
public struct AccountManager: Sendable {
    private let storage: any ServerStorage
    private let hasher: PasswordHasher

    public init(storage: any ServerStorage, hasher: PasswordHasher = PasswordHasher()) {
        self.storage = storage
        self.hasher = hasher
    }

    public func add(name: String, password: String, roles: [String] = [], groups: [String] = []) async throws {
        try AccountRules.validateName(name)
        try AccountRules.validatePassword(password)
        for role in roles { try AccessRules.validateLabel(role, kind: "role") }
        for group in groups { try AccessRules.validateLabel(group, kind: "group") }
        // `account(name:)` finds names that differ only in case: they are one account.
        if let existing = try await storage.account(name: name) {
            let sameSpelling = existing.name == name
            throw TSyncError(
                .invalidInput,
                sameSpelling
                    ? "an account named \(Identifiers.quoted(name)) already exists"
                    : "an account named \(Identifiers.quoted(existing.name)) already exists, and names that differ only in case are one account",
                remedy: .changePassword(account: existing.name))
        }
        try await storage.createAccount(name: name, passwordHash: try await hasher.hash(password), createdAt: Timestamp.now())
        if !roles.isEmpty { _ = try await storage.changeLabels(name: name, kind: .role, add: roles, remove: []) }
        if !groups.isEmpty { _ = try await storage.changeLabels(name: name, kind: .group, add: groups, remove: []) }
    }

    /// Adds and removes roles or groups of an account (`tsync user role`, `tsync user group`).
    /// Servers read them with each request's token, so the change applies to their next request
    /// (docs/DESIGN.md §11.1). Returns the account's labels of that kind afterwards.
    @discardableResult
    public func changeLabels(name: String, kind: AccountLabel, add: [String], remove: [String]) async throws -> [String] {
        for label in add + remove { try AccessRules.validateLabel(label, kind: kind.rawValue) }
        guard let account = try await storage.account(name: name),
            try await storage.changeLabels(name: account.name, kind: kind, add: add, remove: remove)
        else { throw Self.noSuchAccount(name) }
        return try await storage.labels()[account.name]?[kind] ?? []
    }

    /// Sets a new password; the account's tokens are revoked, so old sessions must log in again,
    /// and its known clients forgotten: their exemption from strangers' lockout ends with the
    /// password they were known by (docs/DESIGN.md §11).
    public func changePassword(name: String, password: String) async throws {
        try AccountRules.validatePassword(password)
        guard try await storage.setPasswordHash(name: name, passwordHash: try await hasher.hash(password)) else {
            throw Self.noSuchAccount(name)
        }
    }

    /// Removes the account and its tokens. Its records in per-user tables stay, owned by the name.
    public func remove(name: String) async throws {
        guard try await storage.removeAccount(name: name) else { throw Self.noSuchAccount(name) }
    }

    /// A new token for the account (`tsync user token`, for a CI secret store), valid for
    /// `lifetime`; stored only as its hash, like a login's, so `changePassword` and `remove`
    /// revoke it. The token is returned once and kept nowhere.
    /// With a `scope`, the token may do less than its account: only read, or only reach some
    /// tables (docs/DESIGN.md §11.1).
    public func mintToken(name: String, lifetime: Duration, scope: TokenScope = TokenScope()) async throws -> String {
        guard lifetime >= .seconds(60) else { throw TSyncError.usage("a token must live at least one minute") }
        for table in scope.tables ?? [] { try Identifiers.validateTableName(table) }
        guard let account = try await storage.account(name: name) else { throw Self.noSuchAccount(name) }
        let token = Authenticator.newToken()
        let now = Timestamp.now()
        let expiresAt = Timestamp(millisecondsSinceEpoch: now.millisecondsSinceEpoch + lifetime.milliseconds)
        if let scope = scope.narrowed {
            try await storage.storeToken(
                hash: Authenticator.tokenHash(token), accountName: account.name, expiresAt: expiresAt, scope: scope.stored)
        } else {
            try await storage.storeToken(hash: Authenticator.tokenHash(token), accountName: name, expiresAt: expiresAt)
        }
        return token
    }

    /// Lets the account log in again at once (`tsync user unlock`): drops its name's count of
    /// failed logins (shared with the names that hash alike), its known clients' counts, and the counts of client addresses, which a lockout
    /// of a client the account does not know counts too (docs/DESIGN.md §11). Its password and
    /// tokens stay.
    public func unlock(name: String) async throws {
        guard let account = try await storage.account(name: name) else { throw Self.noSuchAccount(name) }
        try await storage.clearLoginAttempts(
            accountKey: Authenticator.nameKey(account.name), knownClientsOf: account.name,
            addressKeyPrefix: Authenticator.addressKeyPrefix)
    }

    /// The accounts, each with its roles and groups.
    public func list() async throws -> [Account] {
        let labels = try await storage.labels()
        return try await storage.accounts().map { account in
            var account = account
            account.roles = labels[account.name]?[.role] ?? []
            account.groups = labels[account.name]?[.group] ?? []
            return account
        }
    }

    /// The error of an account name that names no account.
    public static func noSuchAccount(_ name: String) -> TSyncError {
        TSyncError(.invalidInput, "no account named \(Identifiers.quoted(name))", remedy: .listAccounts)
    }
}
