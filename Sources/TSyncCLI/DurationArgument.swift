import ArgumentParser
import TSyncModel

extension WrittenDuration {
    /// A duration flag's value (`serve --token-ttl 30d`, `user token --ttl 12h`, serve's
    /// timeouts), read in `WrittenDuration`'s one form; the error says what the form is.
    static func argument(_ text: String) throws -> WrittenDuration {
        guard let duration = WrittenDuration(text) else { throw ValidationError("give \(form)") }
        return duration
    }
}
