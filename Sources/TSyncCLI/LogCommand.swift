import ArgumentParser
import TSyncEngine
import TSyncModel

struct LogCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Show what the commands that changed the store or talked to the server did.",
        discussion: """
            Newest first, like `git log`. Every command that changed the store or talked to its \
            server (init, insert, update, delete, purge, push, push --check, pull, sync, resolve, \
            login, logout, remote URL, config KEY VALUE) leaves one entry: when it ran, the command line \
            (never a token or password), the remote, what it did (pushed, pulled, conflicts met, \
            errors settled and by which policy, operations failed, local changes, errors left in \
            the error table) and its exit code, with the items it touched (the first 300 as \
            TABLE/ID, and how many in all). A command that never finished (killed, or still \
            running) shows "did not finish"; one refused as a usage error (exit 64) leaves none. The journal keeps the newest 1000 entries \
            (`tsync config log.maxEntries N`). On a terminal, a long log goes through the pager, as \
            `tsync diff --help` says (--no-pager: never).

            --json prints [{"id", "startedAt", "finishedAt", "command", "arguments", "remote", \
            "exitCode", "counts": {"pushed", "pulled", "conflicts", "settled": {"POLICY": n}, \
            "failed", "changed", "errorsLeft"}, "items", "itemCount"}]; "finishedAt" and \
            "exitCode" are null for a command that did not finish; "versions": {"count", "sample": \
            [{"table", "id", "version", "operation", "updatedAt"}], "earliest": {"TABLE": updatedAt}} \
            are the versions its pushes wrote on the server (the first 300), shown as "wrote \
            TABLE/ID@VERSION": `tsync restore TABLE --before-push ID` goes back to just before them.

            EXAMPLES
              tsync log -n 5
              tsync log --json | jq '.[0].exitCode'
            """)

    @OptionGroup var storeOptions: StoreOptions

    @Option(
        name: .customShort("n", allowingJoined: true), parsing: .unconditional,
        help: ArgumentHelp("Show the newest N entries.", valueName: "N"))
    var count: Int = 20

    @OptionGroup var output: JSONOption
    @OptionGroup var pager: PagerOption

    /// git's `log -5` for `-n 5`: an option ArgumentParser cannot declare, so `tsync log`'s
    /// arguments (before `--`) are rewritten before parsing. The value of an option is left alone
    /// (`-n -1` stays an error).
    static func expandingCountShorthand(_ arguments: [String]) -> [String] {
        guard let (index, word) = CommandSuggestion.firstWord(arguments), word == "log" else { return arguments }
        var result = Array(arguments[...index])
        var position = index + 1
        while position < arguments.count, arguments[position] != "--" {
            let argument = arguments[position]
            let digits = argument.dropFirst()
            if argument.hasPrefix("-"), !digits.isEmpty, digits.allSatisfy({ ("0"..."9").contains($0) }),
                !["-n", "-C", "--store"].contains(result.last)
            {
                result += ["-n", String(digits)]
            } else {
                result.append(argument)
            }
            position += 1
        }
        return result + arguments[position...]
    }

    func validate() throws {
        guard count >= 1 else { throw ValidationError("-n must be 1 or more (got \(count))") }
    }

    func run() throws {
        let store = try storeOptions.open()
        let entries = try store.journal(limit: count)
        if output.json {
            Console.write(JSONReports.line(.array(entries.map(Self.json))))
            return
        }
        pager.write(entries.map(Self.text).joined(separator: "\n"), store: store)
    }

    static func json(_ entry: JournalEntry) -> JSONValue {
        [
            "id": .int(entry.id), "startedAt": .string(entry.startedAt.iso8601),
            "finishedAt": entry.finishedAt.map { .string($0.iso8601) } ?? .null, "command": .string(entry.command),
            "arguments": .array(entry.arguments.map(JSONValue.string)), "remote": entry.remote.map(JSONValue.string) ?? .null,
            "exitCode": entry.exitCode.map { .int(Int64($0)) } ?? .null, "counts": entry.counts.json,
            "items": .array(entry.items.items.map(JSONValue.string)), "itemCount": .int(Int64(entry.items.count)),
            "versions": entry.written.json,
        ]
    }

    /// `argument` as a POSIX shell reads it back: as it is when it holds only characters no shell
    /// treats specially, else in single quotes (a quote inside written `'\''`), so that the line
    /// `tsync log` shows can be pasted into a shell. An argument with control characters is
    /// written `$'…'` with escapes (bash, zsh, ksh): a raw escape sequence would reach the
    /// terminal, and a line break would split the entry.
    static func shellQuoted(_ argument: String) -> String {
        if argument.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            var text = "$'"
            for scalar in argument.unicodeScalars {
                switch scalar {
                case "\\": text += "\\\\"
                case "'": text += "\\'"
                case "\n": text += "\\n"
                case "\t": text += "\\t"
                case "\r": text += "\\r"
                case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                    let hex = String(scalar.value, radix: 16)
                    text += "\\x" + (hex.count == 1 ? "0" + hex : hex)
                default: text.unicodeScalars.append(scalar)
                }
            }
            return text + "'"
        }
        let plain = argument.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
            default: "@%+=:,./_-".utf8.contains(byte)
            }
        }
        guard argument.isEmpty || !plain else { return argument }
        return "'" + argument.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }

    /// An entry as a few lines: what ran and how it ended, what it did, the first items.
    static func text(_ entry: JournalEntry) -> String {
        let ended = entry.exitCode.map { "exit \($0)" } ?? "did not finish"
        var lines = [
            "#\(entry.id)  \(entry.startedAt.iso8601)  \(ended)", "    tsync " + entry.arguments.map(shellQuoted).joined(separator: " "),
        ]
        if let remote = entry.remote { lines.append("    remote " + remote) }
        let counts = entry.counts
        var did: [String] = []
        if counts.changed > 0 { did.append("changed \(counts.changed)") }
        if counts.pushed > 0 { did.append("pushed \(counts.pushed)") }
        if counts.pulled > 0 { did.append("pulled \(counts.pulled)") }
        if counts.conflicts > 0 { did.append(StatusFormat.count(counts.conflicts, "conflict")) }
        for (policy, settled) in counts.settled.sorted(by: { $0.key < $1.key }) { did.append("settled \(settled) (\(policy))") }
        if counts.failed > 0 { did.append("\(counts.failed) failed") }
        if entry.exitCode != nil { did.append("\(StatusFormat.count(counts.errorsLeft, "error")) left") }
        lines.append("    " + did.joined(separator: ", "))
        if entry.items.count > 0 {
            let shown = entry.items.items.prefix(5).joined(separator: " ")
            let more = entry.items.count > 5 ? " … (\(entry.items.count) in all)" : ""
            lines.append("    items " + shown + more)
        }
        if let wrote = wroteLine(entry.written) { lines.append(wrote) }
        return lines.joined(separator: "\n") + "\n"
    }

    /// "    wrote todo/a@3 todo/b@7 … (12 in all) since 2026-…": the versions a push wrote, and per
    /// table the earliest time, which `restore --before-push` goes back to just before.
    static func wroteLine(_ written: PushedVersions) -> String? {
        guard written.count > 0 else { return nil }
        let shown = written.sample.prefix(5).map { "\($0.table)/\($0.id)@\($0.version ?? "?")" }.joined(separator: " ")
        let more = written.count > 5 ? " … (\(written.count) in all)" : ""
        let since = written.earliest.sorted { $0.key < $1.key }.map { "\($0.key) from \($0.value.iso8601)" }.joined(separator: ", ")
        return "    wrote " + shown + more + (since.isEmpty ? "" : "; " + since)
    }
}
