import Hummingbird
import HummingbirdCore
import HummingbirdTesting
import NIOCore
import Testing

@testable import TSyncServer

/// A connection's requests are answered on its event loop (`ConnectionExecutor`, docs/DESIGN.md
/// §10), where NIO reads them and writes their answers; a write still runs on threads of its own
/// at high priority (`aheadOfReads`, §8.1), not on the loop its connection shares with others.
@Suite struct ConnectionExecutorTests {
    @Test func aReadIsAnsweredOnItsConnectionsLoopAndAWriteIsNot() async throws {
        let router = Router(context: ServerRequestContext.self)
        router.get("read") { _, context in Self.answer(context.channel.eventLoop.inEventLoop) }
        router.post(
            "write",
            use: aheadOfReads { _, context in
                Self.answer(context.channel.eventLoop.inEventLoop, priority: Task.currentPriority)
            })
        // The part of a read after a wait (the general way: GRDB's readers, PostgreSQL) comes
        // back to the loop too, and so do the child tasks of its deadline (`QueryDeadline`).
        router.get("waited") { _, context in
            let channel = context.channel
            let inner = try await QueryDeadline.run(seconds: 60, channel: channel) {
                try await Task.sleep(for: .milliseconds(5))
                return channel.eventLoop.inEventLoop
            }
            return Self.answer(inner && channel.eventLoop.inEventLoop)
        }
        let limits = ConnectionLimits(maximumConnections: 64, headerTimeout: .seconds(30), idleTimeout: .seconds(30))
        let application = Application(
            router: router,
            server: HTTPServerBuilder { responder in GuardedHTTP1Channel(responder: responder, limits: limits) },
            configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await application.test(.live) { client in
            for _ in 0..<20 {
                let read = try await client.execute(uri: "/read", method: .get) { String(buffer: $0.body) }
                #expect(read == "loop")
                let waited = try await client.execute(uri: "/waited", method: .get) { String(buffer: $0.body) }
                #expect(waited == "loop")
                let write = try await client.execute(uri: "/write", method: .post) { String(buffer: $0.body) }
                #expect(write == "elsewhere \(TaskPriority.high)")
            }
        }
    }

    /// A connection that holds a read leaves its loop for good (`leaveLoop`, as the live route
    /// does): a commit resumes its watchers together, and on the loops a write's answer waited
    /// behind them. Its other connections' requests stay on their loops.
    @Test func aConnectionThatHoldsAReadLeavesItsLoop() async throws {
        let router = Router(context: ServerRequestContext.self)
        router.get("read") { _, context in Self.answer(context.channel.eventLoop.inEventLoop) }
        router.get("hold") { _, context in
            ConnectionExecutor.current?.leaveLoop()
            try await Task.sleep(for: .milliseconds(5))
            return Self.answer(context.channel.eventLoop.inEventLoop)
        }
        let limits = ConnectionLimits(maximumConnections: 64, headerTimeout: .seconds(30), idleTimeout: .seconds(30))
        let application = Application(
            router: router,
            server: HTTPServerBuilder { responder in GuardedHTTP1Channel(responder: responder, limits: limits) },
            configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await application.test(.live) { client in
            var answers: [String] = []
            for path in ["/read", "/hold", "/read"] {
                answers.append(try await client.execute(uri: path, method: .get) { String(buffer: $0.body) })
            }
            #expect(answers == ["loop", "elsewhere", "elsewhere"])
        }
        try await application.test(.live) { client in
            let read = try await client.execute(uri: "/read", method: .get) { String(buffer: $0.body) }
            #expect(read == "loop", "a new connection")
        }
    }

    private static func answer(_ onLoop: Bool, priority: TaskPriority? = nil) -> Response {
        let text = (onLoop ? "loop" : "elsewhere") + (priority.map { " \($0)" } ?? "")
        return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}
