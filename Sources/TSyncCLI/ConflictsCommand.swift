import ArgumentParser
import Foundation
import TSyncEngine
import TSyncModel

struct ConflictsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "conflicts",
        abstract: "List failed operations (the error table) with base / ours / theirs.",
        discussion: """
            Every error belongs to one queued operation; it stays until `tsync resolve` settles it, \
            and holds back only that item's operations.

            --json prints [{"id", "seq", "table", "itemId", "kind", "status", "class", "message", \
            "createdAt", "base", "ours", "theirs", "sent", "changedByUs", "changedByThem", \
            "differing"}]: "class" is version-conflict (412, or 409 on update), already-exists (409 \
            on insert), missing (404), forbidden (403: the server's rules refuse this account the \
            change), rejected (other 4xx), schema (400: the record does not match \
            its table's schema) or server-error (5xx); "base" (the last \
            server copy seen), "ours" (the local record now), "theirs" (the server's copy) and \
            "sent" are wire objects or null; the last three are lists of user field names. \
            --ndjson prints the same objects, one per line. On a terminal, a long list goes \
            through the pager, as `tsync diff --help` says (--no-pager: never).

            EXAMPLES
              tsync conflicts
              tsync conflicts show '#3'
              tsync conflicts show todo/milk --json | jq .theirs
              tsync conflicts --ndjson | jq -r 'select(.class == "missing") | .itemId'
            """,
        subcommands: [List.self, Show.self],
        defaultSubcommand: List.self)

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List every error (the default).",
            discussion: """
                One line per error: "#ID<TAB>KIND TABLE/ID<TAB>STATUS CLASS: MESSAGE". --json and \
                --ndjson print the objects described in `tsync conflicts --help` ({"id", "table", \
                "itemId", "class", "base", "ours", "theirs", ...}).

                EXAMPLES
                  tsync conflicts list --table todo
                  tsync conflicts list --ndjson | jq -r .itemId
                """)

        @OptionGroup var storeOptions: StoreOptions

        @Option(help: ArgumentHelp("Only errors of this table.", valueName: "TABLE"), completion: StoreCompletion.tables)
        var table: String?

        @OptionGroup var output: JSONLinesOptions
        @OptionGroup var pager: PagerOption

        func run() throws {
            let store = try storeOptions.open()
            let conflicts = try store.conflictDetails(table: table)
            if output.json {
                Console.write(JSONReports.line(.array(conflicts.map(SyncReports.conflict))))
                return
            }
            if output.ndjson {
                Console.write(JSONLinesOptions.lines(conflicts.map(SyncReports.conflict)))
                return
            }
            let style = Style(enabled: Console.colorOnStdout)
            pager.write(conflicts.map { ConflictFormat.summary($0, style: style) }.joined(), store: store)
            if conflicts.isEmpty, Console.stdoutIsTerminal {
                Console.note("no errors: the error table is empty")
            } else if !conflicts.isEmpty {
                Console.note(
                    "\(StatusFormat.count(conflicts.count, "error")): `tsync conflicts show ID` for details, `tsync resolve ID --ours|--theirs|--merge|--cancel|--discard` to settle"
                )
            }
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show", abstract: "Show one error with base / ours / theirs field by field.",
            discussion: """
                The error is named by its id (3 or '#3', as `tsync conflicts` lists it) or by its \
                item, TABLE/ID. --json prints one object as in `tsync conflicts --json` ({"id", \
                "table", "itemId", "class", "base", "ours", "theirs", ...}).

                EXAMPLES
                  tsync conflicts show 3
                  tsync conflicts show todo/milk --json | jq .theirs
                """)

        @OptionGroup var storeOptions: StoreOptions

        @Argument(help: "The error: its id (from `tsync conflicts`) or its item, TABLE/ID.", completion: StoreCompletion.errors)
        var error: ErrorReference

        @Flag(help: "Print machine-readable JSON (one object, as in the list).")
        var json = false

        func run() throws {
            let store = try storeOptions.open()
            let ids = try ErrorReference.ids([error], in: store)
            guard let details = try store.conflictDetails(ids: ids).first else {
                throw TSyncError.invalidInput("no error \(ids.first ?? 0) in the error table: run `tsync conflicts` to list them")
            }
            if json {
                Console.write(JSONReports.line(SyncReports.conflict(details)))
            } else {
                Console.write(ConflictFormat.details(details, style: Style(enabled: Console.colorOnStdout)))
            }
        }
    }
}

