import Foundation
import TSyncModel

/// The store's settings, `.tsync/config.json`: a JSON object so people can read and edit it.
///
/// Keys this version does not know are kept on save, so an older tsync never drops a newer one's
/// settings. Known keys are read in any case and saved under their canonical names. `tsync config` reads and writes it through `ConfigKey`; `remote.url` is stored as
/// `remote`, the name the first versions used.
package struct StoreConfiguration: Sendable, Equatable {
    private var object: [String: JSONValue]

    /// No settings: every key takes its default.
    package init() { object = [:] }

    /// The server URL that push and pull talk to.
    package var remote: String? {
        get { object["remote"]?.stringValue }
        set { object["remote"] = newValue.map(JSONValue.string) }
    }

    /// The value of a `tsync config` key, as text; nil when unset.
    package func value(_ key: ConfigKey) -> String? {
        switch object[key.storageName] {
        case .string(let text)?: text
        case .int(let number)?: String(number)
        case nil, .null?: nil
        case let other?: JSONSerializer.string(other)
        }
    }

    /// Sets a `tsync config` key after checking its value (exit 64 with the valid values).
    package mutating func set(_ key: ConfigKey, to text: String) throws(TSyncError) {
        object[key.storageName] = try key.check(text)
    }

    /// Removes a key; false when it was not set.
    @discardableResult
    package mutating func unset(_ key: ConfigKey) -> Bool {
        object.removeValue(forKey: key.storageName) != nil
    }

    /// Every key that is set, by name (`tsync config --list`), known keys only: a key this
    /// version does not know is kept in the file but not shown as one it understands.
    package var entries: [(key: ConfigKey, value: String)] {
        object.keys.sorted().compactMap { name in
            guard let key = ConfigKey(storageName: name), let value = value(key) else { return nil }
            return (key, value)
        }
    }

    /// The conflict settings, checked: a hand-edited value no policy has is an error, not ignored.
    /// The `push.*` and `table.NAME.*` settings. `preferencesOnly` reads the `prefer` ones alone,
    /// for a command whose flag names the policy: a bad `onConflict` setting cannot stop it.
    package func policySettings(preferencesOnly: Bool = false) throws(TSyncError) -> PolicySettings {
        var settings = PolicySettings()
        for (key, text) in entries {
            switch key {
            case .pushOnConflict where preferencesOnly, .tableOnConflict where preferencesOnly: break
            case .pushOnConflict: settings.onConflict = try key.parse(text, as: ConflictPolicy.self)
            case .pushPrefer: settings.prefer = try key.parse(text, as: ThreeWayMerge.Side.self)
            case .tableOnConflict(let table):
                settings.tables[table, default: .init()].onConflict = try key.parse(text, as: ConflictPolicy.self)
            case .tablePrefer(let table):
                settings.tables[table, default: .init()].prefer = try key.parse(text, as: ThreeWayMerge.Side.self)
            case .remoteURL, .logMaxEntries, .httpCAFile, .corePager: break
            }
        }
        return settings
    }

    /// `log.maxEntries`: how many entries `tsync log` keeps (the oldest go first).
    package func logMaxEntries() throws(TSyncError) -> Int {
        guard let text = value(.logMaxEntries) else { return Journal.defaultMaxEntries }
        guard let number = Int(text), number >= 1 else {
            throw TSyncError(
                .failure, "the store's setting log.maxEntries is \(Identifiers.quoted(text)), not a whole number of 1 or more",
                remedy: .fixSetting(ConfigKey.logMaxEntries.description))
        }
        return number
    }

    /// Reads `config.json` at `path`; a missing file is no settings, one that is not a JSON object an
    /// error that says to fix or delete it.
    package static func load(from path: String) throws(TSyncError) -> StoreConfiguration {
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
        configuration.object = try canonical(object, path: path)
        return configuration
    }

    /// The file's keys under their canonical names: a hand-edited file may spell them in any case
    /// (`"HTTP.CAFILE"`, `"Log.MaxEntries"`), as git reads its config. Two spellings of one key
    /// are refused rather than one silently winning: the file says two things, and only its
    /// author knows which is meant. Keys this version does not know keep their spelling.
    private static func canonical(_ object: [String: JSONValue], path: String) throws(TSyncError) -> [String: JSONValue] {
        var result: [String: JSONValue] = [:]
        var spellings: [String: String] = [:]
        for name in object.keys.sorted() {
            let key = ConfigKey(storageName: name)?.storageName ?? name
            if let other = spellings[key] {
                let shown = key == "remote" ? "remote.url" : key
                throw .failure(
                    "cannot read \(path): it sets \(shown) twice, as \(Identifiers.quoted(other)) and \(Identifiers.quoted(name)) (keys are case-insensitive); keep one"
                )
            }
            spellings[key] = name
            result[key] = object[name]
        }
        return result
    }

    /// Writes the settings to `path` in one atomic replace, keys this version does not know kept.
    package func save(to path: String) throws(TSyncError) {
        let text = JSONSerializer.string(.object(object), pretty: true) + "\n"
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw .failure("cannot write \(path): \(error.localizedDescription)")
        }
    }

    /// Checks a remote URL before it is saved: `http` or `https`, with a host.
    package static func validateRemote(_ text: String) throws(TSyncError) {
        guard let components = URLComponents(string: text),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = components.host, !host.isEmpty
        else {
            throw .usage(
                "invalid remote URL \(Identifiers.quoted(text)): expected http://HOST[:PORT][/PATH] or https://…")
        }
    }
}

