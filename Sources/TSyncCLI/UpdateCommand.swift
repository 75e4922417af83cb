import ArgumentParser
import TSyncEngine
import TSyncModel

struct UpdateCommand: ParsableCommand, JournaledCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Change fields of a local record and queue an update.",
        discussion: """
            The JSON object (an argument, or stdin when piped and no --set is given) is merged into \
            the record: each field replaces the field of that name, null sets a field to null, and \
            nested objects are replaced whole. --set FIELD=VALUE is applied after it; VALUE is JSON \
            when it parses as JSON (5, true, null, "5", [1,2]), otherwise a string.

            System properties in the JSON are ignored (so `tsync get` output can be edited and fed \
            back), except that an "id" must be the record's own; --set refuses them.

            With --filter ODATA instead of an ID, the --set fields are merged into every local \
            record the filter matches (the filter `tsync query` takes), in one transaction; a \
            record they would not change queues nothing. It says on stderr how many records it \
            updated (-q: nothing but errors), and warns of a filter field no record has, as \
            `tsync query` does; -v prints each as TABLE/ID on stdout, and so does --dry-run, which changes \
            nothing. --json prints {"table", "dryRun", "ids": [ids]}.

            EXAMPLES
              tsync update todo 42 --set done=true
              tsync update todo --filter "done eq false and due lt '2026-01-01'" --set done=true -v
              tsync get todo 42 --json | jq '.text = "oat milk"' | tsync update todo 42
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Argument(help: "The table.", completion: StoreCompletion.tables)
    var table: String

    @Argument(help: "The record id (not with --filter).")
    var id: String?

    @Argument(help: "Fields to merge, as a JSON object.")
    var json: String?

    @Option(name: .customLong("set"), help: ArgumentHelp("Set one field (repeatable).", valueName: "FIELD=VALUE"))
    var assignments: [String] = []

    @Option(help: ArgumentHelp("Update every record this OData expression is true for (instead of an ID).", valueName: "ODATA"))
    var filter: String?

    @Flag(help: "With --filter: print what would be updated; change nothing.")
    var dryRun = false

    @Flag(name: .shortAndLong, help: "With --filter: print each updated record as TABLE/ID.")
    var verbose = false

    @OptionGroup var output: JSONOption
    @OptionGroup var quiet: QuietOption

    var isJournaled: Bool { !dryRun }

    func validate() throws {
        if filter != nil {
            if id != nil { throw ValidationError("give an ID or --filter, not both (the filter names the records)") }
            if assignments.isEmpty { throw ValidationError("--filter needs the fields to set: --set FIELD=VALUE") }
        } else {
            if id == nil { throw ValidationError("give the record's ID, or --filter ODATA to update many") }
            for (flag, given) in [("--dry-run", dryRun), ("--verbose", verbose), ("--json", output.json)] where given {
                throw ValidationError("\(flag) applies to --filter")
            }
        }
    }

    func run() throws {
        guard let id else { return try updateMatching(filter ?? "") }
        var fields: [String: JSONValue] = [:]
        if let json {
            do {
                fields = try RecordInput.object(from: json)
            } catch {
                // `--set a=1 b=2` makes `b=2` the JSON argument: say what was meant.
                guard Self.looksLikeAssignment(json) else { throw error }
                let remedy = assignments.isEmpty ? "to set a field, use --set" : "to set another field, repeat --set"
                throw TSyncError.usage("\(Identifiers.quoted(json)) is not JSON; \(remedy): --set \(json)")
            }
        } else if assignments.isEmpty {
            guard !Console.stdinIsTerminal else {
                throw TSyncError.usage("nothing to update: give a JSON object, pipe one to stdin, or use --set FIELD=VALUE")
            }
            let records = try RecordInput.objects(from: Console.readStandardInput())
            guard records.count == 1, let object = records.first else {
                throw TSyncError.invalidInput("expected one JSON object on stdin, got \(records.count)")
            }
            fields = object
        }
        for assignment in assignments {
            let (field, value) = try Self.assignment(assignment)
            fields[field] = value
        }
        let session = try storeOptions.session()
        let store = session.store
        try store.update(table: table, id: id, fields: fields)
        session.record(changed: table, ids: [id])
    }

    /// `--filter`: every matching record, one transaction.
    private func updateMatching(_ filter: String) throws {
        var fields: [String: JSONValue] = [:]
        for assignment in assignments {
            let (field, value) = try Self.assignment(assignment)
            fields[field] = value
        }
        let session = try storeOptions.session()
        let store = session.store
        if !quiet.quiet { try MatchedRecords.warnOfAbsentFields(filter: filter, table: table, store: store) }
        let ids = try store.update(table: table, filter: filter, fields: fields, dryRun: dryRun)
        if !dryRun { session.record(changed: table, ids: ids) }
        MatchedRecords.report(
            ids, table: table, verb: ("update", "updated"), dryRun: dryRun, verbose: verbose, json: output.json, quiet: quiet.quiet)
    }

    /// Whether a word is `FIELD=VALUE` rather than JSON: a name without spaces or JSON
    /// punctuation before the first `=`.
    static func looksLikeAssignment(_ text: String) -> Bool {
        guard let equals = text.firstIndex(of: "="), equals > text.startIndex else { return false }
        return !text[..<equals].contains { $0.isWhitespace || "{}[]\"':,".contains($0) }
    }

    /// `FIELD=VALUE` of `--set`: VALUE is taken as JSON when it parses as JSON, else as a string
    /// (so `n=5` is a number, `done=true` a boolean, `name=Bob` and `name='"5"'` strings). Naming a
    /// system property is refused: there it can only be a mistake.
    static func assignment(_ text: String) throws(TSyncError) -> (field: String, value: JSONValue) {
        guard let equals = text.firstIndex(of: "=") else {
            throw .usage("invalid --set \(Identifiers.quoted(text)): expected FIELD=VALUE")
        }
        let field = String(text[..<equals])
        let rawValue = String(text[text.index(after: equals)...])
        guard !field.isEmpty else { throw .usage("invalid --set \(Identifiers.quoted(text)): the field name is empty") }
        if SystemProperties.names.contains(field) {
            throw .invalidInput("--set \(field)=…: \"\(field)\" is a system property, set by the server, not a field you can set")
        }
        return (field, (try? JSONParser.parse(rawValue)) ?? .string(rawValue))
    }
}
