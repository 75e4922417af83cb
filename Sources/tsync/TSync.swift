// The root command. The client helper writes the full version (every subcommand); the lead merges
// the two. This one lists only the server commands.
import ArgumentParser
import Foundation
import TSyncModel

@main
struct TSync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tsync",
        abstract: "Offline-first record sync from the shell, and the server it syncs with.",
        subcommands: [ServeCommand.self, UserCommand.self]
    )

    /// Runs the command and maps a `TSyncError` to the exit codes of DESIGN §3, in this one place.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let error as TSyncError {
            FileHandle.standardError.write(Data("tsync: \(error.message)\n".utf8))
            Foundation.exit(error.kind.exitCode)
        } catch {
            exit(withError: error)
        }
    }
}

extension TSyncError.Kind {
    /// DESIGN §3: 0 ok, 1 failure, 2 operations failed, 3 unreachable, 4 auth, 64 usage, 65 bad input.
    var exitCode: Int32 {
        switch self {
        case .failure: 1
        case .operationsFailed: 2
        case .unreachable: 3
        case .unauthorized: 4
        case .usage: 64
        case .invalidInput: 65
        }
    }
}
