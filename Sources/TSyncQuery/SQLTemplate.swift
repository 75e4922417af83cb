/// SQL under construction: text and bound arguments kept apart until the dialect's placeholders
/// are written.
///
/// An argument is an object, so a template may use one argument in several places (a JSON path
/// that is both type-tested and read): SQLite then gets one `?` and one copy of the value per use,
/// PostgreSQL one `$n` for all uses. Nothing a user typed ever becomes SQL text.
struct SQLTemplate: Sendable, ExpressibleByStringInterpolation {
    final class Argument: Sendable {
        let value: SQLValue
        /// The PostgreSQL type the placeholder is cast to (`$3::text`), so that the server can
        /// infer every parameter's type; SQLite needs none.
        let postgresType: String

        init(_ value: SQLValue, postgresType: String) {
            self.value = value
            self.postgresType = postgresType
        }
    }

    enum Piece: Sendable {
        case text(String)
        case argument(Argument)
    }

    private(set) var pieces: [Piece] = []
    /// A literal, a column or a field read: small enough to repeat. Anything larger is evaluated
    /// once when a rendering needs it several times (`SQLSyntax.reusing`), or SQL would grow
    /// exponentially with nesting (`floor(floor(floor(…)))`).
    private(set) var isLeaf = false

    /// The same template, marked as cheap to repeat.
    func leaf() -> SQLTemplate {
        var copy = self
        copy.isLeaf = true
        return copy
    }

    init(stringLiteral value: String) {
        pieces = [.text(value)]
    }

    init(stringInterpolation: StringInterpolation) {
        pieces = stringInterpolation.pieces
    }

    static func argument(_ value: SQLValue, postgresType: String) -> SQLTemplate {
        var template = SQLTemplate(stringLiteral: "")
        template.pieces = [.argument(Argument(value, postgresType: postgresType))]
        return template
    }

    struct StringInterpolation: StringInterpolationProtocol {
        fileprivate var pieces: [Piece] = []

        init(literalCapacity: Int, interpolationCount: Int) {}

        mutating func appendLiteral(_ literal: String) {
            if !literal.isEmpty { pieces.append(.text(literal)) }
        }

        mutating func appendInterpolation(_ template: SQLTemplate) {
            pieces += template.pieces
        }
    }

    /// `first`, `separator`, … joined.
    static func joined(_ templates: [SQLTemplate], separator: String) -> SQLTemplate {
        var result = SQLTemplate(stringLiteral: "")
        for (index, template) in templates.enumerated() {
            if index > 0 { result.pieces.append(.text(separator)) }
            result.pieces += template.pieces
        }
        return result
    }

    /// Writes the placeholders: `?` for SQLite, `$n::type` for PostgreSQL numbered from
    /// `firstArgumentIndex` in order of first use.
    func fragment(_ dialect: SQLDialect, firstArgumentIndex: Int) -> SQLFragment {
        var sql = ""
        var arguments: [SQLValue] = []
        var numbers: [ObjectIdentifier: Int] = [:]
        for piece in pieces {
            switch piece {
            case .text(let text):
                sql += text
            case .argument(let argument):
                switch dialect {
                case .sqlite:
                    sql += "?"
                    arguments.append(argument.value)
                case .postgres:
                    let key = ObjectIdentifier(argument)
                    let number: Int
                    if let known = numbers[key] {
                        number = known
                    } else {
                        number = firstArgumentIndex + arguments.count
                        numbers[key] = number
                        arguments.append(argument.value)
                    }
                    sql += "$\(number)::\(argument.postgresType)"
                }
            }
        }
        return SQLFragment(sql: sql, arguments: arguments)
    }
}
