#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation
import TSyncModel

/// Where output goes: data to stdout, messages to stderr (DESIGN §3), colour only on a terminal
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
