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

    /// `#N` is what `conflicts` shows, but `#` starts a comment in a shell: the plain ids and the
    /// items (`TABLE/ID`) are offered.
    static let errors = CompletionKind.custom { words, _, _ in
        let details = (try? store(words)?.conflictDetails()) ?? []
        return details.map { String($0.error.id) } + details.map { "\($0.error.table)/\($0.error.itemID)" }
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
