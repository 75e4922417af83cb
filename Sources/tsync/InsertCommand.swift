import ArgumentParser
import TSyncEngine
import TSyncModel

struct InsertCommand: ParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "insert",
        abstract: "Insert records into a local table and queue them for push.",
        discussion: """
            Give one JSON object as an argument, or pipe many to stdin as a JSON array or as NDJSON \
            (objects one after the other; `-` names stdin too). An object without "id" gets a \
            generated one (a UUID). The ids are printed one per line, in input order, unless -q.

            System properties other than "id" (createdAt, updatedAt, version, deleted) are set by \
            the server and are ignored. The insert is all or nothing: if any record is invalid or \
            its id exists, nothing is inserted.

            Examples:
              tsync insert todo '{"text": "buy milk", "done": false}'
              jq -c '.[]' todos.json | tsync insert todo
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: "The table (letters, digits and '_'); created by its first insert.")
    var table: String

    @Argument(help: "One record as a JSON object. Without it, or with -, records are read from stdin.")
    var json: String?

    @Flag(name: .shortAndLong, help: "Do not print the ids.")
    var quiet = false

    func run() throws {
        let objects: [[String: JSONValue]]
        if let json, json != "-" {
            objects = [try RecordInput.object(from: json)]
        } else {
            guard !Console.stdinIsTerminal else {
                throw TSyncError.usage("give a record as a JSON argument, or pipe records (a JSON array or NDJSON) to stdin")
            }
            objects = try RecordInput.objects(from: Console.readStandardInput())
        }
        let store = try storeOptions.open()
        guard !objects.isEmpty else {
            Console.note("no records on stdin; nothing inserted")
            return
        }
        let ids = try store.insert(table: table, objects: objects)
        CommandJournal.shared.record(changed: table, ids: ids)
        guard !quiet else { return }
        var output = ""
        output.reserveCapacity(ids.count * 37)
        for id in ids {
            output += id
            output += "\n"
        }
        Console.write(output)
    }
}
