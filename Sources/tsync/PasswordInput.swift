import Foundation
import TSyncModel

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a password the way clig.dev asks: from stdin when asked or when stdin is not a terminal,
/// otherwise from a prompt on the terminal with echo turned off. Never from a flag value.
enum PasswordInput {
    static func read(fromStdin: Bool, confirm: Bool) throws(TSyncError) -> String {
        if fromStdin || isatty(STDIN_FILENO) == 0 {
            let data = FileHandle.standardInput.readDataToEndOfFile()
            guard var text = String(data: data, encoding: .utf8) else {
                throw .invalidInput("the password on stdin is not valid UTF-8")
            }
            // One final line break ("\r\n" is a single Character in Swift).
            if text.last == "\n" || text.last == "\r\n" { text.removeLast() }
            guard !text.isEmpty else {
                throw .invalidInput("no password on stdin: pipe it in, e.g. `printf %s \"$PW\" | tsync user add NAME --password-stdin`")
            }
            return text
        }
        let password = try prompt("Password: ")
        if confirm, try prompt("Retype password: ") != password {
            throw .invalidInput("the passwords do not match: nothing was changed")
        }
        return password
    }

    private static func prompt(_ text: String) throws(TSyncError) -> String {
        FileHandle.standardError.write(Data(text.utf8))
        var original = termios()
        let canSilence = tcgetattr(STDIN_FILENO, &original) == 0
        if canSilence {
            var silent = original
            silent.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &silent)
        }
        defer {
            if canSilence { tcsetattr(STDIN_FILENO, TCSAFLUSH, &original) }
            FileHandle.standardError.write(Data("\n".utf8))
        }
        guard let line = readLine(strippingNewline: true) else { throw .usage("no password given") }
        return line
    }
}
