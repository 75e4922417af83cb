import Foundation
import Testing
import TSyncModel

@testable import TSyncCLI

/// The words of errors and the codes they exit with: ArgumentParser's messages in tsync's style,
/// the one table of exit codes, and the remedies worded in the command line's flags.
@Suite struct MessageTests {
    @Test(arguments: [
        ("Error: Unknown option '--jsn'. Did you mean '--json'?", "unknown option '--jsn'; did you mean '--json'?"),
        ("Error: Value to be set with flag '--theirs' had already been set with flag '--ours'", "choose one of --ours and --theirs"),
        ("Error: Value to be set with flag 'q' in '-oq' had already been set with flag 'o' in '-oq'", "choose one of -o and -q"),
        (
            "Error: The value 'mrege' is invalid for '--on-conflict <policy>'. Please provide one of 'fail', 'ours', 'theirs' or 'merge'.",
            "invalid value 'mrege' for --on-conflict: expected fail, ours, theirs or merge; did you mean 'merge'?"
        ),
        ("Error: The value 'x' is invalid for '--top <n>'", "invalid value 'x' for --top"),
        (
            "Error: The value 'z' is invalid for '<kind>'. Please provide one of the following:",
            "invalid value 'z' for <kind>: expected one of these:"
        ),
        ("Error: Missing expected argument '<table>'", "missing expected argument '<table>'"),
        // A name or an acronym keeps its capitals.
        ("PostgreSQL at postgres://x is not available", "PostgreSQL at postgres://x is not available"),
        ("JSON is expected", "JSON is expected"),
    ])
    func argumentParsersLinesReadAsTsyncs(line: String, expected: String) {
        #expect(UsageErrorText.restyle(line) == expected)
    }

    @Test func everyErrorKindHasItsDocumentedCode() {
        let codes: [(TSyncError.Kind, Int32)] = [
            (.failure, 1), (.operationsFailed, 2), (.unreachable, 3), (.unauthorized, 4), (.usage, 64), (.invalidInput, 65),
            (.noStore, 66), (.fileMissing, 66), (.invalidConfiguration, 78),
        ]
        for (kind, code) in codes { #expect(ExitStatus.code(for: kind) == code, "\(kind)") }
        // Every code a kind maps to has a meaning in the table, and no code is listed twice.
        let listed = ExitStatus.meanings.map(\.code)
        #expect(Set(listed).count == listed.count)
        for (kind, _) in codes { #expect(listed.contains(ExitStatus.code(for: kind)), "\(kind)") }
        #expect(listed.contains(ExitStatus.unsetKeyMissing) && listed.contains(130))
    }

    /// The table is printed by `tsync --help`; ArgumentParser breaks any line that fills the
    /// width, so none is longer than `ExitStatus.width`, and a wrapped meaning stays under itself.
    @Test func theExitStatusTableFitsItsWidth() {
        let lines = ExitStatus.table.split(separator: "\n").dropFirst()
        #expect(ExitStatus.table.hasPrefix("EXIT STATUS\n"))
        #expect(lines.count > ExitStatus.meanings.count, "some meanings wrap")
        for line in lines {
            #expect(line.count <= ExitStatus.width, "\(line)")
            #expect(line.wholeMatch(of: #/  \d{1,3} +\S.*/#) != nil || line.wholeMatch(of: #/      \S.*/#) != nil, "\(line)")
        }
        #expect(ExitStatus.row(code: 2, meaning: "short") == "  2   short")
    }

    /// Of the failures a command went on past, the one that needs a person first.
    @Test func theWorstFailureIsTheOneThatNeedsAPerson() {
        let down = TSyncError(.unreachable, "down")
        let refused = TSyncError(.failure, "refused")
        let failed = TSyncError(.operationsFailed, "failed")
        let login = TSyncError(.unauthorized, "login")
        #expect(ExitStatus.worst([down, failed, refused, login])?.message == "login")
        #expect(ExitStatus.worst([down, failed, refused])?.message == "refused")
        #expect(ExitStatus.worst([down, failed])?.message == "failed")
        #expect(ExitStatus.worst([down, TSyncError(.unreachable, "second")])?.message == "down", "the first of a rank")
        #expect(ExitStatus.worst([]) == nil)
    }

    /// The engine says what to do in its own terms; the command line words it in its flags.
    @Test func aRemedyIsWordedInTheCommandLinesFlags() {
        let pages = TSyncError(.failure, "the page is too big", remedy: .smallerPages)
        #expect(pages.message == "the page is too big; ask for smaller pages")
        #expect(pages.commandLineMessage == "the page is too big; ask for smaller pages (pull --page-size)")
        let setting = TSyncError(.invalidInput, "core.pager is bad", remedy: .fixSetting("core.pager"))
        #expect(
            setting.commandLineMessage
                == "core.pager is bad; fix it with `tsync config core.pager VALUE`, or remove it with `tsync config --unset core.pager`")
        #expect(TSyncError(.failure, "no remedy").commandLineMessage == "no remedy")
    }
}
