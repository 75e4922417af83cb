import HTTPTypes

extension HTTPField.Name {
    // Force-unwrapping a literal that is a valid token is checked by the tests of every route.
    static let zumoAPIVersion = HTTPField.Name("ZUMO-API-VERSION")!
    static let zumoAuth = HTTPField.Name("X-ZUMO-AUTH")!
    static let link = HTTPField.Name("Link")!
    static let forwardedProto = HTTPField.Name("X-Forwarded-Proto")!
    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!
    static let forwarded = HTTPField.Name("Forwarded")!
    static let deletedHorizon = HTTPField.Name("X-TSync-Deleted-Horizon")!
    static let schemaTag = HTTPField.Name("X-TSync-Schema")!
}
