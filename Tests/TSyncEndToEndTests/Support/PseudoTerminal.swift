#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Foundation
import Testing

/// A process whose stdin, stdout and stderr are a real pseudo-terminal of 24 rows and 80 columns,
/// in a session of its own where it is the terminal's foreground process group, as a command typed
/// at a shell prompt is. A test reads what the terminal shows and types keys into it (a pager's
/// `q`), which `script` with a piped stdin cannot do at the right moment.
final class PseudoTerminal {
    private let master: Int32
    private let pid: pid_t
    private(set) var exitStatus: Int32?
    private var bytes: [UInt8] = []

    /// What the terminal has shown so far.
    var output: String { String(decoding: bytes, as: UTF8.self) }

    /// Starts `tsync arguments...` in `directory` with exactly `environment` (plus nothing).
    init(_ arguments: [String], in directory: String, environment: [String: String]) throws {
        // posix_openpt, unlockpt and ptsname as Linux does them (Glibc's module does not export
        // them): /dev/ptmx, TIOCSPTLCK 0, TIOCGPTN.
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        var unlock: Int32 = 0
        var number: UInt32 = 0
        guard master >= 0, ioctl(master, UInt(0x4004_5431), &unlock) == 0, ioctl(master, UInt(0x8004_5430), &number) == 0 else {
            throw PseudoTerminalError(message: "no pseudo-terminal: errno \(errno)")
        }
        let slavePath = "/dev/pts/\(number)"
        var size = winsize(ws_row: 24, ws_col: 80, ws_xpixel: 0, ws_ypixel: 0)
        _ = ioctl(master, UInt(TIOCSWINSZ), &size)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addclose(&actions, master)
        // Opened after setsid() by the new session's leader: the terminal becomes its controlling
        // terminal and its process group the foreground group.
        posix_spawn_file_actions_addopen(&actions, 0, slavePath, O_RDWR, 0)
        posix_spawn_file_actions_adddup2(&actions, 0, 1)
        posix_spawn_file_actions_adddup2(&actions, 0, 2)
        // No other descriptor of the test process (another test's sockets) stays open in it.
        if let closeFrom = ChildProcess.closeFrom { _ = closeFrom(&actions, 3) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(0x80))  // POSIX_SPAWN_SETSID (glibc)

        let shellArguments = ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", directory, TSyncBinary.path] + arguments
        var argv: [UnsafeMutablePointer<CChar>?] = shellArguments.map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, "/bin/sh", &actions, &attributes, &argv, &envp)
        guard spawned == 0 else {
            close(master)
            throw PseudoTerminalError(message: "posix_spawn failed: \(spawned)")
        }
        pid = child
    }

    /// The test's environment without the settings that would change what tsync does on a
    /// terminal, plus `extra`.
    static func environment(_ extra: [String: String]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for name in ["TSYNC_DIR", "TSYNC_TOKEN", "NO_COLOR", "TSYNC_PAGER", "PAGER", "LESS", "LV"] {
            environment.removeValue(forKey: name)
        }
        environment["TERM"] = "xterm"
        environment.merge(extra) { _, new in new }
        return environment
    }

    /// Reads the terminal until its output contains `text`; false after `timeout` seconds or at its end.
    @discardableResult
    func read(until text: String, timeout: TimeInterval) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !output.contains(text), Date() < deadline {
            guard await drain() else { break }
        }
        return output.contains(text)
    }

    /// Whether the process is still running after `seconds` of reading its output.
    func isRunning(after seconds: TimeInterval) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline, exitStatus == nil {
            _ = await drain()
            reap()
        }
        reap()
        return exitStatus == nil
    }

    /// Types `text` at the terminal.
    func type(_ text: String) {
        var text = text
        text.withUTF8 { buffer in _ = write(master, buffer.baseAddress, buffer.count) }
    }

    /// Waits for the process, reading its output; kills it after `timeout` seconds (nil then).
    func wait(timeout: TimeInterval) async -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while exitStatus == nil, Date() < deadline {
            _ = await drain()
            reap()
        }
        if exitStatus == nil {
            kill(-pid, SIGKILL)
            let pid = self.pid
            await OffThePool.run {
                var status: Int32 = 0
                waitpid(pid, &status, 0)
            }
            return nil
        }
        while await drain() {}
        return exitStatus
    }

    /// Reads what is there, or after a pause of 20 ms (a `Task.sleep`: no thread is held) what
    /// came meanwhile; false at the terminal's end (every slave end closed), or when nothing came
    /// and the process has ended.
    private func drain() async -> Bool {
        var descriptor = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
        if poll(&descriptor, 1, 0) <= 0 {
            try? await Task.sleep(for: .milliseconds(20))
            guard poll(&descriptor, 1, 0) > 0 else { return exitStatus == nil }
        }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = Foundation.read(master, &buffer, buffer.count)
        guard count > 0 else { return false }
        bytes += buffer.prefix(count)
        return true
    }

    private func reap() {
        guard exitStatus == nil else { return }
        var status: Int32 = 0
        if waitpid(pid, &status, WNOHANG) == pid {
            // Exited normally: the code; killed by a signal: 128 + the signal, as a shell says.
            exitStatus = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F)
        }
    }

    deinit {
        if exitStatus == nil {
            kill(-pid, SIGKILL)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
        close(master)
    }
}

struct PseudoTerminalError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
