import Foundation
import Testing

/// `init`, `remote` and how commands find their store.
@Suite struct StoreCommandTests {
    @Test func initCreatesTheStoreAndIsSafeToRepeat() async throws {
        let directory = try TemporaryDirectory()
        let first = try await TSyncProcess.run(["init", "project", "--remote", "http://127.0.0.1:8080"], in: directory.path)
        #expect(first.status == 0, "\(first)")
        #expect(first.stdout.isEmpty)
        #expect(first.stderr.contains("Initialized empty tsync store in"))
        let store = directory.path + "/project/.tsync"
        #expect(FileManager.default.fileExists(atPath: store + "/store.sqlite"))
        let config = try #require(FileManager.default.contents(atPath: store + "/config.json"))
        #expect(String(decoding: config, as: UTF8.self).contains("\"remote\": \"http://127.0.0.1:8080\""))

        let again = try await TSyncProcess.run(["init", "project"], in: directory.path)
        #expect(again.status == 0)
        #expect(again.stderr.contains("Reinitialized existing tsync store"))
        let remote = try await TSyncProcess.run(["remote"], in: directory.path + "/project")
        #expect(remote.stdout == "http://127.0.0.1:8080\n")
    }

    @Test func initHonoursDashC() async throws {
        let directory = try TemporaryDirectory()
        let target = try directory.subdirectory("elsewhere")
        #expect(try await TSyncProcess.run(["-C", target, "init"], in: directory.path).status == 0)
        #expect(try await TSyncProcess.run(["-C", directory.path, "init", "sub"], in: "/").status == 0)
        #expect(FileManager.default.fileExists(atPath: target + "/.tsync/store.sqlite"))
        #expect(FileManager.default.fileExists(atPath: directory.path + "/sub/.tsync/store.sqlite"))
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/.tsync"))
    }

    @Test func remoteShowsAndSets() async throws {
        let sandbox = try await TSyncSandbox()
        let none = try await sandbox.run(["remote"])
        #expect(none.status == 1)
        #expect(none.stderr.contains("no remote is set"))
        #expect(try await sandbox.ok(["remote", "--json"]) == "{\"remote\":null}\n")
        try await sandbox.ok(["remote", "https://sync.example.com/app"])
        #expect(try await sandbox.ok(["remote"]) == "https://sync.example.com/app\n")
        #expect(try await sandbox.ok(["remote", "--json"]) == "{\"remote\":\"https://sync.example.com/app\"}\n")
        let bad = try await sandbox.run(["remote", "not a url"])
        #expect(bad.status == 64, "a bad URL is a usage error")
        #expect(bad.stderr.contains("invalid remote URL"))
        #expect(try await sandbox.ok(["remote"]) == "https://sync.example.com/app\n")
    }

