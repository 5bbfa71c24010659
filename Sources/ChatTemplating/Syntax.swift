// MARK: - Expressions

/// A constant written in the template.
enum Literal: Sendable {
    case none
    case boolean(Bool)
    case integer(Int)
    case double(Double)
    case string(String)
}

enum UnaryOperator: String, Sendable {
    case negate = "-"
    case plus = "+"
    case not = "not"
}

enum BinaryOperator: String, Sendable {
    case add = "+"
    case subtract = "-"
    case multiply = "*"
    case divide = "/"
    case floorDivide = "//"
    case modulo = "%"
    case power = "**"
    case concatenate = "~"
    case and = "and"
    case or = "or"
}

enum ComparisonOperator: String, Sendable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case contains = "in"
    case notContains = "not in"
}

struct KeywordArgument: Sendable {
    var name: String
    var value: Expression
}

/// Arguments of a call, filter or test: `(a, b, key=value, *rest, **options)`.
struct CallArguments: Sendable {
    var positional: [Expression] = []
    var keyword: [KeywordArgument] = []
    var variadicPositional: Expression?
    var variadicKeyword: Expression?

    static let empty = CallArguments()
}

struct DictionaryEntry: Sendable {
    var key: Expression
    var value: Expression
}

/// How a filter or test name resolved when the template was parsed.
enum Callable<Known: Sendable>: Sendable {
    case known(Known)
    /// A filter Jinja has but this interpreter does not implement (reported when evaluated).
    case unsupported(String)
    /// A name Jinja does not know, inside an `if` or conditional expression: Jinja defers
    /// the "No filter named …" error to render time there.
    case missing(String)
}

indirect enum Expression: Sendable {
    case literal(Literal, SourceLocation)
    case name(String, SourceLocation)
    case list([Expression], SourceLocation)
    case tuple([Expression], SourceLocation)
    case dictionary([DictionaryEntry], SourceLocation)
    case attribute(Expression, String, SourceLocation)
    case item(Expression, Expression, SourceLocation)
    case slice(start: Expression?, stop: Expression?, step: Expression?, SourceLocation)
    case unary(UnaryOperator, Expression, SourceLocation)
    case binary(BinaryOperator, Expression, Expression, SourceLocation)
    case comparison(Expression, [(ComparisonOperator, Expression)], SourceLocation)
    case conditional(condition: Expression, then: Expression, otherwise: Expression?, SourceLocation)
    case filter(Expression, Callable<FilterName>, CallArguments, SourceLocation)
    case test(Expression, Callable<TestName>, CallArguments, SourceLocation)
    case call(Expression, CallArguments, SourceLocation)

    var location: SourceLocation {
        switch self {
        case let .literal(_, location), let .name(_, location), let .list(_, location),
             let .tuple(_, location), let .dictionary(_, location), let .attribute(_, _, location),
             let .item(_, _, location), let .slice(_, _, _, location), let .unary(_, _, location),
             let .binary(_, _, _, location), let .comparison(_, _, location),
             let .conditional(_, _, _, location), let .filter(_, _, _, location),
             let .test(_, _, _, location), let .call(_, _, location):
            return location
        }
    }
}

// MARK: - Statements

/// The left side of `set` and of `for … in`.
indirect enum AssignmentTarget: Sendable {
    case name(String)
    case tuple([AssignmentTarget])
    /// `ns.attribute` (only allowed on a `namespace()` at render time).
    case namespaceAttribute(String, String)
}

/// A filter applied without an input expression: `{% filter upper %}` or `{% set x | trim %}`.
struct FilterApplication: Sendable {
    var name: Callable<FilterName>
    var arguments: CallArguments
    var location: SourceLocation
}

struct ConditionalBranch: Sendable {
    var condition: Expression
    var body: [Node]
}

