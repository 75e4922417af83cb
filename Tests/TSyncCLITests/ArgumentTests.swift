import ArgumentParser
import Testing
import TSyncModel

@testable import TSyncCLI
@testable import TSyncEngine

/// The values of flags read in-process: durations (`--token-ttl 30d`) and points in time
/// (`--at 2h`), and the command line as the log keeps it.
@Suite struct ArgumentTests {
    @Test(arguments: [("90s", 90), ("15m", 900), ("12h", 43_200), ("30d", 2_592_000), ("86400", 86_400), ("0s", 0), ("-2s", -2)])
    func aDurationIsANumberAndAUnit(text: String, seconds: Int) throws {
        #expect(try WrittenDuration.argument(text).seconds == seconds)
    }

    @Test(arguments: ["1.5h", "", "h", "10 m", "+5s", "5ms", "99999999999999999999d", "1w"])
    func anythingElseIsRefusedNamingTheForm(text: String) {
        #expect(throws: (any Error).self, "\(text)") { try WrittenDuration.argument(text) }
        do {
            _ = try WrittenDuration.argument(text)
        } catch {
            #expect("\(error)".contains("give a number and a unit, e.g. 90s, 15m, 12h or 30d"), "\(text): \(error)")
        }
    }

    /// ArgumentParser names a command without a configured name from its type, by reflection,
    /// for every command in the tree at every start of tsync, whichever runs: a millisecond or
    /// more of each command's start.
    @Test func everyCommandIsNamedInItsConfiguration() {
        var unnamed: [String] = []
        var commands: [any ParsableCommand.Type] = [TSync.self]
        while let command = commands.popLast() {
            if command.configuration.commandName == nil { unnamed.append("\(command)") }
            commands += command.configuration.subcommands
        }
        #expect(unnamed == [])
    }

    @Test func aPointInTimeIsAnInstantOrADurationBeforeNow() throws {
        let now = try #require(Timestamp(iso8601: "2026-11-28T13:05:00Z"))
        let minutes = 60_000 as Int64
        let cases: [(String, Int64)] = [
            ("10m", 10 * minutes), ("-10m", 10 * minutes), ("10m ago", 10 * minutes), ("10M AGO", 10 * minutes),
            ("90s", 90_000), ("2h", 120 * minutes), ("3d", 3 * 1440 * minutes), ("1w", 7 * 1440 * minutes), ("0s", 0),
        ]
        for (text, before) in cases {
            #expect(PointInTime.parse(text, now: now)?.millisecondsSinceEpoch == now.millisecondsSinceEpoch - before, "\(text)")
        }
        #expect(PointInTime.parse("2026-11-28T12:00:00Z", now: now)?.iso8601 == "2026-11-28T12:00:00.000Z")
        #expect(PointInTime.parse("2026-11-28T13:00:00+01:00", now: now)?.iso8601 == "2026-11-28T12:00:00.000Z")
        for text in ["", "ago", "10", "10y", "1.5h", "x m", "-", "99999999999999999w", "60000w"] {
            #expect(PointInTime.parse(text, now: now) == nil, "\(text)")
        }
        #expect(PointInTime(argument: "nonsense") == nil)
        #expect(PointInTime.describe(.version("v3")) == "version v3")
        #expect(PointInTime.describe(.time(now)) == now.iso8601)
        if case .version(let version) = PointInTime.point(at: PointInTime(argument: "1h"), version: "v1") {
            #expect(version == "v1", "a version wins over a time")
        } else {
            Issue.record("a version given was not the point")
        }
    }

    /// The log keeps the command line without secrets: a URL's credentials, the value of any
    /// option named like a password, token or secret, and a huge argument cut.
    @Test func theLogKeepsNoSecretAndNothingHuge() {
        let record = "{\"text\": \"" + String(repeating: "x", count: 300) + "\"}"
        let shown = CommandRun.redacted([
            "tsync", "remote", "https://alice:hunter2@example.com/", "--api-token", "abc", "--client-secret=xyz", "--password-stdin",
            "insert", record, "--json",
        ])
        #expect(
            shown.prefix(7) == [
                "remote", "https://example.com/", "--api-token", "***", "--client-secret=***", "--password-stdin", "insert",
            ])
        #expect(shown[7].hasPrefix("{\"text\": \"xxx") && shown[7].hasSuffix("…(\(record.utf8.count) bytes)"), "\(shown[7])")
        #expect(shown[8] == "--json")
        #expect(!shown.joined().contains("hunter2") && !shown.joined().contains("abc") && !shown.joined().contains("xyz"))
    }
}
