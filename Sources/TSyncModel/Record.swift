/// The system properties of docs/DESIGN.md §1/§4, kept apart from user fields on both ends.
public struct SystemProperties: Sendable, Hashable {
    public static let names: Set<String> = ["id", "createdAt", "updatedAt", "version", "deleted"]

    public var createdAt: Timestamp?
    public var updatedAt: Timestamp?
    public var version: String?
    public var deleted: Bool

    public init(createdAt: Timestamp? = nil, updatedAt: Timestamp? = nil, version: String? = nil, deleted: Bool = false) {
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
        self.deleted = deleted
    }
}

/// One record: a string id, user fields, and system properties.
public struct Record: Sendable, Hashable {
    public var id: String
    /// User fields only; never contains a system property name.
    public var fields: [String: JSONValue]
    public var system: SystemProperties

    public init(id: String, fields: [String: JSONValue], system: SystemProperties = SystemProperties()) {
        self.id = id
        self.fields = fields
        self.system = system
    }

    /// Splits a wire object into id, user fields and system properties. System properties of the
    /// wrong type are an error; a missing id is an error unless `generateID` supplies one.
    public init(wire object: [String: JSONValue], generateID: (() -> String)? = nil) throws(TSyncError) {
        var fields = object
        var system = SystemProperties()
        let id: String
        switch fields.removeValue(forKey: "id") {
        case .string(let text)?: id = text
        case nil, .null?:
            guard let generateID else { throw .invalidInput("the record has no \"id\"") }
            id = generateID()
        case let other?:
            throw .invalidInput("\"id\" must be a string, not \(other.kindName)")
        }
        try Identifiers.validateRecordID(id)
        for name in ["createdAt", "updatedAt"] {
            switch fields.removeValue(forKey: name) {
            case nil, .null?: break
            case .string(let text)?:
                guard let timestamp = Timestamp(iso8601: text) else {
                    throw .invalidInput("\"\(name)\" is not an ISO 8601 date: \(Identifiers.quoted(text))")
                }
                if name == "createdAt" { system.createdAt = timestamp } else { system.updatedAt = timestamp }
            case let other?:
                throw .invalidInput("\"\(name)\" must be a date string, not \(other.kindName)")
            }
        }
        switch fields.removeValue(forKey: "version") {
        case nil, .null?: break
        case .string(let text)?: system.version = text
        case let other?: throw .invalidInput("\"version\" must be a string, not \(other.kindName)")
        }
        switch fields.removeValue(forKey: "deleted") {
        case nil, .null?: break
        case .bool(let flag)?: system.deleted = flag
        case let other?: throw .invalidInput("\"deleted\" must be a boolean, not \(other.kindName)")
        }
        self.init(id: id, fields: fields, system: system)
    }

    /// The wire form: user fields, `id`, and the system properties that are known.
    public var wireObject: [String: JSONValue] {
        var object = fields
        object["id"] = .string(id)
        if let createdAt = system.createdAt { object["createdAt"] = .string(createdAt.iso8601) }
        if let updatedAt = system.updatedAt { object["updatedAt"] = .string(updatedAt.iso8601) }
        if let version = system.version { object["version"] = .string(version) }
        object["deleted"] = .bool(system.deleted)
        return object
    }
}
