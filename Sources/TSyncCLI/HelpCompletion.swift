import ArgumentParser
import Foundation

/// Completion of `tsync help TOPIC…` with the commands, and after a command its subcommands.
///
/// ArgumentParser adds a `help` command of its own, whose topics complete to nothing, and gives
/// no way to attach a completion to it. So tsync answers the completion call for it itself
/// (`tsync ---completion help -- positional@0 INDEX CURSOR WORDS…`, the form ArgumentParser's
/// scripts use for custom completions), and the scripts it generates make that call: their
/// `help` function is replaced (`scripts/generate-docs.sh` writes them to completions/).
enum HelpCompletion {
    /// The answer to a completion call for `help`; nil when `arguments` (without the program
    /// name) are not one.
    static func answer(_ arguments: [String], root: ParsableCommand.Type, shell: String?) -> String? {
        guard arguments.count >= 6, arguments[0] == "---completion", arguments[1] == "help", arguments[2] == "--",
            let index = Int(arguments[4])
        else { return nil }
        var candidates = topics(words: Array(arguments.dropFirst(6)), current: index, root: root)
        // As ArgumentParser answers zsh: its script drops this last line.
        if shell == "zsh" { candidates.append(" ") }
        return candidates.joined(separator: "\n")
    }

    /// The subcommands of the command the words between `help` and the current word name.
    static func topics(words: [String], current index: Int, root: ParsableCommand.Type) -> [String] {
        guard let help = words.firstIndex(of: "help"), help < index else { return [] }
        var commands = root.configuration.subcommands
        for topic in words[(help + 1)..<min(index, words.count)] where !topic.hasPrefix("-") {
            guard let command = commands.first(where: { $0._commandName == topic }) else { return [] }
            commands = command.configuration.subcommands
        }
        return commands.map { $0._commandName }
    }

    /// ArgumentParser's completion script for `shell`, its `help` function asking `tsync`; nil
    /// for a shell it does not know.
    static func script(for shell: String, root: ParsableCommand.Type) -> String? {
        guard let completionShell = CompletionShell(rawValue: shell) else { return nil }
        let script = root.completionScript(for: completionShell)
        let call = "---completion help -- positional@0"
        switch completionShell {
        case .bash:
            return script.replacingOccurrences(
                of: "_tsync_help() {\n    :\n}",
                with: """
                    _tsync_help() {
                        __tsync_add_completions -W "$(__tsync_custom_complete \(call) "${COMP_CWORD}" "$(__tsync_cursor_index_in_current_word)")"
                    }
                    """)
        case .zsh:
            return script.replacingOccurrences(
                of: "'*:subcommands:'",
                with:
                    #"'*:subcommands:{__tsync_custom_complete \#(call) "${current_word_index}" "$(__tsync_cursor_index_in_current_word)"}'"#
            )
        case .fish:
            return script
                + #"complete -c 'tsync' -n '__tsync_should_offer_completions_for_positional "tsync help" -ge 1' -fka '(__tsync_custom_completion \#(call) (count (__tsync_tokens -pc)) (__tsync_tokens -tC))'"#
                + "\n"
        default:
            return script
        }
    }
}
