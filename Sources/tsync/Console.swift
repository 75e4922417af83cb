#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation
import TSyncModel

/// Where output goes: data to stdout, messages to stderr (docs/DESIGN.md §3), colour only on a terminal
/// and never with NO_COLOR (or TERM=dumb).
enum Console {
    /// Writes `text` to stdout as it is (callers end lines themselves). One system call for a whole
    /// report keeps 100,000-line outputs fast.
    static func write(_ text: String) {
        writeAll(STDOUT_FILENO, text)
    }

    /// A message for the user on stderr, e.g. "Initialized empty tsync store in …".
    static func note(_ message: String) {
        writeAll(STDERR_FILENO, message + "\n")
    }

    /// A warning on stderr: "warning: <message>". The command goes on (or has succeeded), so
    /// never "error:".
    static func warning(_ message: String) {
        note("warning: \(message)")
    }

    /// An error on stderr: "tsync: error: <message>".
    static func error(_ message: String) {
        let prefix = Style(enabled: colorOnStderr).red("error:")
        writeAll(STDERR_FILENO, "tsync: \(prefix) \(message)\n")
    }

    static var colorOnStdout: Bool { colorAllowed && isatty(STDOUT_FILENO) == 1 }
    static var colorOnStderr: Bool { colorAllowed && isatty(STDERR_FILENO) == 1 }
    static var stdinIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }
    static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    private static var colorAllowed: Bool {
        let environment = ProcessInfo.processInfo.environment
        if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return false }
        return environment["TERM"] != "dumb"
    }

    /// Asks a yes/no question on the terminal (stderr, answer on stdin); only "y" or "yes" is yes.
    /// Callers ask only when stdin is a terminal.
    static func confirm(_ question: String) -> Bool {
        writeAll(STDERR_FILENO, "\(question) [y/N] ")
        guard let answer = readLine(strippingNewline: true) else { return false }
        return ["y", "yes"].contains(answer.trimmingCharacters(in: .whitespaces).lowercased())
    }

    /// Reads all of stdin (records piped in).
    static func readStandardInput() -> [UInt8] {
        Array(FileHandle.standardInput.readDataToEndOfFile())
    }

    private static func writeAll(_ descriptor: Int32, _ text: String) {
        var text = text
        text.withUTF8 { buffer in
            guard var pointer = buffer.baseAddress else { return }
            var remaining = buffer.count
            while remaining > 0 {
                let written = Foundation.write(descriptor, pointer, remaining)
                if written < 0 {
                    if errno == EINTR { continue }
                    return  // EPIPE and the like: the reader is gone, nothing more to say
                }
                remaining -= written
                pointer += written
            }
        }
    }
}

/// ANSI colours, or plain text when colour is off.
struct Style {
    var enabled: Bool

    func red(_ text: String) -> String { paint(text, "31") }
    func green(_ text: String) -> String { paint(text, "32") }
    func yellow(_ text: String) -> String { paint(text, "33") }
    func bold(_ text: String) -> String { paint(text, "1") }
    func dim(_ text: String) -> String { paint(text, "2") }

    private func paint(_ text: String, _ code: String) -> String {
        enabled ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }
}

/// A pager for long output on a terminal, as git pages `git diff`: `$TSYNC_PAGER`, else `$PAGER`,
/// else `less -FRX` (quits when the text fits, keeps colours). Never when stdout is not a
/// terminal; an empty `TSYNC_PAGER` turns it off.
enum Pager {
    static func write(_ text: String) {
        guard Console.stdoutIsTerminal, let command = command, text.utf8.count > 0, lines(text) > terminalRows else {
            Console.write(text)
            return
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        var environment = ProcessInfo.processInfo.environment
        if environment["LESS"] == nil { environment["LESS"] = "FRX" }
        process.environment = environment
        let input = Pipe()
        process.standardInput = input
        do {
            try process.run()
        } catch {
            Console.write(text)
            return
        }
        // The pager may quit before reading it all (q): a broken pipe is not an error here.
        signal(SIGPIPE, SIG_IGN)
        try? input.fileHandleForWriting.write(contentsOf: Data(text.utf8))
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    private static var command: String? {
        let environment = ProcessInfo.processInfo.environment
        if let pager = environment["TSYNC_PAGER"] { return pager.isEmpty ? nil : pager }
        if let pager = environment["PAGER"], !pager.isEmpty { return pager }
        let less = ["/usr/bin/less", "/bin/less"].first { FileManager.default.isExecutableFile(atPath: $0) }
        return less
    }

    private static var terminalRows: Int {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0 else { return 24 }
        return Int(size.ws_row)
    }

    private static func lines(_ text: String) -> Int { text.utf8.reduce(0) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 } }
}
