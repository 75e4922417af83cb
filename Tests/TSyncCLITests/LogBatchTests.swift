import Foundation
import Testing

@testable import TSyncCLI

/// The server's request lines are written in batches (`LogBatch`): none lost, none cut, each
/// writer's in its order, and a line written at once after every line added before it.
struct LogBatchTests {
    /// A batch over a file of its own; `text` reads what reached the file.
    private struct Target {
        let path: String
        let descriptor: Int32
        let batch: LogBatch

        /// `delay` long enough by default that no timer writes while a test looks.
        init(delay: DispatchTimeInterval = .seconds(3600)) throws {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("logbatch-\(UUID().uuidString)").path
            descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o600)
            try #require(descriptor >= 0)
            batch = LogBatch(descriptor: descriptor, delay: delay)
        }

        var text: String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

        func close() {
            _ = Foundation.close(descriptor)
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    @Test func linesFromManyTasksAreAllWrittenWholeAndInEachTasksOrder() async throws {
        let target = try Target()
        defer { target.close() }
        let tasks = 8
        let lines = 2_000
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    for line in 0..<lines {
                        // Some long enough to fill the buffer many times over.
                        target.batch.add("task \(task) line \(line) " + String(repeating: "x", count: line % 7 * 40))
                    }
                }
            }
        }
        target.batch.flush()
        let written = target.text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(written.last == "")
        var next = [Int](repeating: 0, count: tasks)
        for line in written.dropLast() {
            let words = line.split(separator: " ")
            let task = try #require(Int(words[1]))
            let number = try #require(Int(words[3]))
            #expect(number == next[task], "\(line)")
            #expect(words.count == (number % 7 == 0 ? 4 : 5) && (words.count == 4 || words[4].count == number % 7 * 40))
            next[task] = number + 1
        }
        #expect(next == [Int](repeating: lines, count: tasks))
    }

    @Test func aLineWrittenNowFollowsTheLinesAddedBeforeIt() throws {
        let target = try Target()
        defer { target.close() }
        target.batch.add("first")
        target.batch.add("second")
        #expect(target.text == "", "added lines wait for their batch")
        target.batch.writeNow("now")
        #expect(target.text == "first\nsecond\nnow\n")
    }

    @Test func aFullBatchIsWrittenAtOnce() throws {
        let target = try Target()
        defer { target.close() }
        let line = String(repeating: "y", count: 1023)
        for _ in 0..<(LogBatch.capacity / 1024 - 1) { target.batch.add(line) }
        #expect(target.text == "")
        target.batch.add(line)
        #expect(target.text.utf8.count == LogBatch.capacity)
    }

    @Test func theTimerWritesWithoutAFlush() async throws {
        let target = try Target(delay: .milliseconds(10))
        defer { target.close() }
        target.batch.add("late")
        #expect(try await eventuallyWritten(target, "late\n"), "the timer writes what is left")
        target.batch.add("later")
        #expect(try await eventuallyWritten(target, "late\nlater\n"), "and again for the next line")
    }

    /// Whether the file holds `text` within 30 s, looking every 5 ms.
    private func eventuallyWritten(_ target: Target, _ text: String) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while target.text != text, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        return target.text == text
    }
}