/// Human forms of an error.
enum ConflictFormat {
    /// "#3  update todoitem/milk  412 version-conflict: the server has a newer version (…); it
    /// differs from yours in text (changed here: text; on the server: text)".
    static func summary(_ details: ConflictDetails, style: Style) -> String {
        let error = details.error
        var line = "\(style.bold("#\(error.id)"))\t\(error.kind.rawValue) \(error.table)/\(error.itemID)\t"
        line += style.red("\(error.httpStatus.map(String.init) ?? "-") \(details.failureClass.rawValue)")
        line += ": \(error.message)"
        if details.theirs?.system.deleted == true {
            line += " (the server keeps a deleted copy: --ours restores it, --theirs drops the local change)"
        } else if details.failureClass == .missing {
            line += " (deleted on the server; changed here: \(list(details.fieldsChangedByUs)))"
        } else if details.failureClass.isConflict {
            line += " (changed here: \(list(details.fieldsChangedByUs)); on the server: \(list(details.fieldsChangedByThem)))"
        }
        return line + "\n"
    }

    static func details(_ details: ConflictDetails, style: Style) -> String {
        let error = details.error
        var text = "error \(error.id): \(error.kind.rawValue) \(error.table)/\(error.itemID) (operation \(error.operationSeq))\n"
        text += "status: \(error.httpStatus.map(String.init) ?? "none") \(details.failureClass.rawValue)\n"
        text += "message: \(error.message)\n"
        text += "failed at: \(error.createdAt.iso8601)\n"
        text +=
            "base: \(version(details.base)), ours: \(details.ours == nil ? "(deleted)" : "local"), theirs: \(version(details.theirs))\n\n"
        var nameSet = Set<String>()
        for record in [details.base, details.ours, details.theirs] {
            if let record { nameSet.formUnion(record.fields.keys) }
        }
        let names = nameSet.sorted()
        var rows = [["field", "base", "ours", "theirs", ""]]
        let ours = Set(details.fieldsChangedByUs)
        let theirs = Set(details.fieldsChangedByThem)
        let differing = Set(details.differingFields)
        for name in names {
            let mark: String
            if ours.contains(name) && theirs.contains(name) && differing.contains(name) {
                mark = "both changed"
            } else if ours.contains(name) {
                mark = "ours"
            } else if theirs.contains(name) {
                mark = "theirs"
            } else {
                mark = ""
            }
            rows.append([name, value(details.base, name), value(details.ours, name), value(details.theirs, name), mark])
        }
        let widths = (0..<4).map { column in rows.map { $0[column].count }.max() ?? 0 }
        for (index, row) in rows.enumerated() {
            var line = ""
            for column in 0..<4 { line += row[column].padding(toLength: widths[column] + 2, withPad: " ", startingAt: 0) }
            line += row[4]
            line = String(line.reversed().drop(while: { $0 == " " }).reversed())
            if index == 0 { line = style.bold(line) } else if row[4] == "both changed" { line = style.red(line) }
            text += line + "\n"
        }
        return text
    }

    private static func list(_ names: [String]) -> String { names.isEmpty ? "nothing" : names.joined(separator: ", ") }

    private static func version(_ record: Record?) -> String {
        guard let record else { return "(none)" }
        let version = record.system.version.map { "version \($0)" } ?? "unversioned"
        return record.system.deleted ? version + " (deleted)" : version
    }

    private static func value(_ record: Record?, _ name: String) -> String {
        guard let record else { return "-" }
        guard let value = record.fields[name] else { return "(absent)" }
        return JSONSerializer.string(value)
    }
}
