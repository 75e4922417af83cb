#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
import Dispatch
import TSyncEngine

/// SIGINT and SIGTERM during a long push: the first asks the push to stop at its next safe point
/// (answers in flight are awaited and recorded, the rest stays queued, and the command reports
/// what it did); a second one ends the process at once, which loses nothing either, since every
/// step of a push is one transaction of the store.
final class Interrupts: @unchecked Sendable {  // the sources are only kept alive
    let stopRequest = StopRequest()
    private var sources: [any DispatchSourceSignal] = []

    init() {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [stopRequest] in
                if stopRequest.isStopped { _exit(128 + number) }
                stopRequest.stop(signal: number)
            }
            source.resume()
            sources.append(source)
        }
    }

    /// The exit code of a command stopped by a signal: 128 + its number (130 for SIGINT, 143 for
    /// SIGTERM), as shells report it.
    var exitCode: Int32? { stopRequest.stopSignal.map { 128 + $0 } }
}
