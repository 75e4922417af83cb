#if os(Linux)
    import Foundation
    import Glibc
    import Testing

    /// A pull writes its pages to the store and mostly nowhere else. Each page is one transaction of
    /// many statements, and SQLite keeps what each statement would need to undo alone (the pages it
    /// changes that the statements before it wrote); past 64 KiB, four of the store's pages, it
    /// kept that in a temporary file: every page of a clone created, wrote and deleted one. The
    /// store keeps up to 127 KiB in memory (`SQLiteSettings`: a larger piece cannot be spilled),
    /// which some pages' statements still pass.
    @Suite struct TemporaryFileTests {
        @Test func aCloneCreatesFewerTemporaryFilesThanPages() async throws {
            let server = try await ServeFixture()
            let writer = try await TSyncSandbox(remote: server.url)
            // Long ids and bodies: each statement of a page then rewrites the last leaf and the
            // root of both the table and its index, as a clone of a large table does.
            let filler = String(repeating: "x", count: 400)
            let items = (0..<3_000).map {
                #"{"id": "record-\#($0)-\#(String(repeating: "i", count: 80))", "text": "\#(filler)", "n": \#($0)}"#
            }
            try await writer.ok(["insert", "rows", "-q"], stdin: items.joined(separator: "\n"))
            try await writer.ok(["push", "-q"])

            let reader = try await TSyncSandbox(remote: server.url)
            let temporary = try reader.directory.subdirectory("sqlite-temporary")
            let created = try await fileCreations(in: temporary) {
                let pull = try await reader.run(["pull", "rows", "--query-id", "all", "--json"], environment: ["SQLITE_TMPDIR": temporary])
                #expect(pull.status == 0, "\(pull)")
                #expect(pull.stdout.contains(#""received":3000"#), "\(pull)")
            }
            let pages = 3  // 3,000 records, 1,000 a page (the server's largest)
            #expect(created.count < pages, "the pull created a temporary file for each page: \(created)")
        }
    }

    /// The names of the files created in a directory while `body` runs (inotify: SQLite deletes
    /// a temporary file as soon as it opens it, so none is left to find afterwards).
    private func fileCreations(in directory: String, _ body: () async throws -> Void) async throws -> [String] {
        let watch = inotify_init1(Int32(IN_NONBLOCK))
        try #require(watch >= 0, "inotify_init1: \(String(cString: strerror(errno)))")
        defer { close(watch) }
        try #require(inotify_add_watch(watch, directory, UInt32(IN_CREATE)) >= 0, "inotify_add_watch: \(String(cString: strerror(errno)))")
        try await body()
        var names: [String] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(watch, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let (length, name) = buffer.withUnsafeBytes { bytes -> (Int, String) in
                    let event = bytes.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    let start = offset + MemoryLayout<inotify_event>.size
                    let name = bytes[start..<start + Int(event.len)].prefix { $0 != 0 }
                    return (Int(event.len), String(decoding: name, as: UTF8.self))
                }
                names.append(name)
                offset += MemoryLayout<inotify_event>.size + length
            }
        }
        return names
    }
#endif