    @Test func commandsFindTheStoreByFlagEnvironmentOrUpwards() async throws {
        let sandbox = try await TSyncSandbox()
        try await sandbox.ok(["insert", "todo", #"{"id": "here"}"#])
        let nested = try sandbox.directory.subdirectory("a/b/c")
        let elsewhere = try TemporaryDirectory()

        // Upwards from a subdirectory.
        #expect(try await TSyncProcess.run(["get", "todo", "here", "--json"], in: nested).status == 0)
        // --store / -C, from anywhere.
        #expect(try await TSyncProcess.run(["get", "todo", "here", "--store", sandbox.path], in: elsewhere.path).status == 0)
        #expect(try await TSyncProcess.run(["get", "-C", sandbox.path, "todo", "here"], in: elsewhere.path).status == 0)
        // TSYNC_DIR.
        let fromEnvironment = try await TSyncProcess.run(
            ["get", "todo", "here"], in: elsewhere.path, environment: ["TSYNC_DIR": sandbox.path])
        #expect(fromEnvironment.status == 0)
        // --store wins over TSYNC_DIR.
        let wrong = try await TSyncProcess.run(
            ["status", "-C", elsewhere.path], in: elsewhere.path, environment: ["TSYNC_DIR": sandbox.path])
        #expect(wrong.status == 66)
    }

    @Test func outsideAStoreEveryCommandSaysSo() async throws {
        let elsewhere = try TemporaryDirectory()
        for arguments in [["status"], ["tables"], ["insert", "t", "{}"], ["get", "t", "x"], ["remote"], ["diff"]] {
            let result = try await TSyncProcess.run(arguments, in: elsewhere.path)
            #expect(result.status == 66, "\(arguments): \(result)")
            #expect(result.stderr.contains("not a tsync store: no .tsync/ in"), "\(arguments): \(result)")
            #expect(result.stderr.contains("; run `tsync init` to create one"), "the command line words the remedy: \(result)")
            #expect(result.stdout.isEmpty)
        }
        #expect(!FileManager.default.fileExists(atPath: elsewhere.path + "/.tsync"))
    }

    /// A hand-edited .tsync/config.json may spell keys in any case, as git's config may:
    /// each is read as its canonical key, and the next write saves that name. Two
    /// spellings of one key are refused (exit 1, the store's file is at fault), never one winning.
    @Test func handEditedConfigKeysAreCaseInsensitive() async throws {
        let store = try await TSyncSandbox()
        let path = store.path + "/.tsync/config.json"
        let authority = try store.directory.write("ca.pem", "not checked until an https remote needs it\n")
        let edited = #"""
            {"Remote": "http://127.0.0.1:9", "HTTP.CAFILE": "\#(authority)", "Log.MaxEntries": 2,
             "PUSH.ONCONFLICT": "ours", "table.Todo.PREFER": "theirs", "some.Future": "kept"}
            """#
        try edited.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try await store.ok(["config", "log.maxEntries"]) == "2\n")
        #expect(try await store.ok(["config", "http.caFile"]) == authority + "\n")
        #expect(try await store.ok(["remote"]) == "http://127.0.0.1:9\n")
        let list = try await store.ok(["config", "--list"])
        for line in ["log.maxEntries=2", "push.onConflict=ours", "table.Todo.prefer=theirs", "remote.url=http://127.0.0.1:9"] {
            #expect(list.contains(line + "\n"), "\(line): \(list)")
        }
        // Read, not just listed: the log keeps 2 entries.
        for id in ["a", "b", "c"] { try await store.ok(["insert", "todo", #"{"id": "\#(id)"}"#]) }
        #expect(try JSONOutput.array(try await store.ok(["log", "--json"])).count == 2)
        // The next write saves canonical names, and keeps a key this version does not know.
        try await store.ok(["config", "core.pager", "cat"])
        let saved = try String(contentsOfFile: path, encoding: .utf8)
        #expect(saved.contains(#""log.maxEntries": 2"#) && saved.contains(#""http.caFile""#), "\(saved)")
        #expect(
            !saved.contains("Log.MaxEntries") && !saved.contains("HTTP.CAFILE") && saved.contains(#""some.Future": "kept""#), "\(saved)")

        for (text, key, spellings) in [
            (#"{"log.maxEntries": 5, "LOG.MAXENTRIES": 6}"#, "log.maxEntries", #""LOG.MAXENTRIES" and "log.maxEntries""#),
            (#"{"remote": "http://127.0.0.1:9", "Remote.URL": "http://127.0.0.1:8"}"#, "remote.url", #""Remote.URL" and "remote""#),
        ] {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            for arguments in [["config", "--list"], ["config", key], ["config", "push.prefer", "ours"]] {
                let result = try await store.run(arguments)
                #expect(result.status == 1, "\(arguments): \(result)")
                #expect(
                    result.stderr.contains("sets \(key) twice, as \(spellings) (keys are case-insensitive); keep one"), "\(result.stderr)")
            }
            #expect(try String(contentsOfFile: path, encoding: .utf8) == text, "nothing rewritten")
        }
    }
}
