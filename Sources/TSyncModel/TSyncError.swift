/// The one error type that crosses layer boundaries.
///
/// Libraries throw it with a message a user can act on; only the command line turns a `Kind` into an
/// exit code (`ExitStatus` in the `tsync` target), so the table in docs/DESIGN.md §3 lives in one place.
public struct TSyncError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The command line was used wrongly (exit 64).
        case usage
        /// Input data is bad: invalid JSON, invalid filter, unknown table or id (exit 65).
        case invalidInput
        /// Push or pull finished, but operations failed and sit in the error table (exit 2).
        case operationsFailed
        /// The server could not be reached, or gave no answer a sync server gives (exit 3): what was
        /// sent is kept, to be sent again.
        case unreachable
        /// Authentication is missing or was rejected (exit 4).
        case unauthorized
        /// No tsync store where the command needs one (exit 66): not inside one, or its database
        /// is missing. Told apart from failures so that scripts can, e.g. `status --exit-code`.
        case noStore
        /// A file the command was told to read is missing or unreadable (exit 66, EX_NOINPUT):
        /// `serve --tls-cert`/`--tls-key`.
        case fileMissing
        /// A file the command was told to read is not what it should be (exit 78, EX_CONFIG):
        /// a TLS certificate or key that does not parse or does not match.
        case invalidConfiguration
        /// Anything else (exit 1): a busy or damaged store, an unexpected server answer.
        case failure
    }

    /// What the user can do about an error whose remedy is a setting of theirs. The message
    /// words it neutrally (a library's user reads it so); the command line words it in terms of
    /// its flags instead.
    public enum Remedy: Sendable, Equatable {
        /// Push first, or purge with force (dropping the pending operations).
        case pushOrForcePurge
        /// Ask for smaller pages.
        case smallerPages
        /// A saved query was pulled with another filter: keep its filter, reset it, or use another id.
        case keepOrResetSavedFilter
        /// Pull without a query id (a full pull by pages).
        case pullWithoutQueryID
        /// The server database location is wrong, or the database was never created.
        case checkDatabaseLocation
        /// The server's port is taken: listen on another one.
        case anotherPort
        /// The server wants a (valid) token: log in.
        case logIn
        /// The server's certificate is not signed by a CA this machine trusts: trust that CA.
        case trustCertificateAuthority
        /// The item exists already: update it rather than insert it.
        case updateInstead
        /// Push the queue (the item's pending delete) first.
        case pushFirst
        /// The store has no remote: set one.
        case setRemote
        /// See the error table: which errors there are.
        case listErrors
        /// Operations wait behind errors: resolve those first.
        case resolveErrorsFirst
        /// The saved credentials are unusable: log out, then log in again.
        case logInAgain
        /// A setting of the store (by its `tsync config` name) has a bad value: fix it or remove it.
        case fixSetting(String)
        /// An account of that name exists: choose another name, or change that account's password.
        case changePassword(account: String)
        /// No such account: list the accounts.
        case listAccounts
        /// No store here: create one.
        case createStore
        /// The store lost its database file: initialize it again at `root`.
        case repairStore(root: String)
        /// The store's database is damaged: restore it, or start a new store (losing the queue).
        case restoreStore
        /// No such table: list the tables.
        case listTables
        /// Records have pending changes: push them first, or force (dropping them) to go on.
        case pushOrForce
    }

    public var kind: Kind
    /// What went wrong, with the remedy in neutral words when there is one.
    public var message: String
    public var remedy: Remedy?
    /// For `.unreachable`: the request certainly never left this machine (the connection was
    /// refused or never established), so the server cannot have applied it. When false, a write
    /// may have arrived and only its answer was lost.
    public var requestNeverSent: Bool
    /// For `.unreachable`: nothing answered at all (the connection failed or the exchange ran out
    /// of time), as opposed to an answer that could not be taken (a 5xx, a page cut on the way).
    /// A command with more to do (the pull after a push, the next table of a sync) goes on after
    /// an answer it could not take, and stops after no answer: the server cannot be used now.
    public var noAnswer = false
    /// For a read the server refused (a 4xx): its status. Settling tells a table the account may
    /// no longer read (403, 404) from other failures by it.
    public var refusedStatus: Int?

    public init(_ kind: Kind, _ message: String, requestNeverSent: Bool = false) {
        self.kind = kind
        self.message = message
        self.requestNeverSent = requestNeverSent
    }

    /// An error whose `message` is `fact`, then `remedy` in neutral words after a semicolon.
    public init(_ kind: Kind, _ fact: String, remedy: Remedy) {
        self.init(kind, "\(fact); \(Self.neutralWords(remedy))")
        self.fact = fact
        self.remedy = remedy
    }

    /// The message without its remedy (the whole message when it has none).
    public var fact: String?

    private static func neutralWords(_ remedy: Remedy) -> String {
        switch remedy {
        case .pushOrForcePurge: "push them first, or purge with force to drop them"
        case .smallerPages: "ask for smaller pages"
        case .keepOrResetSavedFilter: "pull it without a filter, reset it to replace the filter, or use another query id"
        case .pullWithoutQueryID: "pull without a query id"
        case .checkDatabaseLocation: "check the database location (serving and adding a user create it)"
        case .anotherPort: "choose another port (0 picks a free one)"
        case .logIn: "log in"
        case .trustCertificateAuthority: "if the server is yours, trust the certificate authority that signed its certificate"
        case .updateInstead: "update it instead, or upsert it"
        case .pushFirst: "push it first"
        case .setRemote: "set one first"
        case .listErrors: "list the errors to see which there are"
        case .resolveErrorsFirst: "resolve them first"
        case .logInAgain: "log out, then log in again"
        case .fixSetting(let key): "fix the setting \(key) or remove it"
        case .changePassword: "choose another name, or change that account's password"
        case .listAccounts: "list the accounts to see which there are"
        case .createStore: "create one first"
        case .repairStore: "initialize it again to repair it"
        case .restoreStore: "restore it from a backup, or move .tsync away and create a new store (its queue is lost)"
        case .listTables: "list the tables to see which there are"
        case .pushOrForce: "push them first, or force to drop them"
        }
    }

    public var description: String { message }

    /// The same error with `context` before its message (and its fact), its remedy kept: "record
    /// 3: " before the error of one record of many.
    public func prefixed(_ context: String) -> TSyncError {
        var error = self
        error.message = context + message
        error.fact = fact.map { context + $0 }
        return error
    }

    public static func invalidInput(_ message: String) -> TSyncError { TSyncError(.invalidInput, message) }
    public static func failure(_ message: String) -> TSyncError { TSyncError(.failure, message) }
    public static func usage(_ message: String) -> TSyncError { TSyncError(.usage, message) }
}
