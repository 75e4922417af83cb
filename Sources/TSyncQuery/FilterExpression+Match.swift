import TSyncModel

extension FilterExpression {
    /// False only when the filter, rendered by `SQLRenderer` and run on either backend, is
    /// certainly not true for `record`; true when it is, or may be. The server's live route asks
    /// it of each committed record instead of running every held read's query again
    /// (docs/DESIGN.md §8.1): a wrong false would keep a watcher from a change, a wrong true
    /// costs one query, so whatever is not read here exactly as the SQL reads it is "may be".
    ///
    /// Read exactly: `and`, `or`, `not`, a field standing alone, and a comparison of a field
    /// with a literal (either way round), under the renderer's rules: the field is read as the
    /// literal's kind and counts as NULL when its JSON value is of another kind; text compares
    /// by bytes (SQLite's BINARY, PostgreSQL's "C"); numbers as doubles, and two that are equal
    /// as doubles are "may be" (the databases compare them exactly); `eq`/`ne` are null-safe.
    /// Functions, arithmetic, two fields compared, and `createdAt` are "may be".
    public func mayHold(for record: Record) -> Bool {
        switch truth(record) {
        case .yes, .unknown: true
        case .no, .null: false
        }
    }

    /// What a condition is in SQL's three-valued logic, or unknown here.
    private enum Truth {
        case yes, no, null, unknown

        init(_ flag: Bool) { self = flag ? .yes : .no }

        var negated: Truth {
            switch self {
            case .yes: .no
            case .no: .yes
            case .null, .unknown: self
            }
        }

        func and(_ other: Truth) -> Truth {
            if self == .no || other == .no { return .no }
            if self == .unknown || other == .unknown { return .unknown }
            if self == .null || other == .null { return .null }
            return .yes
        }

        func or(_ other: Truth) -> Truth {
            if self == .yes || other == .yes { return .yes }
            if self == .unknown || other == .unknown { return .unknown }
            if self == .null || other == .null { return .null }
            return .no
        }
    }

    /// A value read as one kind: nil stands for SQL NULL.
    private enum Scalar {
        case text(String?)
        case number(Double?)
        case boolean(Bool?)
    }

    private func truth(_ record: Record) -> Truth {
        switch self {
        case .literal(.bool(let flag)): return Truth(flag)
        case .literal(.null): return .null
        case .field(let name):
            guard case .boolean(let flag)? = Self.read(name, of: record, as: .boolean(nil)) else { return .unknown }
            return flag.map(Truth.init) ?? .null
        case .not(let operand): return operand.truth(record).negated
        case .binary(.and, let left, let right): return left.truth(record).and(right.truth(record))
        case .binary(.or, let left, let right): return left.truth(record).or(right.truth(record))
        case .binary(let op, .field(let name), .literal(let literal)) where op.isComparison:
            return Self.compare(op, name, literal, record)
        case .binary(let op, .literal(let literal), .field(let name)) where op.isComparison:
            let mirrored: [BinaryOperator: BinaryOperator] = [.eq: .eq, .ne: .ne, .gt: .lt, .ge: .le, .lt: .gt, .le: .ge]
            return mirrored[op].map { Self.compare($0, name, literal, record) } ?? .unknown
        default: return .unknown
        }
    }

    /// `field op literal`.
    private static func compare(_ op: BinaryOperator, _ name: String, _ literal: FilterLiteral, _ record: Record) -> Truth {
        if literal == .null {
            // `x eq null` is `x IS NULL`, read as the field's own kind: a user field is NULL when
            // missing or JSON null; a system property is a column, not read here.
            guard op == .eq || op == .ne, !SystemProperties.names.contains(name) else { return .unknown }
            let missing = record.fields[name] == nil || record.fields[name] == .null
            return Truth(op == .eq ? missing : !missing)
        }
        let right: Scalar
        switch literal {
        case .string(let text): right = .text(text)
        case .dateTime(let timestamp): right = .text(timestamp.iso8601)
        case .int(let number): right = .number(Double(number))
        case .double(let number): right = .number(number)
        case .bool(let flag): right = .boolean(flag)
        case .null: return .unknown
        }
        guard let left = read(name, of: record, as: right) else { return .unknown }
        switch (left, right) {
        case (.text(let a), .text(let b?)):
            guard let a else { return op == .ne ? .yes : op == .eq ? .no : .null }
            let order: Int = a.utf8.elementsEqual(b.utf8) ? 0 : (a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : 1)
            return ordered(op, order)
        case (.number(let a), .number(let b?)):
            guard let a else { return op == .ne ? .yes : op == .eq ? .no : .null }
            // Equal as doubles may still differ as the database's exact numbers.
            guard a != b, a.isFinite, b.isFinite else { return .unknown }
            return ordered(op, a < b ? -1 : 1)
        case (.boolean(let a), .boolean(let b?)):
            guard op == .eq || op == .ne else { return .unknown }
            guard let a else { return op == .ne ? .yes : .no }
            return Truth(op == .eq ? a == b : a != b)
        default: return .unknown
        }
    }

    private static func ordered(_ op: BinaryOperator, _ order: Int) -> Truth {
        switch op {
        case .eq: Truth(order == 0)
        case .ne: Truth(order != 0)
        case .gt: Truth(order > 0)
        case .ge: Truth(order >= 0)
        case .lt: Truth(order < 0)
        case .le: Truth(order <= 0)
        default: .unknown
        }
    }

    /// The member `name` of `record` read as the kind of `like`; nil when not read here.
    private static func read(_ name: String, of record: Record, as like: Scalar) -> Scalar? {
        switch name {
        case "id": if case .text = like { return .text(record.id) } else { return nil }
        case "version": if case .text = like, let version = record.system.version { return .text(version) } else { return nil }
        case "updatedAt":
            if case .text = like, let updatedAt = record.system.updatedAt { return .text(updatedAt.iso8601) } else { return nil }
        case "deleted": if case .boolean = like { return .boolean(record.system.deleted) } else { return nil }
        case "createdAt": return nil
        default: break
        }
        let value = record.fields[name]
        switch like {
        case .text:
            if case .string(let text)? = value { return .text(text) }
            return .text(nil)
        case .number:
            switch value {
            case .int(let number)?: return .number(Double(number))
            case .double(let number)?: return .number(number)
            default: return .number(nil)
            }
        case .boolean:
            if case .bool(let flag)? = value { return .boolean(flag) }
            return .boolean(nil)
        }
    }
}
