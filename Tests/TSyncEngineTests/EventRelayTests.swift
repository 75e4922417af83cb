import Synchronization
import Testing
import TSyncModel

@testable import TSyncEngine

/// `tsync watch` prints a page's events while it writes the next page (`EventRelay`): the
/// batches must still come out whole and in the order they were sent, and no more than one may
/// be on its way, or a slow terminal would let a catch-up pile up its events in memory.
@Suite struct EventRelayTests {
    /// Batches delivered, and how many deliveries ran at once at most.
    final class Sink: Sendable {
        private let state = Mutex((batches: [[String]](), running: 0, mostAtOnce: 0))

        func deliver(_ events: [LiveEvent]) async {
            state.withLock {
                $0.running += 1
                $0.mostAtOnce = max($0.mostAtOnce, $0.running)
            }
            // A slow reader of stdout: long enough for the next send to arrive meanwhile.
            try? await Task.sleep(for: .milliseconds(5))
            state.withLock {
                $0.batches.append(events.map { $0.id ?? "" })
                $0.running -= 1
            }
        }

        var batches: [[String]] { state.withLock { $0.batches } }
        var mostAtOnce: Int { state.withLock { $0.mostAtOnce } }
    }

    static func batch(_ n: Int) -> [LiveEvent] {
        (0..<3).map { LiveEvent(.pulled, table: "todo", id: "\(n).\($0)") }
    }

    @Test func batchesArriveWholeAndInOrderOneAtATime() async {
        let sink = Sink()
        let relay = EventRelay { await sink.deliver($0) }
        for n in 0..<20 { await relay.send(Self.batch(n)) }
        await relay.drain()
        #expect(sink.batches == (0..<20).map { n in (0..<3).map { "\(n).\($0)" } })
        #expect(sink.mostAtOnce == 1)
    }

    @Test func sendReturnsBeforeItsBatchIsOutButNotBeforeTheOneBefore() async {
        // Deliveries that end only when the test says so.
        let (releases, release) = AsyncStream.makeStream(of: Void.self)
        let delivered = Mutex(0)
        let relay = EventRelay { _ in
            var waiting = releases.makeAsyncIterator()
            _ = await waiting.next()
            delivered.withLock { $0 += 1 }
        }
        await relay.send(Self.batch(0))
        // The first batch is on its way, not out: the sender went on at once.
        #expect(delivered.withLock { $0 } == 0)
        let second = Task { await relay.send(Self.batch(1)) }
        release.yield()
        await second.value
        // The second send returned only once the first batch was out.
        #expect(delivered.withLock { $0 } == 1)
        release.yield()
        await relay.drain()
        #expect(delivered.withLock { $0 } == 2)
    }

    @Test func batchesSentFromSeveralTasksAreEachWhole() async {
        let sink = Sink()
        let relay = EventRelay { await sink.deliver($0) }
        await withTaskGroup(of: Void.self) { group in
            for n in 0..<8 { group.addTask { await relay.send(Self.batch(n)) } }
        }
        await relay.drain()
        let batches = sink.batches
        #expect(batches.count == 8)
        for batch in batches {
            let n = batch.first.map { String($0.prefix { $0 != "." }) } ?? ""
            #expect(batch == (0..<3).map { "\(n).\($0)" })
        }
        #expect(Set(batches.compactMap(\.first)).count == 8)
        #expect(sink.mostAtOnce == 1)
    }
}
