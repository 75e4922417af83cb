import Foundation
import Testing

@testable import TSyncQuery

/// Runs the PostgreSQL renderings of every SQLite execution case against a real server, through
/// `psql`, and expects the same ids: the two backends must agree.
///
/// Runs only when `TSYNC_TEST_POSTGRES_URL` holds a libpq connection URI, e.g.
/// `postgresql://postgres@/postgres?host=/tmp/pg` (a throwaway server: the test uses a temporary
/// table only).
@Suite(.enabled(if: PostgresScript.url != nil, "set TSYNC_TEST_POSTGRES_URL to run against PostgreSQL"))
struct PostgresExecutionTests {
    static let renderer = SQLRenderer(
        schema: SQLSchema(dialect: .postgres, bodyColumn: "body", systemColumns: SQLSchema.snakeCaseSystemColumns))

    @Test func sameIDsAsSQLite() throws {
        let cases =
            SQLiteExecutionTests.comparisons + SQLiteExecutionTests.logic + SQLiteExecutionTests.arithmetic
            + SQLiteExecutionTests.functions + SQLiteExecutionTests.systemProperties
        var script = PostgresScript.setup
        for (index, test) in cases.enumerated() {
            let fragment = try Self.renderer.whereClause(try ODataParser.parseFilter(test.filter))
            script += "PREPARE q\(index) AS SELECT coalesce(string_agg(id, ',' ORDER BY id), '') FROM t WHERE \(fragment.sql);\n"
            script += "EXECUTE q\(index)\(PostgresScript.arguments(fragment.arguments));\n"
        }
        let lines = try PostgresScript.run(script)
        try #require(lines.count == cases.count, "\(lines)")
        for (test, line) in zip(cases, lines) {
            let ids = Set(line.split(separator: ",").map(String.init))
            #expect(ids == test.expected, "\(test.filter)")
        }
    }

    @Test func orderBy() throws {
        let orders: [(String, String?, [String])] = [
            ("updatedAt desc", nil, ["h", "g", "f", "d", "a", "b", "c", "e"]),
            ("updatedAt, id desc", nil, ["e", "c", "b", "a", "d", "f", "g", "h"]),
            ("price", "n ge 0 and price lt 100", ["d", "a", "e", "c"]),
            // jsonb orders strings before numbers (SQLite: after); both put missing values first.
            ("n", nil, ["g", "f", "b", "d", "a", "e", "c", "h"]),
            ("text", "startswith(text, 'b') or startswith(text, 'B') or startswith(text, ' ')", ["d", "a", "b"]),
        ]
        var script = PostgresScript.setup
        for (index, (orderBy, filter, _)) in orders.enumerated() {
            var arguments: [SQLValue] = []
            var sql = "SELECT coalesce(string_agg(id, ',' ORDER BY n), '') FROM (SELECT id, row_number() OVER (ORDER BY "
            let order = try Self.renderer.orderBy(try ODataParser.parseOrderBy(orderBy))
            arguments += order.arguments
            sql += order.sql + ") AS n FROM t"
            if let filter {
                let fragment = try Self.renderer.whereClause(
                    try ODataParser.parseFilter(filter), firstArgumentIndex: arguments.count + 1)
                sql += " WHERE " + fragment.sql
                arguments += fragment.arguments
            }
            sql += ") AS ordered"
            script += "PREPARE o\(index) AS \(sql);\nEXECUTE o\(index)\(PostgresScript.arguments(arguments));\n"
        }
        let lines = try PostgresScript.run(script)
        try #require(lines.count == orders.count, "\(lines)")
        for ((orderBy, _, expected), line) in zip(orders, lines) {
            #expect(line.split(separator: ",").map(String.init) == expected, "\(orderBy)")
        }
    }
}

enum PostgresScript {
    static let url = ProcessInfo.processInfo.environment["TSYNC_TEST_POSTGRES_URL"]

    /// The records of `SQLiteTable`, in a temporary table of the layout `SQLSchema` describes.
    static var setup: String {
        var script = """
            CREATE TEMPORARY TABLE t (id text PRIMARY KEY, created_at text, updated_at text, version text, \
            deleted boolean, body jsonb);

            """
        for (id, created, updated, version, deleted, body) in SQLiteTable.records {
            let values = [
                literal(.text(id)), literal(.text(created)), literal(.text(updated)), literal(.text(version)),
                deleted == 1 ? "true" : "false", literal(.text(body)) + "::jsonb",
            ]
            script += "INSERT INTO t VALUES (\(values.joined(separator: ", ")));\n"
        }
        return script
    }

    static func literal(_ value: SQLValue) -> String {
        switch value {
        case .null: "NULL"
        case .bool(let flag): flag ? "true" : "false"
        case .int(let number): String(number)
        case .double(let number): "\(number)"
        case .text(let text): "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
        }
    }

    static func arguments(_ values: [SQLValue]) -> String {
        values.isEmpty ? "" : "(" + values.map(literal).joined(separator: ", ") + ")"
    }

    /// Runs the script in one psql session; returns the output lines.
    static func run(_ script: String) throws -> [String] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["psql", url ?? "", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"]
        let input = Pipe()
        let output = Pipe()
        let errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        input.fileHandleForWriting.write(Data(script.utf8))
        try input.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(errorText)")
        #expect(errorText.isEmpty, "\(errorText)")
        var lines = String(decoding: data, as: UTF8.self).components(separatedBy: "\n")
        if lines.last == "" { lines.removeLast() }
        return lines
    }
}
