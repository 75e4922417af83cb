import Testing
import TSyncModel

@testable import TSyncServer

@Suite struct PostgresURLTests {
    @Test func parsesEveryPart() throws {
        let url = try PostgresURL(parsing: "postgres://alice:s3cret@db.example.com:6543/sync?sslmode=require", environment: [:])
        #expect(url.host == "db.example.com")
        #expect(url.port == 6543)
        #expect(url.username == "alice")
        #expect(url.password == "s3cret")
        #expect(url.database == "sync")
        #expect(url.tlsMode == .require)
    }

    @Test func defaultsPortAndTLSAndTakesThePasswordFromTheEnvironment() throws {
        let url = try PostgresURL(parsing: "postgresql://bob@127.0.0.1/tsync", environment: ["PGPASSWORD": "from-env"])
        #expect(url.port == 5432)
        #expect(url.tlsMode == .prefer)
        #expect(url.password == "from-env")
        let explicit = try PostgresURL(parsing: "postgres://bob:given@127.0.0.1/tsync", environment: ["PGPASSWORD": "from-env"])
        #expect(explicit.password == "given")
        let none = try PostgresURL(parsing: "postgres://bob@127.0.0.1/tsync", environment: [:])
        #expect(none.password == nil)
    }

    @Test func decodesPercentEscapes() throws {
        let url = try PostgresURL(parsing: "postgres://us%40er:p%3Aa%2Fss@localhost/my%20db", environment: [:])
        #expect(url.username == "us@er")
        #expect(url.password == "p:a/ss")
        #expect(url.database == "my db")
    }

    @Test func aDirectoryHostIsAUnixSocket() throws {
        let url = try PostgresURL(parsing: "postgres://tsync@%2Fvar%2Frun%2Fpostgresql/sync", environment: [:])
        #expect(url.host == "/var/run/postgresql")
        #expect(url.unixSocketPath == "/var/run/postgresql/.s.PGSQL.5432")
        #expect(url.description == "postgres://tsync@%2Fvar%2Frun%2Fpostgresql:5432/sync")
        #expect(try PostgresURL(parsing: "postgres://tsync@127.0.0.1/sync", environment: [:]).unixSocketPath == nil)
    }

    @Test func neverShowsThePassword() throws {
        let url = try PostgresURL(parsing: "postgres://alice:s3cret@db:5433/sync", environment: [:])
        #expect(url.description == "postgres://alice@db:5433/sync")
        do {
            _ = try PostgresURL(parsing: "postgres://alice:s3cret@db:5433/", environment: [:])
            Issue.record("a URL without a database was accepted")
        } catch {
            #expect(error.kind == .usage)
            #expect(!error.message.contains("s3cret"))
        }
        #expect(PostgresURL.redacted("postgres://alice:s3cret@db/x") == "postgres://alice:***@db/x")
    }

    @Test(arguments: [
        "postgres://127.0.0.1/tsync",  // no user
        "postgres://alice@/tsync",  // no host
        "postgres://alice@127.0.0.1",  // no database
        "postgres://alice@127.0.0.1/a/b",  // a path, not a database name
        "postgres://alice@127.0.0.1/tsync?sslmode=sometimes",
        "postgres://alice@127.0.0.1/tsync?pool=3",
        "mysql://alice@127.0.0.1/tsync",
    ])
    func refusesIncompleteOrUnknownURLs(_ text: String) {
        #expect(throws: TSyncError.self) { try PostgresURL(parsing: text, environment: [:]) }
    }
}
