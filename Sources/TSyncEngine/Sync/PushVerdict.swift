import TSyncModel

/// What one server answer means for the operation that was pushed.
///
/// Push sends each operation at least once: a response lost to a dropped connection or a killed
/// process means the operation is sent again, and the server may already have applied it. The
/// SDKs then failed forever (docs/DESIGN.md §2.4). These rules recognise an answer that only says "already
/// done" and count it as success:
///
/// - insert answered 409 whose server item has the same user fields as the item sent: the earlier
///   insert arrived;
/// - update answered 412 (or 409, for a version in the body) whose server item, not deleted, has
///   the same user fields as the item sent: the earlier update arrived and bumped the version. The
///   end state is exactly what the client asked for, so there is nothing to settle — even if
///   another client happened to write the same values;
/// - delete answered 404 or 410, or 412 with a server item marked deleted: the item is gone, which
///   is what the delete asked for.
///
/// Everything else that is not 2xx is a failure of that one operation, recorded in the error table.
package enum PushVerdict: Sendable, Equatable {
    /// The server holds what the operation asked for; `serverRecord` is its copy when it sent one.
    case succeeded(serverRecord: Record?, alreadyApplied: Bool)
    /// The operation failed on its own; the push goes on.
    case failed(status: Int, message: String, serverRecord: Record?)

    package static func classify(kind: OperationKind, sent: [String: JSONValue]?, answer: RemoteAnswer) -> PushVerdict {
        switch answer {
        case .accepted(_, let record):
            return .succeeded(serverRecord: record, alreadyApplied: false)
        case .rejected(let status, let message, let serverRecord):
            if isAlreadyApplied(kind: kind, status: status, sent: sent, serverRecord: serverRecord) {
                return .succeeded(serverRecord: serverRecord, alreadyApplied: true)
            }
            return .failed(
                status: status, message: describe(status, message, kind: kind, sent: sent, server: serverRecord), serverRecord: serverRecord
            )
        }
    }

    /// A conflict in words, where the server sent only its copy (tsync serve's 409 and 412 carry
    /// the item, not a message): what happened and which fields differ from what was sent.
    static func describe(_ status: Int, _ message: String, kind: OperationKind, sent: [String: JSONValue]?, server: Record?)
        -> String
    {
        guard message == "HTTP \(status)", let server, status == 409 || status == 412 else { return message }
        let what =
            kind == .insert && status == 409
            ? "an item with this id already exists on the server" : "the server has a newer version (\(server.system.version ?? "?"))"
        if server.system.deleted { return what + ", deleted there" }
        guard let sent else { return what }
        var ours = sent
        ours.removeValue(forKey: "id")
        let names = Set(ours.keys).union(server.fields.keys).filter { ours[$0] != server.fields[$0] }.sorted()
        guard !names.isEmpty else { return what }
        return what + "; it differs from yours in " + names.joined(separator: ", ")
    }

    static func isAlreadyApplied(kind: OperationKind, status: Int, sent: [String: JSONValue]?, serverRecord: Record?) -> Bool {
        switch (kind, status) {
        case (.insert, 409), (.update, 409), (.update, 412):
            guard let server = serverRecord, !server.system.deleted, let sent else { return false }
            return ThreeWayMerge.sameFields(sent, server.fields)
        case (.delete, 404), (.delete, 410):
            return true
        case (.delete, 412):
            return serverRecord?.system.deleted == true
        default:
            return false
        }
    }
}

/// How `conflicts` names a failed operation, from its kind and status.
public enum FailureClass: String, Sendable, Equatable, CaseIterable {
    /// 412 (or 409 on update/delete): the server changed the item since our base.
    case versionConflict = "version-conflict"
    /// 409 on insert: the id exists on the server.
    case alreadyExists = "already-exists"
    /// 404/410: the server has no such item.
    case missing
    /// 400/422 and other 4xx: the server refused the item itself.
    case rejected
    /// 403: the server's table rules (or the token's scope) do not let this account make the
    /// change. Pushing it again changes nothing until the rules or the account do.
    case forbidden
    /// 400 for a record that does not match its table's schema (docs/DESIGN.md §16): the message
    /// names every failing field's path.
    case schema
    /// 5xx: the server failed; retrying later (`--cancel`, then push) may work.
    case serverError = "server-error"

    /// The class of a failure of a `kind` operation answered `status` with `message`.
    public init(kind: OperationKind, status: Int, message: String = "") {
        switch (kind, status) {
        case (_, 400) where message.contains(RecordSchema.refusalWords): self = .schema
        case (.insert, 409): self = .alreadyExists
        case (_, 409), (_, 412): self = .versionConflict
        case (_, 404), (_, 410): self = .missing
        case (_, 403): self = .forbidden
        case (_, 500...): self = .serverError
        default: self = .rejected
        }
    }

    /// Whether two writers disagree about the item: about its version (412, 409) or its existence
    /// (404: changed here, deleted there). These are what `resolve` and a conflict policy settle
    /// by choosing a side; a rejected item or a server error is not a disagreement.
    public var isConflict: Bool { self == .versionConflict || self == .alreadyExists || self == .missing }
}
