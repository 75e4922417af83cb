import Testing

@testable import TSyncServer

/// The queue of reads waiting for a database slot (`ShareQueue`, docs/DESIGN.md §10.1) starts
/// waiters in the order the general rule gives: of the clients under their share, the one
/// running fewest, its earliest waiter; the earliest of all when clients tie.
@Suite struct ShareQueueTests {
    /// xorshift64*: the same cases on every run, so a failure repeats.
    struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return state &* 2_685_821_657_736_338_717
        }
    }

    /// The general rule, as a walk over every waiter in the order they came.
    struct Walk {
        var waiting: [(id: UInt64, client: String)] = []

        mutating func next(running: [String: Int], perClient: Int) -> (client: String, id: UInt64)? {
            var best: Int?
            for (index, waiter) in waiting.enumerated() where running[waiter.client, default: 0] < perClient {
                if let chosen = best, running[waiting[chosen].client, default: 0] <= running[waiter.client, default: 0] { continue }
                best = index
            }
            guard let best else { return nil }
            let waiter = waiting.remove(at: best)
            return (waiter.client, waiter.id)
        }

        mutating func remove(id: UInt64) -> UInt64? {
            guard let index = waiting.firstIndex(where: { $0.id == id }) else { return nil }
            return waiting.remove(at: index).id
        }
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func startsWhatTheWalkOverEveryWaiterStarts(_ seed: UInt64) {
        var random = Seeded(state: seed &* 0x9E37_79B9_7F4A_7C15 | 1)
        var queue = ShareQueue<UInt64>()
        var walk = Walk()
        var running: [String: Int] = [:]
        var nextID: UInt64 = 0
        // Few clients, so that one client's queue grows long (past the point where its front is dropped).
        let clients = ["a", "b", "c", "d"]
        for _ in 0..<4000 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5:
                nextID += 1
                let client = clients[Int.random(in: 0..<(Int.random(in: 0..<3, using: &random) == 0 ? 4 : 1), using: &random)]
                queue.append(id: nextID, client: client, nextID)
                walk.waiting.append((nextID, client))
            case 5:
                // A cancelled wait: a waiter that may or may not still be there.
                let id = UInt64.random(in: 1...max(1, nextID), using: &random)
                let client = walk.waiting.first { $0.id == id }?.client ?? clients[Int.random(in: 0..<4, using: &random)]
                #expect(queue.remove(id: id, client: client) == walk.remove(id: id))
            case 6:
                // A read ends.
                if let client = running.keys.sorted().randomElement(using: &random) {
                    running[client, default: 1] -= 1
                    if running[client] == 0 { running[client] = nil }
                }
            default:
                let perClient = Int.random(in: 1...3, using: &random)
                let expected = walk.next(running: running, perClient: perClient)
                let got = queue.next(running: running, perClient: perClient)
                #expect(got?.client == expected?.client && got?.element == expected?.id, "expected \(String(describing: expected))")
                if let client = got?.client { running[client, default: 0] += 1 }
            }
            #expect(queue.count == walk.waiting.count)
            #expect(queue.isEmpty == walk.waiting.isEmpty)
        }
    }
}
