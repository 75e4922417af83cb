import TSyncModel

/// Whom a token reaches, as `GET /.auth/me` says: the account, and from a server with table
/// rules its roles, groups and the token's scope. What the server does not say is nil, never
/// guessed: an older server's answer holds only the account.
public struct RemoteIdentity: Sendable, Equatable {
    /// Nil on a server without accounts.
    public var user: String?
    public var roles: [String]?
    public var groups: [String]?
    /// Whether the token may only read.
    public var readOnly: Bool?
    /// The only tables the token may reach; nil for all (or when the server does not say).
    public var tables: [String]?
    /// Whether the server described the token's scope at all.
    public var describesToken = false

    init(_ user: [String: JSONValue]?) {
        self.user = user?["userId"]?.stringValue
        roles = Self.strings(user?["roles"])
        groups = Self.strings(user?["groups"])
        if let token = user?["token"]?.objectValue {
            describesToken = true
            if case .bool(let value)? = token["readOnly"] { readOnly = value }
            tables = Self.strings(token["tables"])
        }
    }

    private static func strings(_ value: JSONValue?) -> [String]? {
        guard case .array(let items)? = value else { return nil }
        return items.compactMap(\.stringValue)
    }
}
