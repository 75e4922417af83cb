import TSyncModel

/// git's "did you mean": a first word that names no command is refused (exit 64) with the closest
/// command names, instead of ArgumentParser's bare "Unexpected argument".
enum CommandSuggestion {
    /// The message for `arguments` (without the program name) when their command is unknown, or
    /// when `help` names an unknown command; nil when the command line names a command.
    static func problem(_ arguments: [String], commands: [String]) -> String? {
        guard let (index, word) = firstWord(arguments) else { return nil }
        if word == "help" {
            guard let topic = arguments.dropFirst(index + 1).first(where: { !$0.hasPrefix("-") }), !commands.contains(topic)
            else { return nil }
            return message(topic, commands: commands)
        }
        return commands.contains(word) ? nil : message(word, commands: commands)
    }

    private static func message(_ word: String, commands: [String]) -> String {
        "'\(word)' is not a tsync command\(Spelling.didYouMean(word, among: commands)) (`tsync --help` lists them)"
    }

    /// The first argument that is not an option of the root command (`-C DIR`, `--store DIR`,
    /// `--store=DIR`, `--help`, `--version`, ArgumentParser's `--generate-completion-script
    /// SHELL`), with its position.
    private static func firstWord(_ arguments: [String]) -> (Int, String)? {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            // ArgumentParser's own: shell completion asks with `---completion`.
            if argument.hasPrefix("---") { return nil }
            if argument == "-C" || argument == "--store" || argument == "--generate-completion-script" {
                index += 2
            } else if argument.hasPrefix("-") {
                index += 1
            } else {
                return (index, argument)
            }
        }
        return nil
    }
}
