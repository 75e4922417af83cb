import Foundation
import Testing

/// Every error is one line, "tsync: error: …", and the message after it starts lowercase, as
/// git's do: tsync's own messages and ArgumentParser's, which `UsageErrorText`
/// rewrites ("Unknown option '--x'" → "unknown option '--x'"). A first word with more capitals
/// than its first letter is a name (PostgreSQL, JSON) and is spelled as it is.
@Suite struct ErrorMessageCaseTests {
    /// The first word after "tsync: error: " when it is a capitalized word (not a name), else nil.
    static func capitalizedFirstWord(_ stderr: String) -> Substring? {
        guard let line = stderr.split(separator: "\n").first(where: { $0.hasPrefix("tsync: error: ") }) else { return nil }
        let word = line.dropFirst("tsync: error: ".count).prefix { $0.isLetter }
        guard let first = word.first, first.isUppercase, word.dropFirst().allSatisfy(\.isLowercase) else { return nil }
        return word
    }

    @Test func theRuleTellsSentencesFromNames() {
        #expect(Self.capitalizedFirstWord("tsync: error: Unknown option '--x'\n") == "Unknown")
        #expect(Self.capitalizedFirstWord("tsync: error: unknown option '--x'\n") == nil)
        #expect(Self.capitalizedFirstWord("tsync: error: PostgreSQL at postgres://x is not available\n") == nil)
        #expect(Self.capitalizedFirstWord("tsync: error: '--x' is not a tsync command\n") == nil)
    }

    @Test func errorMessagesStartLowercase() async throws {
        let store = try await TSyncSandbox()
        try await store.ok(["insert", "todo", #"{"id": "a"}"#])
        let refusing = try LoopbackListener.refusing()
        defer { refusing.close() }
        let closed = refusing.port
        try await store.ok(["remote", "http://127.0.0.1:\(closed)"])
        let elsewhere = try TemporaryDirectory()
        let missingDatabase = "sqlite:" + (elsewhere.path as NSString).appendingPathComponent("none/server.db")
        let notASyncServer = try ScriptedServer { _, _ in .json(404, #"{"error": "Not Found"}"#) }
        let stranger = try await TSyncSandbox(remote: notASyncServer.url)
        try await stranger.ok(["insert", "todo", #"{"id": "a"}"#])

        let cases: [(arguments: [String], status: Int32)] = [
            // ArgumentParser's own messages
            (["status", "--bogus"], 64), (["status", "--jsn"], 64), (["insert"], 64), (["query", "todo", "--top", "x"], 64),
            (["query", "todo", "a", "b"], 64), (["login"], 64), (["user", "token"], 64), (["get", "todo", "--top"], 64),
            (["status", "--json=x"], 64),
            // tsync's "did you mean" and validate()
            (["frobnicate"], 64), (["help", "nosuch"], 64), (["pull", "todo", "--page-size", "0"], 64), (["resolve"], 64),
            (["update", "todo", "a", "--set", "noequals"], 64), (["serve", "--tls-cert", "x"], 64), (["log", "-n", "0"], 64),
            (["delete", "todo"], 64), (["push", "--dry-run", "--check"], 64), (["remote", "ftp://x"], 64),
            (["config", "no.such", "1"], 64), (["config", "log.maxEntries", "x"], 64), (["config", "http.caFile", "/nonexistent"], 64),
            // bad input, unknown things
            (["get", "todo", "nosuch"], 65), (["query", "nosuch"], 65), (["query", "todo", "--filter", "n eq"], 65),
            (["insert", "todo", "{"], 65), (["insert", "todo", #"{"id": "a"}"#], 65), (["update", "todo", "nosuch", "--set", "a=1"], 65),
            (["resolve", "todo/x", "--ours"], 65), (["conflicts", "show", "nosuch/x"], 65), (["diff", "nosuch"], 65),
            (["user", "list", "--db", missingDatabase], 65),
            // the store's state, the server, the network
            (["purge", "todo"], 1), (["config", "--unset", "log.maxEntries"], 5), (["push"], 3), (["pull", "todo"], 3),
            (["whoami"], 3), (["serve", "--db", "postgres://u@127.0.0.1:\(closed)/x", "--no-auth"], 1),
        ]
        for (arguments, status) in cases {
            let result = try await store.run(arguments)
            #expect(result.status == status, "\(arguments): \(result)")
            #expect(result.stderr.hasPrefix("tsync: error: "), "\(arguments): \(result)")
            #expect(Self.capitalizedFirstWord(result.stderr) == nil, "\(arguments): \(result.stderr)")
        }
        let outside = try await TSyncProcess.run(["status"], in: elsewhere.path)
        #expect(outside.status == 66 && Self.capitalizedFirstWord(outside.stderr) == nil, "\(outside)")
        let answeredWrongly = try await stranger.run(["push"])
        #expect(answeredWrongly.status == 3 && Self.capitalizedFirstWord(answeredWrongly.stderr) == nil, "\(answeredWrongly)")
    }
}
