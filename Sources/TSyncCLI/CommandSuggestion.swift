import ArgumentParser
import TSyncModel

/// git's "did you mean": a first word that names no command is refused (exit 64) with the closest
/// command names, instead of ArgumentParser's bare "Unexpected argument". `help` is held to the
/// same: `tsync help user nosuch` is refused, not answered with the help of `user`.
enum CommandSuggestion {
    /// The message for `arguments` (without the program name) when their command is unknown, or
    /// when `help` names an unknown command or subcommand; nil when the command line names a
    /// command.
    static func problem(_ arguments: [String], root: ParsableCommand.Type) -> String? {
        let commands = names(root.configuration.subcommands) + ["help"]
        guard let (index, word) = firstWord(arguments) else { return nil }
        guard word == "help" else { return commands.contains(word) ? nil : message(word, commands: commands) }
        let topics = arguments.dropFirst(index + 1).filter { !$0.hasPrefix("-") }
        guard let first = topics.first, first != "help" else { return nil }
        guard var command = root.configuration.subcommands.first(where: { name($0) == first }) else {
            return message(first, commands: commands)
        }
        var path = "tsync \(first)"
        for topic in topics.dropFirst() {
            let subcommands = command.configuration.subcommands
            guard let next = subcommands.first(where: { name($0) == topic }) else {
                let names = names(subcommands)
                let hint =
                    names.isEmpty
                    ? " (it has none)" : "\(Spelling.didYouMean(topic, among: names)) (`\(path) --help` lists them)"
                return "'\(topic)' is not a subcommand of '\(path)'\(hint)"
            }
            command = next
            path += " \(topic)"
        }
        return nil
    }

    /// The name ArgumentParser matches: the configured one, else derived from the type's name
    /// (`user add` is `UserCommand.Add`, with none configured).
    private static func name(_ command: ParsableCommand.Type) -> String { command._commandName }

    private static func names(_ commands: [ParsableCommand.Type]) -> [String] { commands.map(name) }

    private static func message(_ word: String, commands: [String]) -> String {
        "'\(word)' is not a tsync command\(Spelling.didYouMean(word, among: commands)) (`tsync --help` lists them)"
    }

    /// The first argument that is not an option of the root command (`-C DIR`, `--store DIR`,
    /// `--store=DIR`, `--help`, `--version`, ArgumentParser's `--generate-completion-script
    /// SHELL`), with its position.
    static func firstWord(_ arguments: [String]) -> (Int, String)? {
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
