import Crypto
import Foundation
import NIOCore
import Synchronization
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
        /// How long a client that logged in stays known (its device token, its address).
        public var knownClientLifetime: Duration
        /// Known clients kept per account (the newest): a bound on what logins can make the server keep.
        public var knownClientsPerAccount: Int
        /// Strangers' failures are counted per name on one of this many counters (by a hash of
        /// the name), whether the name is an account or not: a made-up name and a real one are
        /// answered alike, and guesses at made-up names cannot grow the counter table.
        public var nameCounters: Int

        public init(
            tokenLifetime: Duration = .seconds(24 * 3600), maximumFailures: Int = 5, failureWindow: Duration = .seconds(15 * 60),
            knownClientLifetime: Duration = .seconds(30 * 24 * 3600), knownClientsPerAccount: Int = 20, nameCounters: Int = 16384
        ) {
            self.tokenLifetime = tokenLifetime
            self.maximumFailures = maximumFailures
            self.failureWindow = failureWindow
            self.knownClientLifetime = knownClientLifetime
            self.knownClientsPerAccount = knownClientsPerAccount
            self.nameCounters = nameCounters
        }
    }

    public enum LoginResult: Sendable, Equatable {
        /// `deviceToken`: what the client sends with its later logins to be known (docs/DESIGN.md §11).
        case success(token: String, accountName: String, deviceToken: String)
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
    private let decoyHash = DecoyHash()

    /// The decoy hash, made once and shared by the copies of the authenticator.
    private final class DecoyHash: Sendable {
        let hash = Mutex<String?>(nil)
    }

    public init(
        storage: any ServerStorage, hasher: PasswordHasher = PasswordHasher(), policy: Policy = Policy(),
        clock: @escaping @Sendable () -> Timestamp = Timestamp.now
    ) {
        self.storage = storage
        self.hasher = hasher
        self.policy = policy
        self.clock = clock
    }

    /// One login (docs/DESIGN.md §11). Sizes are checked before anything is written (400). A
    /// client the account knows (its device token, or an address it logged in from) is counted on
    /// its own key only, so strangers' failures do not lock it out; any other client is counted on
    /// its name's counter and on its address. A name that is no account takes the same steps
    /// (its known-client looks find nothing, its password is checked against a decoy hash), so
    /// it is answered as a real one would be. A login already refused by its counts is refused
    /// without writing; only one that goes on to the password check is counted.
    public func login(username: String, password: String, clientAddress: String?, deviceToken: String? = nil) async throws
        -> LoginResult
    {
        try AccountRules.checkLoginSizes(username: username, password: password)
        let now = clock()
        // No account can be named with U+0000 (PostgreSQL's text cannot hold it, and asking
        // fails): such a name is a made-up one, looked up nowhere.
        let storable = !username.utf8.contains(0)
        let account = storable ? try await storage.account(name: username) : nil
        let canonical = AccountRules.canonicalName(account?.name ?? username)
        let addressKey = clientAddress.map { Self.addressKeyPrefix + Self.throttlingAddress($0) }
        var knownKey: String?
        if let deviceToken, !deviceToken.isEmpty, deviceToken.utf8.count <= 512 {
            let known = try await storage.knownClient(key: Self.deviceKey(deviceToken), now: now)
            if let account, known == account.name { knownKey = Self.deviceKey(deviceToken) }
        }
        if knownKey == nil, storable, let addressKey {
            let known = try await storage.knownClient(key: "known:" + canonical + " " + addressKey, now: now)
            if let account, known == account.name { knownKey = "known:" + canonical + " " + addressKey }
        }
        let keys = knownKey.map { [$0] } ?? [nameKey(username)] + (addressKey.map { [$0] } ?? [])

        // Refused on the counts as they are: nothing is written.
        var current: [LoginAttempts?] = []
        for key in keys { current.append(try await storage.loginAttempts(key: key, now: now)) }
        if let retry = retryAfter(current, now: now, atLimit: true) { return .throttled(retryAfterSeconds: retry) }
        var counted: [LoginAttempts?] = []
        for key in keys {
            counted.append(try await storage.countLoginAttempt(key: key, windowMilliseconds: policy.failureWindow.milliseconds, now: now))
        }
        // Parallel guesses that all passed the look above: the counts decide.
        if let retry = retryAfter(counted, now: now, atLimit: false) { return .throttled(retryAfterSeconds: retry) }

        let encoded: String
        if let account { encoded = account.passwordHash } else { encoded = try await decoy() }
        let verified = await hasher.verify(password, against: encoded)
        guard let account, verified else { return .invalidCredentials }

        // A success is not a failure: it wipes the count of a known client's key, and takes back
        // its own attempt from a name's and an address's counts (which others share: a success
        // must not wipe their failures).
        if let knownKey { try await storage.clearLoginAttempts(key: knownKey) }
        for key in keys where key != knownKey { try await storage.forgiveLoginAttempt(key: key) }
        try await storage.purgeExpiredTokens(now: now)
        let token = Self.newToken()
        let expiresAt = Timestamp(millisecondsSinceEpoch: now.millisecondsSinceEpoch + policy.tokenLifetime.milliseconds)
        try await storage.storeToken(hash: Self.tokenHash(token), accountName: account.name, expiresAt: expiresAt)

        // Known from now on: this device token (the one sent, when it was valid; else a new one)
        // and this address.
        var device = Self.newToken()
        if let deviceToken, knownKey == Self.deviceKey(deviceToken) { device = deviceToken }
        let knownUntil = Timestamp(millisecondsSinceEpoch: now.millisecondsSinceEpoch + policy.knownClientLifetime.milliseconds)
        var known = [Self.deviceKey(device)]
        if let addressKey { known.append("known:" + AccountRules.canonicalName(account.name) + " " + addressKey) }
        for key in known {
            try await storage.rememberClient(
                key: key, accountName: account.name, expiresAt: knownUntil, now: now, keepPerAccount: policy.knownClientsPerAccount)
        }
        return .success(token: token, accountName: account.name, deviceToken: device)
    }

    /// The seconds to wait when one of `attempts` is past the limit (`atLimit`: at it already,
    /// so one more would pass it), nil when none is.
    private func retryAfter(_ attempts: [LoginAttempts?], now: Timestamp, atLimit: Bool) -> Int? {
        let blockedUntil = attempts.compactMap { $0 }.filter {
            atLimit ? $0.count >= policy.maximumFailures : $0.count > policy.maximumFailures
        }
        .map(\.windowEnd).max()
        guard let blockedUntil else { return nil }
        let remaining = blockedUntil.millisecondsSinceEpoch - now.millisecondsSinceEpoch
        return Int(max(1, (remaining + 999) / 1000))
    }

    /// The key strangers' failed logins as `name` are counted on: one of `counters`, by a hash of
    /// the name as accounts compare it, whether it is an account or not.
    static func nameKey(_ name: String, counters: Int = Policy().nameCounters) -> String {
        let digest = SHA256.hash(data: Array(AccountRules.canonicalName(name).utf8))
        let number = digest.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        return "name:" + String(Int(number) % max(1, counters))
    }

    private func nameKey(_ name: String) -> String { Self.nameKey(name, counters: policy.nameCounters) }

    /// What the keys of client addresses' failed logins start with.
    static let addressKeyPrefix = "address:"

    /// The key a device token is remembered by: its hash, as for session tokens.
    static func deviceKey(_ deviceToken: String) -> String { "device:" + tokenHash(deviceToken) }

    /// The part of an address that names one client: an IPv4 address, or an IPv6 /64 (a host
    /// usually has a whole /64 to pick addresses from, so each one alone would count nothing).
    static func throttlingAddress(_ address: String) -> String {
        guard address.contains(":"), let parsed = try? SocketAddress(ipAddress: address, port: 0),
            case .v6(let v6) = parsed
        else { return address }
        var bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
        if bytes.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] { return address }  // IPv4-mapped
        for index in 8..<16 { bytes[index] = 0 }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }

    /// The account a presented token belongs to, or nil when it is unknown, revoked or expired.
    public func accountName(forToken token: String) async throws -> String? {
        guard !token.isEmpty, token.utf8.count <= 512 else { return nil }
        return try await storage.accountName(forTokenHash: Self.tokenHash(token), now: clock())
    }

    /// Who a presented token speaks for (`Caller`), or nil when it is unknown, revoked or expired.
    public func caller(forToken token: String) async throws -> Caller? {
        guard !token.isEmpty, token.utf8.count <= 512 else { return nil }
        return try await storage.caller(forTokenHash: Self.tokenHash(token), now: clock())
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
        if let hash = decoyHash.hash.withLock({ $0 }) { return hash }
        let hash = try await hasher.hash(Self.newToken())
        decoyHash.hash.withLock { $0 = hash }
        return hash
    }
}
