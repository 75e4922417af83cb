import ArgumentParser
import Foundation
import TSyncModel

/// The exit codes of docs/DESIGN.md §3 — the ONE place where error kinds become process exit codes.
/// The man page (root command discussion) prints `ExitStatus.table`, so the two cannot drift.
enum ExitStatus {
    static let success: Int32 = 0
    /// A failure not covered below; also `status --exit-code` when something is pending.
    static let failure: Int32 = 1
    static let operationsFailed: Int32 = 2
    static let unreachable: Int32 = 3
    static let unauthorized: Int32 = 4
    /// `config --unset` of a key that is not set (git config's code for it).
    static let unsetKeyMissing: Int32 = 5
    /// Usage error (EX_USAGE). ArgumentParser exits with the same code for its own parse and
    /// validation errors (`ExitCode.validationFailure`), which `TSync.main` leaves to it.
    static let usage: Int32 = 64
    /// Bad input data (EX_DATAERR).
    static let invalidInput: Int32 = 65
    /// No tsync store here (EX_NOINPUT).
    static let noStore: Int32 = 66
    /// A file the command was told to read is missing or unreadable (EX_NOINPUT, as `noStore`).
    static let fileMissing: Int32 = 66
    /// A configuration file is invalid (EX_CONFIG): `serve`'s TLS certificate or key, or its `--config` file.
    static let invalidConfiguration: Int32 = 78

    static func code(for kind: TSyncError.Kind) -> Int32 {
        switch kind {
        case .failure: failure
        case .operationsFailed: operationsFailed
        case .unreachable: unreachable
        case .unauthorized: unauthorized
        case .usage: usage
        case .invalidInput: invalidInput
        case .noStore: noStore
        case .fileMissing: fileMissing
        case .invalidConfiguration: invalidConfiguration
        }
    }

    /// Of the failures a command went on past (`sync`'s tables, the pull after a stopped push),
    /// the one whose code it exits with (docs/DESIGN.md §3): what needs a person before what
    /// passes by itself, so 4 (log in), then 1 and the other refusals (a table the server
    /// refuses), then 2 (the error table), then 3 (try again later).
    static func worst(_ errors: [TSyncError]) -> TSyncError? {
        func rank(_ kind: TSyncError.Kind) -> Int {
            switch kind {
            case .unauthorized: 0
            case .operationsFailed: 2
            case .unreachable: 3
            default: 1
            }
        }
        return errors.enumerated().min { (rank($0.element.kind), $0.offset) < (rank($1.element.kind), $1.offset) }?.element
    }

    /// Each code and its meaning, in the one wording `tsync --help` (`table`), tsync(1), the
    /// README and docs/DESIGN.md §3 share: `scripts/generate-docs.sh` writes the two documents'
    /// tables from the help, and `GeneratedDocsTests` fails while they differ.
    static let meanings: [(code: Int32, meaning: String)] = [
        (success, "success, including \"nothing to do\""),
        (
            failure,
            "failure not covered below (a busy, read-only or damaged store; a server that misbehaves; `purge` of records with pending operations, or `revert`/`restore` of records with pending changes, without `--force`; `history`, `show`, `revert` or `restore` against a server that keeps no history); `status --exit-code` with pending work; `tsync` without a command (a short usage, as `git`)"
        ),
        (
            operationsFailed,
            "push/pull/sync done, but operations failed (the error table is not empty); `push --check`: some operation would fail; `resolve --merge`: some refused"
        ),
        (
            unreachable,
            "the server could not be reached, or did not answer as a sync server does (an HTML page from a captive portal); nothing was lost"
        ),
        (unauthorized, "authentication missing or rejected"),
        (unsetKeyMissing, "`config --unset` of a key that is not set (as `git config`)"),
        (usage, "usage error (unknown option, missing or invalid argument; `purge` without `--yes` where nothing can ask)"),
        (invalidInput, "bad input data (invalid JSON, id or filter; unknown table, id or error id)"),
        (
            noStore,
            "no tsync store here: not inside one (nor `-C`/`TSYNC_DIR`), or its database is missing; `serve`: the `--tls-cert`/`--tls-key`/`--config` file is missing or unreadable"
        ),
        (
            invalidConfiguration,
            "`serve`: the `--tls-cert`/`--tls-key` file is not a PEM certificate or key, or the key belongs to another certificate; the `--config` file has an unknown key, a bad value or a value serve refuses (the message names the line and key)"
        ),
        (130, "`push`, `pull`, `sync` or `watch` stopped by SIGINT, Ctrl-C (143: by SIGTERM): what it did is kept and reported"),
    ]

