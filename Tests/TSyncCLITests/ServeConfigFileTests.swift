import Foundation
import Testing
import TSyncModel

@testable import TSyncCLI

/// `tsync serve --config FILE`, read in-process: what the file stands for, and every way it can
/// be wrong, each a config error (78) naming the file, the line and the key. One end-to-end test
/// (`OperatorServeTests.badConfigFilesExit78NamingLineAndKey`) checks that the process exits so.
@Suite struct ServeConfigFileTests {
    /// The error `text` is refused with, as `tsync serve --config serve.toml` prints and exits.
    private func refusal(_ text: String) -> (code: Int32, message: String)? {
        do {
            _ = try ServeConfigFile(path: "serve.toml", text: text)
            return nil
        } catch {
            return (ExitStatus.code(for: error.kind), error.message)
        }
    }

    @Test func aValidFileIsTheArgumentsItStandsFor() throws {
        let file = try ServeConfigFile(
            path: "serve.toml",
            text: """
                # tsync serve settings
                db = "sqlite:/srv/c.db"   # the database
                port = 0
                no-auth = true
                insecure = false
                max-top = 5_000
                index = [
                  "todo.n",  # trailing commas are fine
                  'todo.title',
                ]
                log-format = 'json'
                token-ttl = "30d"
                query-timeout = 30
                host = "a\\"b\\u00e9"

                """)
        #expect(
            file.arguments(overriddenBy: []) == [
                "--db=sqlite:/srv/c.db", "--port=0", "--no-auth", "--max-top=5000", "--index=todo.n", "--index=todo.title",
                "--log-format=json", "--token-ttl=30d", "--query-timeout=30", "--host=a\"bé",
            ])
        #expect(file.string("db") == "sqlite:/srv/c.db")
        #expect(file.line(of: "index") == 7)
        #expect(file.line(of: "metrics") == nil)
        // The command line wins: its keys are left out, a repeatable one whole.
        #expect(
            file.arguments(overriddenBy: ["--max-top", "7", "--index=x.y", "--port=1", "--", "--db"]) == [
                "--db=sqlite:/srv/c.db", "--no-auth", "--log-format=json", "--token-ttl=30d", "--query-timeout=30", "--host=a\"bé",
            ])
        #expect(try ServeConfigFile(path: "empty.toml", text: "").entries.isEmpty)
        #expect(try ServeConfigFile(path: "crlf.toml", text: "port = 1\r\nmetrics = true\r\n").line(of: "metrics") == 2)
    }

    @Test(arguments: [
        ("port = 0\ncolour = \"blue\"\n", #"line 2: unknown key "colour"; the keys are serve's long flag names: access, body-timeout,"#),
        // The near key, as a mistyped command or table is answered.
        ("log_format = \"json\"\n", #"line 1: unknown key "log_format"; did you mean 'log-format'?"#),
        ("port = \"eighty\"\n", "line 1: port takes an integer, not a string"),
        ("\n\nno-auth = 1\n", "line 3: no-auth takes true or false, not an integer"),
        ("index = [1, 2]\n", "line 1: index takes an array of strings, not an array"),
        ("token-ttl = true\n", #"line 1: token-ttl takes a duration, an integer of seconds or a string such as "30d", not a boolean"#),
        ("db = [\"a\"]\n", "line 1: db takes a string, not an array"),
        ("port = 1\nport = 2\n", "line 2: port is already set on line 1"),
        ("[server]\nport = 1\n", "line 1: tables ([…]) are not supported"),
        ("server.port = 1\n", "line 1: dotted keys are not supported"),
        ("port = 1.5\n", "line 1: port = 1.5 is not a value this file takes"),
        ("port = 1_\n", "line 1: port = 1_ is not a value this file takes"),
        ("port =\n", "line 1: port = the end of the line is not a value this file takes"),
        ("port 1\n", "line 1: expected = after the key \"port\""),
        ("= 1\n", "line 1: expected a key (e.g. port = 8080), found \"=\""),
        ("host = \"127.0.0.1\n", "line 1: unterminated string"),
        ("host = \"a\\qb\"\n", "line 1: invalid escape \\q in a string"),
        ("host = \"\\uZZZZ\"\n", "line 1: invalid \\u escape in a string"),
        ("host = \"a\u{1}b\"\n", "line 1: a control character in a string"),
        ("port = 1 2\n", "line 1: unexpected \"2\" after the value of port"),
        ("index = [\"a\" \"b\"]\n", "line 1: expected , or ] in the array of index, found \"\\\"\""),
        ("index = [\"a\",\n", "line 2: index has no value"),
        ("index = [\n  \"todo.n\",\n  [\"x\"]]\n", "line 3: index holds an array inside an array"),
    ])
    func eachMistakeIsAConfigErrorNamingItsLine(text: String, words: String) {
        let refused = refusal(text)
        #expect(refused?.code == ExitStatus.invalidConfiguration, "\(text)")
        #expect(refused?.message.hasPrefix("serve.toml \(words)") == true, "\(text): \(refused?.message ?? "accepted")")
    }

    /// Nested 20,000 deep, the reader's recursion crashed serve (SIGSEGV): an array inside an
    /// array is refused as it opens, so the depth read is one.
    @Test func nestingIsRefusedAtTheFirstInnerArray() {
        let deep = "port = 1\nindex = " + String(repeating: "[", count: 200_000) + String(repeating: "]", count: 200_000) + "\n"
        let refused = refusal(deep)
        #expect(refused?.code == 78)
        #expect(refused?.message == #"serve.toml line 2: index holds an array inside an array: serve's arrays hold strings, ["a", "b"]"#)
    }

    @Test func aMissingFileIs66AndATextThatIsNotUTF8Is78() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tsync-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let missing = directory.appendingPathComponent("none.toml").path
        do {
            _ = try ServeConfigFile(path: missing)
            Issue.record("a missing file was read")
        } catch {
            #expect(ExitStatus.code(for: error.kind) == 66)
            #expect(error.message.hasPrefix("cannot read the config file"), "\(error.message)")
        }
        let binary = directory.appendingPathComponent("binary.toml").path
        #expect(FileManager.default.createFile(atPath: binary, contents: Data([0x70, 0xFF, 0xFE, 0x0A])))
        do {
            _ = try ServeConfigFile(path: binary)
            Issue.record("a file that is not UTF-8 was read")
        } catch {
            #expect(ExitStatus.code(for: error.kind) == 78)
            #expect(error.message.contains("is not UTF-8 text"), "\(error.message)")
        }
    }

    /// A value the reader takes but serve refuses is a config error too, naming the file's line:
    /// the file's settings are parsed as serve's arguments.
    @Test(arguments: [
        ("max-top = 0\n", "line 1: max-top: --max-top must be at least 1 (got 0)"),
        ("port = 0\nlog-format = \"xml\"\n", "line 2: log-format:"),
        (
            "trusted-proxy = [\"10.0.0.1\",\n \"not an address\"]\n",
            "line 1: trusted-proxy: --trusted-proxy not an address is not an IP address"
        ),
        ("token-ttl = \"soon\"\n", "line 1: token-ttl:"),
    ])
    func aValueServeRefusesIsAConfigErrorOfItsLine(text: String, words: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tsync-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("serve.toml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        do {
            _ = try ServeCommand.withConfigFile(path)
            Issue.record("\(text) was taken")
        } catch let error as TSyncError {
            #expect(ExitStatus.code(for: error.kind) == 78)
            #expect(error.message.hasPrefix("\(path) \(words)"), "\(error.message)")
        } catch {
            Issue.record("not a config error: \(error)")
        }
    }

    /// Every long option of `tsync serve` but --config and --help is a key of the file, of the
    /// kind the option takes (so a wrong kind is refused naming the key).
    @Test func everyServeOptionIsAKey() {
        let help = ServeCommand.helpMessage(columns: 200)
        let names = Set(
            help.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "," }).filter { $0.hasPrefix("--") }
                .map { String($0.dropFirst(2).prefix { $0.isLetter || $0 == "-" }) }
        ).subtracting(["config", "help", "version", ""])
        #expect(names.count >= 20, "\(names)")
        #expect(names == Set(ServeConfigFile.keys.keys), "options without a key, or keys without an option")
        for name in names.sorted() {
            let refused = refusal("\(name) = [1]\n")
            #expect(
                refused?.code == 78 && refused?.message.hasPrefix("serve.toml line 1: \(name) takes") == true,
                "\(name): \(String(describing: refused))")
        }
    }
}
