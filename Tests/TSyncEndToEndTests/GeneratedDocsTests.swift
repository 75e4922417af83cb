import Foundation
import Testing

/// `man/` and `completions/` are generated from the command definitions by
/// `scripts/generate-docs.sh` and committed; these tests fail when they are stale.
///
/// Completions are compared byte for byte with what the built binary generates now. Man pages
/// are rendered by swift-argument-parser's generate-manual plugin, which needs a nested package
/// build (minutes, and a lock on .build) — too slow and fragile for a test. But the plugin renders
/// exactly `tsync --experimental-dump-help` (plus a fixed date), so the script commits that dump
/// next to the pages, and the test compares it with the binary's: if any command, option or help
/// text changed, the dump differs and the pages are stale. The test also checks that there is
/// one page per command, and none for a removed one.
@Suite struct GeneratedDocsTests {
    private static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    private static let regenerate = "stale: run scripts/generate-docs.sh and commit man/ and completions/"

    private func committed(_ relative: String) async throws -> String {
        let url = Self.packageRoot.appendingPathComponent(relative)
        let data = try #require(FileManager.default.contents(atPath: url.path), "\(relative) is missing: \(Self.regenerate)")
        return String(decoding: data, as: UTF8.self)
    }

    @Test(arguments: [("bash", "completions/tsync.bash"), ("zsh", "completions/_tsync"), ("fish", "completions/tsync.fish")])
    func completionsAreCurrent(shell: String, file: String) async throws {
        let directory = try TemporaryDirectory()
        let generated = try await TSyncProcess.run(["--generate-completion-script", shell], in: directory.path)
        #expect(generated.status == 0)
        #expect(!generated.stdout.isEmpty)
        #expect(generated.stdout == (try await committed(file)), "\(file) is \(Self.regenerate)")
    }

    @Test func manPagesAreCurrent() async throws {
        let directory = try TemporaryDirectory()
        let dump = try await TSyncProcess.run(["--experimental-dump-help"], in: directory.path)
        #expect(dump.status == 0)
        #expect(dump.stdout == (try await committed("man/tsync.dump-help.json")), "man/ is \(Self.regenerate)")

        // One page per command (multi-page: tsync.1, tsync.status.1, ...), and nothing else.
        let tool = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        let root = try #require(tool["command"] as? [String: Any])
        var expected: Set<String> = []
        func collect(_ command: [String: Any], path: [String]) {
            let path = path + [command["commandName"] as? String ?? "?"]
            expected.insert(path.joined(separator: ".") + ".1")
            for child in command["subcommands"] as? [[String: Any]] ?? [] { collect(child, path: path) }
        }
        collect(root, path: [])
        let pages = try FileManager.default.contentsOfDirectory(atPath: Self.packageRoot.appendingPathComponent("man").path)
            .filter { $0.hasSuffix(".1") }
        #expect(Set(pages) == expected, "man/ is \(Self.regenerate)")
        #expect(try await committed("man/tsync.1").contains("EXIT STATUS"))
    }
}
