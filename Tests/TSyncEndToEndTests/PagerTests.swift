import Foundation
import Testing

/// The pager runs in the terminal's foreground process group, as git runs it, so
/// `less` can take the terminal, shows the first screen, quits with `q`, and tsync exits 0.
/// Driven on a real pseudo-terminal (`PseudoTerminal`).
@Suite(.serialized) struct PagerTests {
    /// A store whose diff is 120 lines, five screens of 24 rows.
    private func longDiff() async throws -> TSyncSandbox {
        let store = try await TSyncSandbox()
        try await store.ok(["insert", "todo", "-q"], stdin: (0..<40).map { #"{"id": "r\#($0)", "n": \#($0)}"# }.joined(separator: "\n"))
        return store
    }

    @Test func lessShowsTheFirstScreenAndQuitsWithQ() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/less") else { return }
        let store = try await longDiff()
        let terminal = try PseudoTerminal(["diff"], in: store.path, environment: PseudoTerminal.environment([:]))
        #expect(await terminal.read(until: "insert todo/r0", timeout: 15), "less shows the first screen: \(terminal.output)")
        #expect(await terminal.isRunning(after: 0.5), "less waits for a key: \(terminal.output)")
        #expect(!terminal.output.contains("todo/r39"), "one screen, not the whole diff: \(terminal.output)")
        terminal.type("q")
        let status = await terminal.wait(timeout: 10)
        #expect(status == 0, "tsync exits 0 once less quits (nil: still running after 10 s): \(terminal.output)")
    }

    @Test func moreAsThePagerQuitsToo() async throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/more") || FileManager.default.isExecutableFile(atPath: "/bin/more")
        else { return }
        let store = try await longDiff()
        let terminal = try PseudoTerminal(["diff"], in: store.path, environment: PseudoTerminal.environment(["PAGER": "more"]))
        #expect(await terminal.read(until: "insert todo/r0", timeout: 15), "\(terminal.output)")
        #expect(await terminal.isRunning(after: 0.5), "more waits for a key: \(terminal.output)")
        terminal.type("q")
        #expect(await terminal.wait(timeout: 10) == 0, "\(terminal.output)")
    }

    @Test func noPagerWritesEverythingAtOnce() async throws {
        let store = try await longDiff()
        let terminal = try PseudoTerminal(["diff", "--no-pager"], in: store.path, environment: PseudoTerminal.environment([:]))
        #expect(await terminal.wait(timeout: 15) == 0, "no key needed: \(terminal.output)")
        #expect(terminal.output.contains("insert todo/r0") && terminal.output.contains("insert todo/r39"))
    }

    @Test func corePagerIsUsedAfterTSyncPagerAndBeforePager() async throws {
        let store = try await longDiff()
        try await store.ok(["config", "core.pager", "sed s/^/CORE:/"])
        #expect(try await store.ok(["config", "core.pager"]) == "sed s/^/CORE:/\n")
        guard
            let paged = try await TSyncProcess.runOnTerminal(
                ["diff"], in: store.path, environment: ["PAGER": "sed s/^/ENV:/", "TERM": "dumb"])
        else { return }
        #expect(paged.status == 0 && paged.stdout.contains("CORE:insert todo/r0"), "\(paged.stdout.prefix(300))")
        #expect(!paged.stdout.contains("ENV:"))
        let first = try #require(
            try await TSyncProcess.runOnTerminal(["diff"], in: store.path, environment: ["TSYNC_PAGER": "sed s/^/FIRST:/", "TERM": "dumb"]))
        #expect(first.stdout.contains("FIRST:insert todo/r0") && !first.stdout.contains("CORE:"), "\(first.stdout.prefix(300))")
        for command in [["diff", "--no-pager"], ["log", "-n", "1000", "--no-pager"]] {
            let plain = try #require(try await TSyncProcess.runOnTerminal(command, in: store.path, environment: ["TERM": "dumb"]))
            let paged = plain.stdout.split(whereSeparator: \.isNewline).contains { $0.hasPrefix("CORE:") }
            #expect(plain.status == 0 && !paged, "\(command): \(plain.stdout.prefix(300))")
        }
        try await store.ok(["config", "core.pager", ""])
        let off = try #require(
            try await TSyncProcess.runOnTerminal(["diff"], in: store.path, environment: ["PAGER": "sed s/^/ENV:/", "TERM": "dumb"]))
        #expect(!off.stdout.contains("ENV:") && off.stdout.contains("insert todo/r39"), "an empty core.pager turns paging off")
    }

    @Test func aPagerThatQuitsEarlyIsNoError() async throws {
        let store = try await TSyncSandbox()
        try await store.ok(["insert", "todo", "-q"], stdin: (0..<3000).map { #"{"id": "r\#($0)", "n": \#($0)}"# }.joined(separator: "\n"))
        guard
            let head = try await TSyncProcess.runOnTerminal(
                ["diff"], in: store.path, environment: ["TSYNC_PAGER": "head -n 1", "TERM": "dumb"])
        else { return }
        #expect(head.status == 0, "a closed pipe after the pager quits is normal: \(head)")
        #expect(head.stdout.contains("insert todo/r0") && !head.stdout.contains("todo/r2999"))
    }
}