struct ForLoop: Sendable {
    var target: AssignmentTarget
    var iterable: Expression
    var condition: Expression?
    var body: [Node]
    var elseBody: [Node]
    var location: SourceLocation
}

struct MacroParameter: Sendable {
    var name: String
    var defaultValue: Expression?
}

/// A `{% macro %}` definition. Final class so macro values can share it cheaply.
final class MacroDefinition: Sendable {
    let name: String
    let parameters: [MacroParameter]
    let body: [Node]
    let location: SourceLocation
    /// Whether the body reads `varargs` / `kwargs` (then extra arguments are accepted).
    let usesVariadicPositional: Bool
    let usesVariadicKeyword: Bool

    init(name: String, parameters: [MacroParameter], body: [Node], location: SourceLocation) {
        self.name = name
        self.parameters = parameters
        self.body = body
        self.location = location
        var names = Set<String>()
        NameCollector.collect(body, into: &names)
        for parameter in parameters {
            if let value = parameter.defaultValue { NameCollector.collect(value, into: &names) }
        }
        usesVariadicPositional = names.contains("varargs")
        usesVariadicKeyword = names.contains("kwargs")
    }
}

indirect enum Node: Sendable {
    case text(String)
    case output(Expression)
    case conditional([ConditionalBranch], otherwise: [Node])
    case forLoop(ForLoop)
    case assignment(AssignmentTarget, Expression, SourceLocation)
    case blockAssignment(AssignmentTarget, [FilterApplication], [Node], SourceLocation)
    case macro(MacroDefinition)
    case filterBlock([FilterApplication], [Node])
    case scope([(AssignmentTarget, Expression)], [Node], SourceLocation)
    case breakLoop(SourceLocation)
    case continueLoop(SourceLocation)
    /// `{% generation %}…{% endgeneration %}` (transformers' assistant-mask marker): renders its body.
    case generation([Node])
}

// MARK: - Name collection (introspection)

/// Walks a tree collecting every variable name read, every attribute name and every string
/// constant; used for `mentionsTools` / `mentionsToolCalls` and for macro `varargs` detection.
enum NameCollector {
    static func collect(_ nodes: [Node], into names: inout Set<String>, attributes: inout Set<String>, strings: inout Set<String>) {
        for node in nodes {
            switch node {
            case .text:
                break
            case .output(let expression):
                collect(expression, into: &names, attributes: &attributes, strings: &strings)
            case .conditional(let branches, let otherwise):
                for branch in branches {
                    collect(branch.condition, into: &names, attributes: &attributes, strings: &strings)
                    collect(branch.body, into: &names, attributes: &attributes, strings: &strings)
                }
                collect(otherwise, into: &names, attributes: &attributes, strings: &strings)
            case .forLoop(let loop):
                collect(loop.iterable, into: &names, attributes: &attributes, strings: &strings)
                if let condition = loop.condition {
                    collect(condition, into: &names, attributes: &attributes, strings: &strings)
                }
                collect(loop.body, into: &names, attributes: &attributes, strings: &strings)
                collect(loop.elseBody, into: &names, attributes: &attributes, strings: &strings)
            case .assignment(let target, let value, _):
                if case .namespaceAttribute(let namespace, _) = target { names.insert(namespace) }
                collect(value, into: &names, attributes: &attributes, strings: &strings)
            case .blockAssignment(let target, let filters, let body, _):
                if case .namespaceAttribute(let namespace, _) = target { names.insert(namespace) }
                for filter in filters {
                    collect(filter.arguments, into: &names, attributes: &attributes, strings: &strings)
                }
                collect(body, into: &names, attributes: &attributes, strings: &strings)
            case .macro(let definition):
                for parameter in definition.parameters {
                    if let value = parameter.defaultValue {
                        collect(value, into: &names, attributes: &attributes, strings: &strings)
                    }
                }
                collect(definition.body, into: &names, attributes: &attributes, strings: &strings)
            case .filterBlock(let filters, let body):
                for filter in filters {
                    collect(filter.arguments, into: &names, attributes: &attributes, strings: &strings)
                }
                collect(body, into: &names, attributes: &attributes, strings: &strings)
            case .scope(let assignments, let body, _):
                for (_, value) in assignments {
                    collect(value, into: &names, attributes: &attributes, strings: &strings)
                }
                collect(body, into: &names, attributes: &attributes, strings: &strings)
            case .breakLoop, .continueLoop:
                break
            case .generation(let body):
                collect(body, into: &names, attributes: &attributes, strings: &strings)
            }
        }
    }

