// The benchmark baseline of scripts/bench-sync.sh, kept out of the product: a pull done the way the
// original SDKs did it (docs/DESIGN.md §2.5) — pages of 50 read one after the other, and one SQLite
// transaction per record — through tsync's own public engine API, so the comparison measures only
// those two choices.
//
// Usage: tsync-pull-baseline STORE_DIR TABLE
// Prints {"received": N, "pages": P} and exits 0; on failure prints the error and exits 1.
import Foundation
import TSyncEngine
import TSyncModel

@main
struct PullBaseline {
    static func main() async {
        let arguments = CommandLine.arguments
        guard arguments.count == 3 else {
            FileHandle.standardError.write(Data("usage: tsync-pull-baseline STORE_DIR TABLE\n".utf8))
            exit(64)
        }
        do throws(TSyncError) {
            let (received, pages) = try await pull(storeDirectory: arguments[1], table: arguments[2])
            print(#"{"received": \#(received), "pages": \#(pages)}"#)
        } catch {
            FileHandle.standardError.write(Data("tsync-pull-baseline: \(error.message)\n".utf8))
            exit(1)
        }
    }

    static func pull(storeDirectory: String, table: String) async throws(TSyncError) -> (Int, Int) {
        let location = try StoreLocation.find(explicit: storeDirectory, environment: [:], workingDirectory: "/")
        let store = try LocalStore.open(location)
        let session = try SyncSession(store: store)
        return try await RemoteClient.withRemoteClient(endpoint: try session.endpoint(), token: nil) {
            remote throws(TSyncError) in
            var received = 0
            var pages = 0
            while true {
                let page = try await remote.readPage(PageRequest(table: table, orderBy: "id", top: 50, skip: received))
                pages += 1
                for record in page.records {
                    try store.applyServerPage(table: table, records: [record])
                }
                received += page.records.count
                if page.records.count < 50 { return (received, pages) }
            }
        }
    }
}
