import Foundation
import Testing

/// `insert` reads stdin a window at a time (a megabyte), so an input of several windows is
/// inserted whole, and a bad record far into it still inserts nothing and is named as before:
/// from a file (read again from its start) and from a pipe (kept aside as it is read).
@Suite struct StreamedInsertTests {
    /// 5,000 records of about 450 bytes: over two megabytes, three windows.
    private static let count = 5000
    private static let padding = String(repeating: "x", count: 400)

    private static func ndjson(_ line: (Int) -> String = record) -> String {
        (1...count).map(line).joined(separator: "\n") + "\n"
    }

    private static func record(_ number: Int) -> String {
        #"{"id": "r\#(number)", "n": \#(number), "text": "\#(padding)"}"#
    }

    private static func csv(_ row: (Int) -> String = csvRow) -> String {
        "id,n,text\n" + (1...count).map(row).joined(separator: "\n") + "\n"
    }

    private static func csvRow(_ number: Int) -> String { "r\(number),\(number),\"\(padding)\"" }

    private static let ids = (1...count).map { "r\($0)\n" }.joined()

    /// `tsync insert ARGUMENTS` with `stdin` through a pipe (`cat |`), not a file.
    private func piped(_ sandbox: TSyncSandbox, _ arguments: [String], stdin: String) async throws -> TSyncResult {
        try await TSyncProcess.run(
            ["-c", #"cat | "$0" insert "$@""#, TSyncBinary.path] + arguments, in: sandbox.path, stdin: stdin,
            executable: "/bin/sh")
    }

    @Test func aLargeInputIsInsertedWhole() async throws {
        let sandbox = try await TSyncSandbox()
        #expect(try await sandbox.ok(["insert", "file"], stdin: Self.ndjson()) == Self.ids)
        #expect(try await sandbox.ok(["insert", "csv", "--csv"], stdin: Self.csv()) == Self.ids)
        let array = "[" + (1...Self.count).map(Self.record).joined(separator: ",\n") + "]"
        let result = try await piped(sandbox, ["array"], stdin: array)
        #expect(result.status == 0 && result.stdout == Self.ids, "\(result)")
        let porcelain = try await sandbox.ok(["status", "--porcelain"]).split(separator: "\n")
        for table in ["file", "csv", "array"] {
            #expect(porcelain.filter { $0.hasPrefix("A\t\(table)\t") }.count == Self.count, "\(table)")
            let last = try await sandbox.ok(["get", table, "r\(Self.count)", "--json"])
            #expect(last.contains(#""n":\#(Self.count)"#) && last.contains(Self.padding), "\(table): \(last)")
        }
        #expect(try await sandbox.ok(["log"]).contains("insert"))
    }

    @Test func aBadRecordLateInALargeInputInsertsNothing() async throws {
        let sandbox = try await TSyncSandbox()
        try await sandbox.ok(["insert", "todo", #"{"id": "a"}"#])
        let before = try await sandbox.snapshot()
        let badJSON = Self.ndjson { $0 == Self.count ? #"{"id": "bad", "n": }"# : Self.record($0) }
        let duplicate = Self.ndjson { $0 == Self.count - 1 ? #"{"id": "a"}"# : Self.record($0) }
        let wideRow = Self.csv { $0 == Self.count ? "bad,1,x,extra" : Self.csvRow($0) }
        let cases: [(arguments: [String], stdin: String, message: String)] = [
            (["todo"], badJSON, "invalid JSON at line \(Self.count), column 20: unexpected '}', expected a value"),
            (
                ["todo"], duplicate,
                "record \(Self.count - 1): todo/a already exists (its insert is pending); use `tsync update` to change it, or `tsync upsert` in a script that may run twice"
            ),
            (
                ["todo", "--csv"], wideRow,
                "invalid CSV at line \(Self.count + 1): the row has 4 cells, more than the 3 columns of the header"
            ),
        ]
        for (arguments, stdin, message) in cases {
            for result in [try await sandbox.run(["insert"] + arguments, stdin: stdin), try await piped(sandbox, arguments, stdin: stdin)] {
                #expect(result.status == 65, "\(arguments): \(result)")
                #expect(result.stderr == "tsync: error: \(message)\n", "\(arguments): \(result)")
                #expect(result.stdout.isEmpty, "\(arguments): \(result)")
            }
        }
        #expect(try await sandbox.snapshot() == before, "a failed insert changed the store")
    }
}
