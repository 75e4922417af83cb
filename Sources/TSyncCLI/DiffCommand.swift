import ArgumentParser
import TSyncEngine
import TSyncModel

struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Show what each pending change does, field by field, against its base.",
        discussion: """
            The base is the last server copy of the item (none for a record the server has not \
            seen). One entry per item with pending operations, in queue order: "-" lines are base \
            values, "+" lines local ones. System properties are not compared.

            --json prints [{"table", "id", "kind" (insert|update|delete), "seq", "base": object or \
            null, "ours": object or null, "changes": [{"field", "change" (added|removed|modified), \
            "before", "after"}]}]; "before" is absent for an added field, "after" for a removed one. \
            --ndjson prints the same objects one per line.

            On a terminal, a diff longer than the screen goes through a pager: $TSYNC_PAGER, else \
            the store's core.pager, else $PAGER, else `less` with LESS=FRX (an empty setting or \
            `cat` turns it off, and so does --no-pager). Never when stdout is piped.

            EXAMPLES
              tsync diff
              tsync diff todo milk
              tsync diff --ndjson | jq -c 'select(.kind == "update") | .changes'
            """)

    @OptionGroup var storeOptions: StoreOptions
    @OptionGroup var output: JSONLinesOptions
    @OptionGroup var pager: PagerOption

    @Argument(help: "Only this table.", completion: StoreCompletion.tables)
    var table: String?

    @Argument(help: "Only this record (needs TABLE).")
    var id: String?

    func run() throws {
        let store = try storeOptions.open()
        if output.json || output.ndjson {
            // Each entry is written as it is read.
            var out = StreamedOutput()
            if output.json { out.append(byte: UInt8(ascii: "[")) }
            var first = true
            try store.diff(table: table, id: id) { (entry) throws(TSyncError) -> Bool in
                if output.json, !first { out.append(byte: UInt8(ascii: ",")) }
                out.append(json: JSONReports.diff(entry))
                if output.ndjson { out.append(byte: UInt8(ascii: "\n")) }
                first = false
                return out.flushed()
            }
            if output.json { out.append("]\n") }
            out.flush()
            return
        }
        let style = Style(enabled: Console.colorOnStdout)
        var text = ""
        for entry in try store.diff(table: table, id: id) {
            text += style.bold("\(entry.kind.rawValue) \(entry.table)/\(entry.id)") + "\n"
            text += FieldChangeText.lines(entry.changes, style: style)
        }
        pager.write(text, store: store)
    }
}
