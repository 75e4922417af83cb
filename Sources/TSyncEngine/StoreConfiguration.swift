import Foundation
import TSyncModel

/// The store's settings, `.tsync/config.json`: a JSON object so people can read and edit it.
///
/// Keys this version does not know are kept on save, so an older tsync never drops a newer one's
/// settings.
public struct StoreConfiguration: Sendable, Equatable {
    private var object: [String: JSONValue]

    public init() { object = [:] }

    /// The server URL that push and pull talk to.
    public var remote: String? {
        get { object["remote"]?.stringValue }
        set { object["remote"] = newValue.map(JSONValue.string) }
    }

    /// Any other setting, by key (for later layers; `remote` has its own accessor).
    public subscript(key: String) -> JSONValue? {
        get { object[key] }
        set { object[key] = newValue }
    }

    public static func load(from path: String) throws(TSyncError) -> StoreConfiguration {
        guard let data = FileManager.default.contents(atPath: path) else {
            return StoreConfiguration()
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes: Array(data))
        } catch {
            throw .failure("cannot read \(path): \(error.message); fix or delete the file")
        }
        guard let object = value.objectValue else {
            throw .failure("cannot read \(path): it holds \(value.kindName), expected an object; fix or delete the file")
        }
        var configuration = StoreConfiguration()
        configuration.object = object
        return configuration
    }

    public func save(to path: String) throws(TSyncError) {
        let text = JSONSerializer.string(.object(object), pretty: true) + "\n"
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw .failure("cannot write \(path): \(error.localizedDescription)")
        }
    }

    /// Checks a remote URL before it is saved: `http` or `https`, with a host.
    public static func validateRemote(_ text: String) throws(TSyncError) {
        guard let components = URLComponents(string: text),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = components.host, !host.isEmpty
        else {
            throw .usage(
                "invalid remote URL \(Identifiers.quoted(text)): expected http://HOST[:PORT][/PATH] or https://…")
        }
    }
}
