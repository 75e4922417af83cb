import Foundation
import TSyncModel

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads a password the way clig.dev asks, for `login` and `user add|passwd` alike: the first
/// line of stdin with `--password-stdin` or when stdin is not a terminal (nothing ever prompts
/// without one); otherwise a prompt on the terminal with echo turned off. Never from a flag value.
enum PasswordInput {
    static func read(fromStdin: Bool, prompt label: String = "Password: ", confirm: Bool) throws(TSyncError) -> String {
        if fromStdin || !Console.stdinIsTerminal {
            let bytes = Console.readStandardInput()
            var text = String(decoding: bytes, as: UTF8.self)
            if let newline = text.firstIndex(where: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
                text = String(text[..<newline])
            }
            guard !text.isEmpty else {
                throw .invalidInput(
                    "no password on stdin: pipe it in, e.g. `printf '%s\\n' \"$PW\" | tsync … --password-stdin` (the first line is read)")
            }
            return text
        }
        let password = try prompt(label)
        guard !password.isEmpty else { throw .invalidInput("empty password") }
        if confirm, try prompt("Retype password: ") != password {
            throw .invalidInput("the passwords do not match: nothing was changed")
        }
        return password
    }

    private static func prompt(_ text: String) throws(TSyncError) -> String {
        var original = termios()
        let canSilence = tcgetattr(STDIN_FILENO, &original) == 0
        if canSilence {
            var silent = original
            silent.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &silent)
        }
        // The prompt only once echo is off: TCSAFLUSH drops what was typed before it, so what is
        // typed as soon as the prompt shows (a password manager typing it) must come after.
        FileHandle.standardError.write(Data(text.utf8))
        defer {
            if canSilence { tcsetattr(STDIN_FILENO, TCSAFLUSH, &original) }
            FileHandle.standardError.write(Data("\n".utf8))
        }
        guard let line = readLine(strippingNewline: true) else { throw .usage("no password given") }
        return line
    }
}