    /// The EXIT STATUS section of `tsync --help` (and so of tsync(1)): one code a line, its
    /// meaning wrapped under itself. ArgumentParser wraps the help to the terminal and starts a
    /// wrapped line at column 0, which would break the table's column: every line fits in
    /// `width`, so that at 60 columns and wider ArgumentParser wraps none of them.
    static let table = "EXIT STATUS\n" + meanings.map { row(code: $0.code, meaning: $0.meaning) }.joined(separator: "\n")

    /// Lines of at most 58 characters (ArgumentParser breaks a line that fills the width).
    static let width = 58

    /// "  2   push/pull/sync done, …", continued on lines indented under the meaning.
    static func row(code: Int32, meaning: String) -> String {
        let indent = String(repeating: " ", count: 6)
        var lines: [String] = []
        var line = "  " + String(code).padding(toLength: 4, withPad: " ", startingAt: 0)
        var lineHasWord = false
        for word in meaning.split(separator: " ") {
            if lineHasWord, line.count + 1 + word.count > width {
                lines.append(line)
                line = indent
                lineHasWord = false
            }
            line += (lineHasWord ? " " : "") + word
            lineHasWord = true
        }
        lines.append(line)
        return lines.joined(separator: "\n")
    }
}

extension TSyncError {
    /// The message as the command line prints it: a remedy is worded in terms of its flags (and
    /// of `TSYNC_TOKEN` when it is set, since a login cannot replace the token it gives).
    var commandLineMessage: String {
        guard let remedy, let fact else { return message }
        let words: String
        switch remedy {
        case .pushOrForcePurge: words = "push first (`tsync push`), or purge with --force to drop them"
        case .smallerPages: words = "ask for smaller pages (pull --page-size)"
        case .keepOrResetSavedFilter: words = "pull it without --filter, add --reset to replace the filter, or use another --query-id"
        case .pullWithoutQueryID: words = "pull without --query-id"
        case .checkDatabaseLocation: words = "check --db (`tsync serve` and `tsync user add` create it)"
        case .anotherPort: words = "choose another with --port (--port 0 picks a free one)"
        case .trustCertificateAuthority:
            words =
                "if the server is yours, trust the CA that signed its certificate: SSL_CERT_FILE=CA.pem (or SSL_CERT_DIR=DIR) for one command, or `tsync config http.caFile CA.pem` for this store"
        case .updateInstead: words = "use `tsync update` to change it, or `tsync upsert` in a script that may run twice"
        case .pushFirst: words = "push it first (`tsync push`)"
        case .setRemote: words = "set one with `tsync remote URL`"
        case .listErrors: words = "run `tsync conflicts` to list them"
        case .resolveErrorsFirst: words = "resolve them first (`tsync conflicts`, `tsync resolve`)"
        case .logInAgain: words = "run `tsync logout`, then `tsync login` again"
        case .fixSetting(let key): words = "fix it with `tsync config \(key) VALUE`, or remove it with `tsync config --unset \(key)`"
        case .changePassword(let account): words = "choose another name, or change its password with `tsync user passwd \(account)`"
        case .listAccounts: words = "`tsync user list` shows the accounts"
        case .createStore: words = "run `tsync init` to create one"
        case .repairStore(let root): words = "run `tsync init \(root)` to repair it"
        case .restoreStore: words = "restore it from a backup, or move .tsync away and run `tsync init` (its queue is lost)"
        case .listTables: words = "`tsync tables` lists the tables"
        case .pushOrForce: words = "push first (`tsync push`), or add --force to drop them"
        case .logIn:
            let variable = RemoteAccess.tokenVariable
            words =
                ProcessInfo.processInfo.environment[variable].map { !$0.isEmpty } == true
                ? "the token comes from \(variable), which `tsync login` does not replace: set a valid one, or unset it"
                : "run `tsync login`"
        }
        return "\(fact); \(words)"
    }
}
