import Crypto
import Foundation
import TSyncModel

/// Login, token checks and logout (docs/DESIGN.md §4).
///
/// Tokens are 256 random bits from the system CSPRNG; only their SHA-256 is stored, so a copy of the
/// database does not hand out sessions. Failed logins are counted per account and per client address
/// in the database, so every server instance sharing it enforces the same limit.
public struct Authenticator: Sendable {
    public struct Policy: Sendable {
        /// How long a token lives after login.
        public var tokenLifetime: Duration
        /// Failed logins allowed per account and per address within `failureWindow`; one more is 429.
        public var maximumFailures: Int
        public var failureWindow: Duration

        public init(tokenLifetime: Duration = .seconds(24 * 3600), maximumFailures: Int = 5, failureWindow: Duration = .seconds(15 * 60)) {
            self.tokenLifetime = tokenLifetime
            self.maximumFailures = maximumFailures
            self.failureWindow = failureWindow
        }
    }

    public enum LoginResult: Sendable, Equatable {
        case success(token: String, accountName: String)
        case invalidCredentials
        /// Too many failures: try again in this many seconds (the `Retry-After` value).
        case throttled(retryAfterSeconds: Int)
    }

    private let storage: any ServerStorage
    private let hasher: PasswordHasher
    private let policy: Policy
    private let clock: @Sendable () -> Timestamp
    /// Verified against when the account does not exist, so that a missing account costs the same
    /// time as a wrong password and names cannot be probed by timing.
    private let decoyHash = LockedValue<String?>(nil)

    public init(
        storage: any ServerStorage, hasher: PasswordHasher = PasswordHasher(), policy: Policy = Policy(),
        clock: @escaping @Sendable () -> Timestamp = Timestamp.now
    ) {
        self.storage = storage
        self.hasher = hasher
        self.policy = policy
        self.clock = clock
    }

    public func login(username: String, password: String, clientAddress: String?) async throws -> LoginResult {
        let now = clock()
        let accountKey = "account:" + username
        let keys = [accountKey] + (clientAddress.map { ["address:" + $0] } ?? [])
        var blockedUntil: Timestamp?
        for key in keys {
            let attempts = try await storage.countLoginAttempt(key: key, windowMilliseconds: policy.failureWindow.milliseconds, now: now)
            if attempts.count > policy.maximumFailures { blockedUntil = max(blockedUntil ?? attempts.windowEnd, attempts.windowEnd) }
        }
        if let blockedUntil {
            let remaining = blockedUntil.millisecondsSinceEpoch - now.millisecondsSinceEpoch
            return .throttled(retryAfterSeconds: Int(max(1, (remaining + 999) / 1000)))
        }

        let account = try await storage.account(name: username)
        let encoded: String
        if let account { encoded = account.passwordHash } else { encoded = try await decoy() }
        var verified = false
        if password.utf8.count <= AccountRules.maximumPasswordLength {
            verified = await hasher.verify(password, against: encoded)
        }
        guard let account, verified else { return .invalidCredentials }

        // A success is not a failure: it wipes the account's count and takes back its own attempt
        // from the address's count (other failures from that address still count).
        try await storage.clearLoginAttempts(key: accountKey)
        for key in keys.dropFirst() { try await storage.forgiveLoginAttempt(key: key) }
        try await storage.purgeExpiredTokens(now: now)
        let token = Self.newToken()
        let expiresAt = Timestamp(millisecondsSinceEpoch: now.millisecondsSinceEpoch + policy.tokenLifetime.milliseconds)
        try await storage.storeToken(hash: Self.tokenHash(token), accountName: account.name, expiresAt: expiresAt)
        return .success(token: token, accountName: account.name)
    }

    /// The account a presented token belongs to, or nil when it is unknown, revoked or expired.
    public func accountName(forToken token: String) async throws -> String? {
        guard !token.isEmpty, token.utf8.count <= 512 else { return nil }
        return try await storage.accountName(forTokenHash: Self.tokenHash(token), now: clock())
    }

    public func logout(token: String) async throws {
        try await storage.revokeToken(hash: Self.tokenHash(token))
    }

    static func newToken() -> String {
        let key = SymmetricKey(size: .bits256)
        let data = key.withUnsafeBytes { Data($0) }
        return data.base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func tokenHash(_ token: String) -> String {
        SHA256.hash(data: Array(token.utf8)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    private func decoy() async throws -> String {
        if let hash = decoyHash.withLock({ $0 }) { return hash }
        let hash = try await hasher.hash(Self.newToken())
        decoyHash.withLock { $0 = hash }
        return hash
    }
}

extension Duration {
    /// Whole milliseconds, the unit of every time the server stores.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
