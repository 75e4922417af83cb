import ArgumentParser
import Foundation
import TSyncEngine
import TSyncModel

/// Shell completions that know the store: table names, error references and query ids, read from
/// the store the command line names (`-C DIR` / `--store DIR` among the words typed so far), else
/// the one `tsync` would find from here. Completion never fails loudly: no store, no candidates.
enum StoreCompletion {
    static let tables = CompletionKind.custom { words, _, _ in
        (try? store(words)?.tables().map(\.table)) ?? []
    }

    /// The items of the store's errors, `TABLE/ID`: what a person recognises (a bare error id
    /// says nothing in a list of candidates, and `#N` starts a comment in a shell).
    static let errors = CompletionKind.custom { words, _, _ in
        let details = (try? store(words)?.conflictDetails()) ?? []
        return Array(Set(details.map { "\($0.error.table)/\($0.error.itemID)" })).sorted()
    }

    /// `tsync config KEY`: every key, with `table.NAME.…` for each table of the store.
    static let configKeys = CompletionKind.custom { words, _, _ in
        let tables = (try? store(words)?.tables().map(\.table)) ?? []
        let fixed = ConfigKey.names.filter { !$0.hasPrefix("table.NAME.") }
        return fixed + tables.flatMap { ["table.\($0).onConflict", "table.\($0).prefer"] }
    }

    static let queryIDs = CompletionKind.custom { words, _, _ in
        (try? store(words)?.savedQueries().map(\.queryID)).map { Array(Set($0)).sorted() } ?? []
    }

    private static func store(_ words: [String]) throws(TSyncError) -> LocalStore? {
        var explicit: String?
        for (index, word) in words.enumerated() {
            if word == "-C" || word == "--store", index + 1 < words.count {
                explicit = words[index + 1]
            } else if word.hasPrefix("--store=") {
                explicit = String(word.dropFirst("--store=".count))
            }
        }
        let location = try StoreLocation.find(
            explicit: explicit, environment: ProcessInfo.processInfo.environment,
            workingDirectory: FileManager.default.currentDirectoryPath)
        return try LocalStore.open(location)
    }
}
