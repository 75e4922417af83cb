import Foundation
import Testing

/// `init`, `remote` and how commands find their store.
@Suite struct StoreCommandTests {
    @Test func initCreatesTheStoreAndIsSafeToRepeat() throws {
        let directory = try TemporaryDirectory()
        let first = try TSyncProcess.run(["init", "project", "--remote", "http://127.0.0.1:8080"], in: directory.path)
        #expect(first.status == 0, "\(first)")
        #expect(first.stdout.isEmpty)
        #expect(first.stderr.contains("Initialized empty tsync store in"))
        let store = directory.path + "/project/.tsync"
        #expect(FileManager.default.fileExists(atPath: store + "/store.sqlite"))
        let config = try #require(FileManager.default.contents(atPath: store + "/config.json"))
        #expect(String(decoding: config, as: UTF8.self).contains("\"remote\": \"http://127.0.0.1:8080\""))

        let again = try TSyncProcess.run(["init", "project"], in: directory.path)
        #expect(again.status == 0)
        #expect(again.stderr.contains("Reinitialized existing tsync store"))
        let remote = try TSyncProcess.run(["remote"], in: directory.path + "/project")
        #expect(remote.stdout == "http://127.0.0.1:8080\n")
    }

    @Test func initHonoursDashC() throws {
        let directory = try TemporaryDirectory()
        let target = try directory.subdirectory("elsewhere")
        #expect(try TSyncProcess.run(["-C", target, "init"], in: directory.path).status == 0)
        #expect(try TSyncProcess.run(["-C", directory.path, "init", "sub"], in: "/").status == 0)
        #expect(FileManager.default.fileExists(atPath: target + "/.tsync/store.sqlite"))
        #expect(FileManager.default.fileExists(atPath: directory.path + "/sub/.tsync/store.sqlite"))
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/.tsync"))
    }

    @Test func remoteShowsAndSets() throws {
        let sandbox = try TSyncSandbox()
        let none = try sandbox.run(["remote"])
        #expect(none.status == 1)
        #expect(none.stderr.contains("no remote is set"))
        #expect(try sandbox.ok(["remote", "--json"]) == "{\"remote\":null}\n")
        try sandbox.ok(["remote", "https://sync.example.com/app"])
        #expect(try sandbox.ok(["remote"]) == "https://sync.example.com/app\n")
        #expect(try sandbox.ok(["remote", "--json"]) == "{\"remote\":\"https://sync.example.com/app\"}\n")
        let bad = try sandbox.run(["remote", "not a url"])
        #expect(bad.status == 64, "a bad URL is a usage error")
        #expect(bad.stderr.contains("invalid remote URL"))
        #expect(try sandbox.ok(["remote"]) == "https://sync.example.com/app\n")
    }

    @Test func commandsFindTheStoreByFlagEnvironmentOrUpwards() throws {
        let sandbox = try TSyncSandbox()
        try sandbox.ok(["insert", "todo", #"{"id": "here"}"#])
        let nested = try sandbox.directory.subdirectory("a/b/c")
        let elsewhere = try TemporaryDirectory()

        // Upwards from a subdirectory.
        #expect(try TSyncProcess.run(["get", "todo", "here", "--json"], in: nested).status == 0)
        // --store / -C, from anywhere.
        #expect(try TSyncProcess.run(["get", "todo", "here", "--store", sandbox.path], in: elsewhere.path).status == 0)
        #expect(try TSyncProcess.run(["get", "-C", sandbox.path, "todo", "here"], in: elsewhere.path).status == 0)
        // TSYNC_DIR.
        let fromEnvironment = try TSyncProcess.run(
            ["get", "todo", "here"], in: elsewhere.path, environment: ["TSYNC_DIR": sandbox.path])
        #expect(fromEnvironment.status == 0)
        // --store wins over TSYNC_DIR.
        let wrong = try TSyncProcess.run(
            ["status", "-C", elsewhere.path], in: elsewhere.path, environment: ["TSYNC_DIR": sandbox.path])
        #expect(wrong.status == 66)
    }

    @Test func outsideAStoreEveryCommandSaysSo() throws {
        let elsewhere = try TemporaryDirectory()
        for arguments in [["status"], ["tables"], ["insert", "t", "{}"], ["get", "t", "x"], ["remote"], ["diff"]] {
            let result = try TSyncProcess.run(arguments, in: elsewhere.path)
            #expect(result.status == 66, "\(arguments): \(result)")
            #expect(result.stderr.contains("not a tsync store: no .tsync/ in"), "\(arguments): \(result)")
            #expect(result.stderr.contains("; run `tsync init` to create one"), "the command line words the remedy: \(result)")
            #expect(result.stdout.isEmpty)
        }
        #expect(!FileManager.default.fileExists(atPath: elsewhere.path + "/.tsync"))
    }
}
