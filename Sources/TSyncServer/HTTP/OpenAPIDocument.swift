import HTTPTypes
import TSyncModel

/// `GET /openapi.json`: an OpenAPI 3.1 description of what this server answers, made from the
/// routes' own declarations (`ServedRoutes`) and the configuration's limits and table schemas,
/// never written beside them (docs/DESIGN.md §4, §16).
enum OpenAPIDocument {
    static func make(_ configuration: ServerConfiguration) -> JSONValue {
        var paths: [String: JSONValue] = [:]
        func add(_ path: String, _ method: String, _ operation: JSONValue) {
            var item = paths[path]?.objectValue ?? [:]
            item[method] = operation
            paths[path] = .object(item)
        }
        for route in ServedRoutes.all(configuration) {
            add(route.openAPIPath, route.method.rawValue.lowercased(), operation(route, configuration, recordSchema: nil))
        }
        // A table with a schema: its record routes again, by name, an insert with its record type
        // (an update's body is part of a record, checked once merged: any fields).
        for (table, _) in configuration.schemas.sorted(by: { $0.key < $1.key }) {
            let type: JSONValue = ["$ref": .string("#/components/schemas/\(componentName(table))")]
            for route in ServedRoutes.all(configuration) where route.group == "/tables" && route.path.hasPrefix(":table") {
                let path = route.openAPIPath.replacingOccurrences(of: "{table}", with: table)
                let body = route.body == .record && route.method == .post ? type : nil
                add(path, route.method.rawValue.lowercased(), operation(route, configuration, recordSchema: body, fixedTable: table))
            }
        }
        var schemas: [String: JSONValue] = [
            "Record": [
                "type": "object",
                "description": "A record: its own fields and the system properties.",
                "properties": [
                    "id": ["type": "string", "maxLength": .int(Int64(Identifiers.maximumIDLength))],
                    "createdAt": ["type": "string", "format": "date-time"],
                    "updatedAt": ["type": "string", "format": "date-time"],
                    "version": ["type": "string"],
                    "deleted": ["type": "boolean"],
                ],
            ],
            "Error": [
                "type": "object", "required": ["error"],
                "properties": [
                    "error": ["type": "string"],
                    "violations": [
                        "type": "array",
                        "items": [
                            "type": "object", "required": ["path", "reason"],
                            "properties": ["path": ["type": "string"], "reason": ["type": "string"]],
                        ],
                    ],
                ],
            ],
        ]
        for (table, schema) in configuration.schemas {
            schemas[componentName(table)] = withSystemProperties(
                relocated(schema.document, under: "#/components/schemas/\(componentName(table))"))
        }
        var document: [String: JSONValue] = [
            "openapi": "3.1.0",
            "info": [
                "title": "tsync serve",
                "version": "2.0.0",
                "description": "The Azure Mobile Apps v2 table protocol and tsync's extensions, as this server is configured.",
            ],
            "paths": .object(paths),
            "components": .object(["schemas": .object(schemas)]),
        ]
        if configuration.requiresAuthentication {
            document["components"] = .object([
                "schemas": .object(schemas),
                "securitySchemes": ["zumo": ["type": "apiKey", "in": "header", "name": "X-ZUMO-AUTH"]],
            ])
        }
        return .object(document)
    }

    private static func componentName(_ table: String) -> String { "Table_" + table }