    static func collect(_ arguments: CallArguments, into names: inout Set<String>, attributes: inout Set<String>, strings: inout Set<String>) {
        for argument in arguments.positional {
            collect(argument, into: &names, attributes: &attributes, strings: &strings)
        }
        for argument in arguments.keyword {
            collect(argument.value, into: &names, attributes: &attributes, strings: &strings)
        }
        if let rest = arguments.variadicPositional {
            collect(rest, into: &names, attributes: &attributes, strings: &strings)
        }
        if let rest = arguments.variadicKeyword {
            collect(rest, into: &names, attributes: &attributes, strings: &strings)
        }
    }

    static func collect(_ expression: Expression, into names: inout Set<String>, attributes: inout Set<String>, strings: inout Set<String>) {
        switch expression {
        case .literal(let literal, _):
            if case .string(let value) = literal { strings.insert(value) }
        case .name(let name, _):
            names.insert(name)
        case .list(let items, _), .tuple(let items, _):
            for item in items { collect(item, into: &names, attributes: &attributes, strings: &strings) }
        case .dictionary(let entries, _):
            for entry in entries {
                collect(entry.key, into: &names, attributes: &attributes, strings: &strings)
                collect(entry.value, into: &names, attributes: &attributes, strings: &strings)
            }
        case .attribute(let base, let name, _):
            attributes.insert(name)
            collect(base, into: &names, attributes: &attributes, strings: &strings)
        case .item(let base, let index, _):
            collect(base, into: &names, attributes: &attributes, strings: &strings)
            collect(index, into: &names, attributes: &attributes, strings: &strings)
        case .slice(let start, let stop, let step, _):
            for part in [start, stop, step] {
                if let part { collect(part, into: &names, attributes: &attributes, strings: &strings) }
            }
        case .unary(_, let operand, _):
            collect(operand, into: &names, attributes: &attributes, strings: &strings)
        case .binary(_, let left, let right, _):
            collect(left, into: &names, attributes: &attributes, strings: &strings)
            collect(right, into: &names, attributes: &attributes, strings: &strings)
        case .comparison(let first, let rest, _):
            collect(first, into: &names, attributes: &attributes, strings: &strings)
            for (_, operand) in rest { collect(operand, into: &names, attributes: &attributes, strings: &strings) }
        case .conditional(let condition, let then, let otherwise, _):
            collect(condition, into: &names, attributes: &attributes, strings: &strings)
            collect(then, into: &names, attributes: &attributes, strings: &strings)
            if let otherwise { collect(otherwise, into: &names, attributes: &attributes, strings: &strings) }
        case .filter(let input, _, let arguments, _), .test(let input, _, let arguments, _), .call(let input, let arguments, _):
            collect(input, into: &names, attributes: &attributes, strings: &strings)
            collect(arguments, into: &names, attributes: &attributes, strings: &strings)
        }
    }

    static func collect(_ nodes: [Node], into names: inout Set<String>) {
        var attributes = Set<String>()
        var strings = Set<String>()
        collect(nodes, into: &names, attributes: &attributes, strings: &strings)
    }

    static func collect(_ expression: Expression, into names: inout Set<String>) {
        var attributes = Set<String>()
        var strings = Set<String>()
        collect(expression, into: &names, attributes: &attributes, strings: &strings)
    }
}
