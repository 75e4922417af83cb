import TSyncModel

/// How `push --on-conflict` settles a conflict inside the push (docs/DESIGN.md §9.1): the CI job's
/// `push; resolve --all --ours; push` loop as one command.
public enum ConflictPolicy: String, Sendable, CaseIterable {
    /// Leave every failure in the error table (exit 2): the behaviour of a plain push.
    case fail
    /// Client wins: `resolve --ours`, then push again.
    case ours
    /// Server wins: `resolve --theirs`.
    case theirs
    /// `resolve --merge`, then push again; a field both sides changed stays an error unless a
    /// `ThreeWayMerge.Side` names the side that wins it.
    case merge

    /// The resolution that settles a conflict under this policy; nil for `fail`.
    var resolution: Resolution? {
        switch self {
        case .fail: nil
        case .ours: .ours
        case .theirs: .theirs
        case .merge: .merge
        }
    }

    /// The failure classes a policy settles. A rejected operation (400) or a server error (5xx) is
    /// never settled by a policy: taking either side would hide a real fault.
    package static let settledClasses = Set(FailureClass.allCases.filter(\.isConflict))
}

/// The conflict policy of each table: the command line's flag, else the table's setting
/// (`table.NAME.onConflict`), else the store's (`push.onConflict`), else `fail`. `prefer` goes
/// the same way.
public struct ConflictPolicies: Sendable, Equatable {
    /// `--on-conflict`, overriding every setting.
    public var onConflict: ConflictPolicy?
    /// `--prefer`, overriding every setting.
    public var prefer: ThreeWayMerge.Side?
    /// `--retries`: how many more times operations that conflicted again after being settled are
    /// settled and pushed again.
    public var retries: Int
    /// The store's `push.*` and `table.NAME.*` settings.
    public var settings: PolicySettings

    /// How many times a push goes round again after settling conflicts when `--retries` is not given.
    public static let defaultRetries = 3

    /// The policies from the flags (which win) and the store's settings.
    public init(
        settings: PolicySettings = PolicySettings(), onConflict: ConflictPolicy? = nil, prefer: ThreeWayMerge.Side? = nil,
        retries: Int = defaultRetries
    ) {
        self.settings = settings
        self.onConflict = onConflict
        self.prefer = prefer
        self.retries = retries
    }

    /// The policy for `table`: the flag, else `table.NAME.onConflict`, else `push.onConflict`, else `fail`.
    package func policy(for table: String) -> ConflictPolicy {
        onConflict ?? settings.tables[table]?.onConflict ?? settings.onConflict ?? .fail
    }

    /// Whether every table's policy is `fail`: a push then needs no settling pass at all.
    var settlesNothing: Bool {
        if let onConflict { return onConflict == .fail }
        return (settings.onConflict ?? .fail) == .fail && settings.tables.values.allSatisfy { ($0.onConflict ?? .fail) == .fail }
    }

    /// The side a merge prefers for `table`, looked up as `policy(for:)` is.
    package func preference(for table: String) -> ThreeWayMerge.Side? {
        prefer ?? settings.tables[table]?.prefer ?? settings.prefer
    }
}

/// The policy settings of a store's configuration, checked (`StoreConfiguration.policySettings`).
public struct PolicySettings: Sendable, Equatable {
    /// The settings of one table (`table.NAME.onConflict`, `table.NAME.prefer`).
    public struct Table: Sendable, Equatable {
        /// The table's policy; nil: the store's.
        public var onConflict: ConflictPolicy?
        /// The table's merge preference; nil: the store's.
        public var prefer: ThreeWayMerge.Side?

        /// A table's settings.
        public init(onConflict: ConflictPolicy? = nil, prefer: ThreeWayMerge.Side? = nil) {
            self.onConflict = onConflict
            self.prefer = prefer
        }
    }

    /// `push.onConflict`; nil: `fail`.
    public var onConflict: ConflictPolicy?
    /// `push.prefer`; nil: none.
    public var prefer: ThreeWayMerge.Side?
    /// Per-table settings, by table name.
    public var tables: [String: Table] = [:]

    /// No settings.
    public init() {}
}