    private static func operation(
        _ route: RouteDeclaration, _ configuration: ServerConfiguration, recordSchema: JSONValue?, fixedTable: String? = nil
    ) -> JSONValue {
        var parameters: [JSONValue] = route.pathParameters.filter { !(fixedTable != nil && $0 == "table") }.map { name in
            var schema: [String: JSONValue] = ["type": "string", "minLength": 1]
            schema["maxLength"] = .int(Int64(name == "table" ? Identifiers.maximumTableNameLength : Identifiers.maximumIDLength))
            // What `Identifiers` accepts: a table is an SQL-like name; an id has no control
            // character and none of / \ " + ? `.
            schema["pattern"] = name == "table" ? "^[A-Za-z_][A-Za-z0-9_]*$" : #"^[^\u0000-\u001f\u007f-\u009f/\\"+?`]+$"#
            return ["name": .string(name), "in": "path", "required": true, "schema": .object(schema)]
        }
        if !route.group.isEmpty {
            parameters.append([
                "name": "ZUMO-API-VERSION", "in": "header", "required": false,
                "schema": ["type": "string", "pattern": #"^\s*\+?0*2(\..*)?\s*$"#],
            ])
        }
        parameters.append([
            "name": "X-TSync-Echo", "in": "header", "required": false,
            "description": .string(
                "A token of the client's, sent back in the answer's X-TSync-Echo when it is 1 to 64 letters, digits, '-' or '_' "
                    + "(others are not echoed): a client tells its answer from another request's that a cache handed it."),
            "schema": ["type": "string"],
        ])
        for parameter in route.query {
            parameters.append([
                "name": .string(parameter.name), "in": "query", "required": .bool(parameter.required),
                "description": .string(parameter.description), "schema": schema(of: parameter.kind),
            ])
        }
        var operation: [String: JSONValue] = [
            "summary": .string(route.summary),
            "operationId": .string(operationID(route, fixedTable: fixedTable)),
            "parameters": .array(parameters),
            "responses": responses(route, recordSchema: recordSchema),
        ]
        if let body = route.body {
            operation["requestBody"] = [
                "required": true, "content": ["application/json": ["schema": requestSchema(body, configuration, recordSchema)]],
            ]
        }
        if route.authenticated, configuration.requiresAuthentication {
            operation["security"] = [["zumo": []]]
        }
        return .object(operation)
    }

    private static func operationID(_ route: RouteDeclaration, fixedTable: String?) -> String {
        var name = route.method.rawValue.lowercased()
        let path = fixedTable.map { route.openAPIPath.replacingOccurrences(of: "{table}", with: $0) } ?? route.openAPIPath
        for character in path where character.isLetter || character.isNumber || character == "/" {
            name.append(character == "/" ? "_" : character)
        }
        return name
    }

    private static func schema(of kind: QueryParameter.Kind) -> JSONValue {
        switch kind {
        case .string(let maxLength?): return ["type": "string", "maxLength": .int(Int64(maxLength))]
        case .string(nil): return ["type": "string"]
        case .integer(let minimum, let maximum?):
            return ["type": "integer", "minimum": .int(Int64(minimum)), "maximum": .int(Int64(maximum))]
        case .integer(let minimum, nil): return ["type": "integer", "minimum": .int(Int64(minimum))]
        case .boolean: return ["type": "boolean"]
        case .choice(let values): return ["type": "string", "enum": .array(values.map { .string($0) })]
        case .time: return ["type": "string", "format": "date-time"]
        }
    }

    private static func requestSchema(_ body: RouteDeclaration.Body, _ configuration: ServerConfiguration, _ recordSchema: JSONValue?)
        -> JSONValue
    {
        switch body {
        case .record:
            return recordSchema ?? ["type": "object", "description": "The record's fields; system properties are ignored."]
        case .login:
            return [
                "type": "object", "required": ["username", "password"],
                "properties": ["username": ["type": "string"], "password": ["type": "string"]],
            ]
        case .batch:
            return [
                "type": "object", "required": ["operations"],
                "properties": [
                    "atomic": ["type": ["boolean", "null"]],
                    "operations": [
                        "type": "array", "maxItems": .int(Int64(configuration.maximumBatchOperations)),
                        "items": [
                            "description":
                                "{\"method\": POST|PATCH|DELETE, \"table\", \"id\", \"item\", \"ifMatch\"}: each operation is checked on its own and answered in its result (400 there), not by the request's status."
                        ],
                    ],
                ],
            ]
        }
    }

    private static func responses(_ route: RouteDeclaration, recordSchema: JSONValue?) -> JSONValue {
        _ = recordSchema  // a stored record may predate its table's schema: answers are any record
        let record: JSONValue = ["$ref": "#/components/schemas/Record"]
        let success: JSONValue
        switch route.success.answer {
        case .record:
            success = ["description": "The record.", "content": ["application/json": ["schema": record]]]
        case .page:
            success = [
                "description": "A page of records (with $inlinecount=allpages: {\"count\", \"results\"}).",
                "content": [
                    "application/json": [
                        "schema": [
                            "oneOf": [
                                ["type": "array", "items": record],
                                [
                                    "type": "object", "required": ["results"],
                                    "properties": ["count": ["type": "integer"], "results": ["type": "array", "items": record]],
                                ],
                            ]
                        ]
                    ]
                ],
            ]
        case .object(let description):
            success = ["description": .string(description), "content": ["application/json": ["schema": ["type": "object"]]]]
        case .text(let description):
            success = ["description": .string(description), "content": ["text/plain": ["schema": ["type": "string"]]]]
        case .empty:
            success = ["description": "Nothing."]
        }
        let error: JSONValue = [
            "description":
                "An error: {\"error\"} (400 for a record that does not match its table's schema also carries \"violations\"); 409 and 412 answer the server's copy of the record instead.",
            "content": ["application/json": ["schema": ["anyOf": [["$ref": "#/components/schemas/Error"], record]]]],
        ]
        return [String(route.success.status): success, "default": error]
    }

    /// A table schema as a request body: the system properties a client may send beside the
    /// record's fields (the server ignores them, and the schema does not check them) declared at
    /// its root, so that `additionalProperties: false` does not refuse them.
    static func withSystemProperties(_ document: JSONValue) -> JSONValue {
        guard case .object(var root) = document else { return document }
        var properties = root["properties"]?.objectValue ?? [:]
        // Ignored by the server whatever their type (an id that is not a string aside: 400).
        properties["id"] = ["type": ["string", "null"]]
        for name in ["createdAt", "updatedAt", "version", "deleted"] {
            properties[name] = ["description": "A system property: ignored in a write."]
        }
        root["properties"] = .object(properties)
        return .object(root)
    }

    /// `document` with its `$ref`s into itself (`#/$defs/x`) made to point where it now stands.
    static func relocated(_ document: JSONValue, under base: String) -> JSONValue {
        switch document {
        case .object(let object):
            var moved: [String: JSONValue] = [:]
            for (key, value) in object {
                if key == "$ref", let target = value.stringValue, target.hasPrefix("#") {
                    moved[key] = .string(base + target.dropFirst())
                } else {
                    moved[key] = relocated(value, under: base)
                }
            }
            return .object(moved)
        case .array(let items): return .array(items.map { relocated($0, under: base) })
        default: return document
        }
    }
}
