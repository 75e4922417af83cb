import ArgumentParser
import TSyncEngine
import TSyncModel

/// How a command names an error of the error table: its id (`3`, as `tsync conflicts` lists it) or
/// the item it belongs to (`todo/milk`), which is what a user sees and remembers.
enum ErrorReference: ExpressibleByArgument, Sendable {
    case id(Int64)
    case item(table: String, id: String)

    init?(argument: String) {
        // `#3`, as `tsync conflicts` shows it, or `3`.
        if let id = Int64(argument.hasPrefix("#") ? String(argument.dropFirst()) : argument), id > 0 {
            self = .id(id)
        } else if let slash = argument.firstIndex(of: "/"), slash != argument.startIndex, slash != argument.index(before: argument.endIndex)
        {
            self = .item(table: String(argument[..<slash]), id: String(argument[argument.index(after: slash)...]))
        } else {
            return nil
        }
    }

    static var defaultCompletionKind: CompletionKind { .default }

    /// The error ids the references name, in order; one that names nothing is bad input (65).
    static func ids(_ references: [ErrorReference], in store: LocalStore) throws(TSyncError) -> [Int64] {
        var ids: [Int64] = []
        for reference in references {
            switch reference {
            case .id(let id):
                ids.append(id)
            case .item(let table, let itemID):
                let errors = try store.operationErrors(table: table).filter { $0.itemID.utf8.elementsEqual(itemID.utf8) }
                guard !errors.isEmpty else {
                    throw .invalidInput(
                        "no error for \(table)/\(Identifiers.quoted(itemID)) in the error table: run `tsync conflicts` to list them")
                }
                ids += errors.map(\.id)
            }
        }
        return ids
    }
}
