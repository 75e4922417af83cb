// The ceiling of scripts/bench-push-ceiling.sh, kept out of the product: the rate at which the
// server's own storage code (`ServerStorage.write`, what every write route ends in) stores COUNT
// records handed to it in one call, one transaction, with no HTTP, no JSON and no client: first
// COUNT inserts into a new table, then COUNT updates of them (each with `If-Match` its version),
// the same records `tsync push` sends in the benchmark. History is kept, as `tsync serve` keeps it
// by default.
//
// Usage: tsync-write-ceiling DB COUNT   (DB as `tsync serve --db` takes it; the table `items` must
// not exist yet)
// Prints {"count": N, "insertSeconds": S, "updateSeconds": S} and exits 0; on failure prints the
// error and exits 1.
import Foundation
import TSyncModel
import TSyncServer

@main
struct WriteCeiling {
    static func main() async {
        let arguments = CommandLine.arguments
        guard arguments.count == 3, let count = Int(arguments[2]), count > 0 else {
            FileHandle.standardError.write(Data("usage: tsync-write-ceiling DB COUNT\n".utf8))
            exit(64)
        }
        do {
            let location = try DatabaseLocation(parsing: arguments[1], environment: ProcessInfo.processInfo.environment)
            let (inserts, updates) = try await location.withStorage { storage in try await measure(storage, count: count) }
            print(#"{"count": \#(count), "insertSeconds": \#(inserts), "updateSeconds": \#(updates)}"#)
        } catch {
            FileHandle.standardError.write(Data("tsync-write-ceiling: \(error)\n".utf8))
            exit(1)
        }
    }

    /// The fields of record `index` as the benchmark's NDJSON has them: `changed` for the update.
    static func fields(_ index: Int, changed: Bool) -> [String: JSONValue] {
        [
            "text": .string(changed ? "changed record \(index)" : "record number \(index)"),
            "complete": .bool(index % 2 == 1), "priority": .int(Int64(index % 5)),
        ]
    }

    static func id(_ index: Int) -> String {
        let digits = String(index)
        return "item-" + String(repeating: "0", count: max(0, 7 - digits.count)) + digits
    }

    static func measure(_ storage: any ServerStorage, count: Int) async throws -> (Double, Double) {
        let inserts = (0..<count).map { index in
            RecordWrite(table: "items", action: .insert(Record(id: id(index), fields: fields(index, changed: false))), scope: .shared)
        }
        let clock = ContinuousClock()
        var outcomes: [WriteOutcome] = []
        let insertTime = try await clock.measure { outcomes = try await storage.write(inserts, atomic: false) }
        var versions: [String] = []
        for outcome in outcomes {
            guard case .inserted(let record) = outcome, let version = record.system.version else {
                throw TSyncError.failure("an insert was not done: \(outcome) (does the table items exist already?)")
            }
            versions.append(version)
        }
        let updates = versions.enumerated().map { index, version in
            RecordWrite(
                table: "items", action: .modify(id: id(index), change: .update(fields(index, changed: true)), expected: .oneOf([version])),
                scope: .shared)
        }
        let updateTime = try await clock.measure { outcomes = try await storage.write(updates, atomic: false) }
        guard outcomes.allSatisfy(\.succeeded) else { throw TSyncError.failure("an update was not done") }
        return (insertTime.fractionalSeconds, updateTime.fractionalSeconds)
    }
}
