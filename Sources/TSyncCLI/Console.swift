#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import ArgumentParser
import Foundation
import TSyncEngine
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

    /// Writes until done or the reader has gone (EPIPE: a pager that quit, a closed pipe); false
    /// when it has.
    @discardableResult
    static func writeAll(_ descriptor: Int32, _ text: String) -> Bool {
        var text = text
        return text.withUTF8 { writeAll(descriptor, $0) }
    }

    /// Writes until done; false when the reader has gone (EPIPE: a pager that quit, a closed
    /// pipe), which is no error: there is nothing more to say.
    static func writeAll(_ descriptor: Int32, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard var pointer = bytes.baseAddress else { return true }
        var remaining = bytes.count
        while remaining > 0 {
            let written = Foundation.write(descriptor, pointer, remaining)
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            remaining -= written
            pointer += written
        }
        return true
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

/// A pager for long output on a terminal, run as git runs its pager: `$TSYNC_PAGER`, else the
/// store's `core.pager`, else `$PAGER`, else `less` (with `LESS=FRX` unless set: quits when the
/// text fits, keeps colours, leaves the screen as it is). Never when stdout is not a terminal; an
/// empty setting or `cat` turns it off, and so does `--no-pager`.
///
/// The pager is spawned with `posix_spawn` in tsync's own process group, which is the terminal's
/// foreground group: `Foundation.Process` puts its child in a group of its own, where `less` is
/// stopped (SIGTTOU) as soon as it sets up the terminal and the command hangs on a blank screen.
/// tsync writes the text into a pipe and waits for the pager to exit; a pager that quits early
/// (`q`) closes the pipe, which ends the writing (EPIPE, SIGPIPE ignored) and is no error.
enum Pager {
    /// Writes `text` to stdout, through the pager when stdout is a terminal and the text is longer
    /// than the screen. `configured` is the store's `core.pager`; `enabled` is false for `--no-pager`.
    static func write(_ text: String, configured: String? = nil, enabled: Bool = true) {
        let environment = ProcessInfo.processInfo.environment
        guard enabled, Console.stdoutIsTerminal, let command = command(environment, configured: configured),
            lines(text) > terminalRows
        else {
            Console.write(text)
            return
        }
        guard page(text, through: command, environment: environment) else {
            Console.write(text)
            return
        }
    }

    /// The pager's shell command, nil when paging is off (docs/DESIGN.md §3).
    static func command(_ environment: [String: String], configured: String?) -> String? {
        let chosen =
            environment["TSYNC_PAGER"] ?? configured ?? environment["PAGER"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ["/usr/bin/less", "/bin/less"].first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let chosen else { return nil }
        let trimmed = chosen.trimmingCharacters(in: .whitespaces)
        return trimmed.isEmpty || trimmed == "cat" ? nil : chosen
    }

    /// Runs `/bin/sh -c command` with the text on its stdin and waits for it; false when it could
    /// not be started (the caller then writes the text itself).
    private static func page(_ text: String, through command: String, environment: [String: String]) -> Bool {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { return false }
        let (readEnd, writeEnd) = (pipeEnds[0], pipeEnds[1])

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, readEnd, STDIN_FILENO)
        posix_spawn_file_actions_addclose(&actions, readEnd)
        posix_spawn_file_actions_addclose(&actions, writeEnd)

        // The pager gets default signal handling and an empty mask, whatever tsync set for itself.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGTSTP, SIGTTIN, SIGTTOU, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        var childEnvironment = environment
        if childEnvironment["LESS"] == nil { childEnvironment["LESS"] = "FRX" }
        if childEnvironment["LV"] == nil { childEnvironment["LV"] = "-c" }
        let arguments = ["/bin/sh", "-c", command]
        let environmentLines = childEnvironment.map { "\($0.key)=\($0.value)" }
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = environmentLines.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }

        // Ctrl-C reaches the pager too (same group): tsync waits for it rather than leave it
        // behind on the terminal, as git does.
        let previousInterrupt = signal(SIGINT, SIG_IGN)
        let previousQuit = signal(SIGQUIT, SIG_IGN)
        let previousPipe = signal(SIGPIPE, SIG_IGN)
        defer {
            signal(SIGINT, previousInterrupt)
            signal(SIGQUIT, previousQuit)
            signal(SIGPIPE, previousPipe)
        }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, &attributes, &argv, &envp)
        close(readEnd)
        guard spawned == 0 else {
            close(writeEnd)
            return false
        }
        Console.writeAll(writeEnd, text)
        close(writeEnd)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        return true
    }

    private static var terminalRows: Int {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0 else { return 24 }
        return Int(size.ws_row)
    }

    private static func lines(_ text: String) -> Int { text.utf8.reduce(0) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 } }
}

/// `--no-pager`, on the commands whose output can be paged (diff, conflicts, log).
struct PagerOption: ParsableArguments {
    @Flag(help: "Never page the output (otherwise a text longer than the terminal goes through the pager).")
    var noPager = false

    /// Writes the text, paged as the options and the store's `core.pager` say.
    func write(_ text: String, store: LocalStore) {
        let configured = (try? store.configuration())?.value(.corePager)
        Pager.write(text, configured: configured, enabled: !noPager)
    }
}