/// A key of `tsync config`, git-style: `section.name`, or `table.NAME.name` for one table.
package enum ConfigKey: Sendable, Hashable, CustomStringConvertible {
    case remoteURL
    case pushOnConflict
    case pushPrefer
    case tableOnConflict(String)
    case tablePrefer(String)
    case logMaxEntries
    /// `http.caFile`: a PEM file of CA certificates trusted for an https remote, besides the
    /// system's (git's `http.sslCAInfo`); stored as an absolute path.
    case httpCAFile
    /// `core.pager`: the pager for long output on a terminal (any shell command; empty turns it off).
    case corePager

    /// The keys, as `tsync config` lists them when refusing one.
    package static let names = [
        "remote.url", "push.onConflict", "push.prefer", "table.NAME.onConflict", "table.NAME.prefer", "log.maxEntries",
        "http.caFile", "core.pager",
    ]

    /// Parses a key; an unknown one is a usage error that lists the valid keys.
    package init(_ text: String) throws(TSyncError) {
        // `remote` is how config.json spells remote.url, not a key of the command line.
        if text.lowercased() != "remote", let key = ConfigKey(storageName: text) {
            self = key
            return
        }
        throw .usage("unknown key \(Identifiers.quoted(text)); the keys are \(Self.names.joined(separator: ", "))")
    }

    /// Section and key names are case-insensitive, as git's are (`PUSH.ONCONFLICT` is
    /// `push.onConflict`); the table name of `table.NAME.key` keeps its case, as a git subsection does.
    init?(storageName name: String) {
        switch name.lowercased() {
        case "remote", "remote.url": self = .remoteURL
        case "push.onconflict": self = .pushOnConflict
        case "push.prefer": self = .pushPrefer
        case "log.maxentries": self = .logMaxEntries
        case "http.cafile": self = .httpCAFile
        case "core.pager": self = .corePager
        default:
            let parts = name.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[0].lowercased() == "table" else { return nil }
            let table = String(parts[1])
            guard (try? Identifiers.validateTableName(table)) != nil else { return nil }
            switch parts[2].lowercased() {
            case "onconflict": self = .tableOnConflict(table)
            case "prefer": self = .tablePrefer(table)
            default: return nil
            }
        }
    }

    /// The key as `tsync config` names it (`push.onConflict`).
    package var description: String {
        switch self {
        case .remoteURL: "remote.url"
        case .pushOnConflict: "push.onConflict"
        case .pushPrefer: "push.prefer"
        case .tableOnConflict(let table): "table.\(table).onConflict"
        case .tablePrefer(let table): "table.\(table).prefer"
        case .logMaxEntries: "log.maxEntries"
        case .httpCAFile: "http.caFile"
        case .corePager: "core.pager"
        }
    }

    /// The key in config.json (`remote` for `remote.url`, as the first versions wrote it).
    var storageName: String { self == .remoteURL ? "remote" : description }

    /// The value to store, after checking it.
    func check(_ text: String) throws(TSyncError) -> JSONValue {
        switch self {
        case .remoteURL:
            try StoreConfiguration.validateRemote(text)
            return .string(text)
        case .pushOnConflict, .tableOnConflict:
            return .string(try parse(text, as: ConflictPolicy.self, kind: .usage).rawValue)
        case .pushPrefer, .tablePrefer:
            return .string(try parse(text, as: ThreeWayMerge.Side.self, kind: .usage).rawValue)
        case .logMaxEntries:
            guard let number = Int(text), number >= 1 else {
                throw .usage("invalid value \(Identifiers.quoted(text)) for log.maxEntries: expected a whole number of 1 or more")
            }
            return .int(Int64(number))
        case .httpCAFile:
            // Absolute, so the setting means the same file from any directory of the store.
            let path = URL(fileURLWithPath: text).standardizedFileURL.path
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                FileManager.default.isReadableFile(atPath: path)
            else {
                throw .usage("http.caFile: \(Identifiers.quoted(text)) is not a readable file (a PEM file of CA certificates)")
            }
            return .string(path)
        case .corePager:
            return .string(text)
        }
    }

    /// One of a closed set of values; anything else names the valid ones. A stored value (hand
    /// edited) that is not valid is a failure of the store's file, a given one a usage error.
    func parse<Value: RawRepresentable & CaseIterable>(
        _ text: String, as _: Value.Type, kind: TSyncError.Kind = .failure
    ) throws(TSyncError) -> Value where Value.RawValue == String {
        if let value = Value(rawValue: text) { return value }
        let valid = Value.allCases.map(\.rawValue).joined(separator: ", ")
        let fact = "invalid value \(Identifiers.quoted(text)) for \(self)"
        if kind == .usage { throw TSyncError(kind, "\(fact); expected one of \(valid)") }
        throw TSyncError(kind, "\(fact) in the store's configuration (expected one of \(valid))", remedy: .fixSetting(description))
    }
}
