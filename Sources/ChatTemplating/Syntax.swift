// MARK: - Expressions

/// A constant written in the template.
enum _Literal: Sendable {
    case none
    case boolean(Bool)
    case integer(Int)
    case double(Double)
    case string(String)
}

enum _UnaryOperator: String, Sendable {
    case negate = "-"
    case plus = "+"
    case not = "not"
}

enum _BinaryOperator: String, Sendable {
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

enum _ComparisonOperator: String, Sendable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case contains = "in"
    case notContains = "not in"
}

struct _KeywordArgument: Sendable {
    var name: String
    var value: _Expression
}

/// Arguments of a call, filter or test: `(a, b, key=value, *rest, **options)`.
struct _CallArguments: Sendable {
    var positional: [_Expression] = []
    var keyword: [_KeywordArgument] = []
    var variadicPositional: _Expression?
    var variadicKeyword: _Expression?

    static let empty = _CallArguments()
}

struct _DictionaryEntry: Sendable {
    var key: _Expression
    var value: _Expression
}

/// How a filter or test name resolved when the template was parsed.
enum _Callable<Known: Sendable>: Sendable {
    case known(Known)
    /// A filter Jinja has but this interpreter does not implement (reported when evaluated).
    case unsupported(String)
    /// A name Jinja does not know, inside an `if` or conditional expression: Jinja defers
    /// the "No filter named …" error to render time there.
    case missing(String)
}

indirect enum _Expression: Sendable {
    case literal(_Literal, _SourceLocation)
    case name(String, _SourceLocation)
    case list([_Expression], _SourceLocation)
    case tuple([_Expression], _SourceLocation)
    case dictionary([_DictionaryEntry], _SourceLocation)
    case attribute(_Expression, String, _SourceLocation)
    case item(_Expression, _Expression, _SourceLocation)
    case slice(start: _Expression?, stop: _Expression?, step: _Expression?, _SourceLocation)
    case unary(_UnaryOperator, _Expression, _SourceLocation)
    case binary(_BinaryOperator, _Expression, _Expression, _SourceLocation)
    case comparison(_Expression, [(_ComparisonOperator, _Expression)], _SourceLocation)
    case conditional(condition: _Expression, then: _Expression, otherwise: _Expression?, _SourceLocation)
    case filter(_Expression, _Callable<_FilterName>, _CallArguments, _SourceLocation)
    case test(_Expression, _Callable<_TestName>, _CallArguments, _SourceLocation)
    case call(_Expression, _CallArguments, _SourceLocation)

    var location: _SourceLocation {
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
indirect enum _AssignmentTarget: Sendable {
    case name(String)
    case tuple([_AssignmentTarget])
    /// `ns.attribute` (only allowed on a `namespace()` at render time).
    case namespaceAttribute(String, String)
}

/// A filter applied without an input expression: `{% filter upper %}` or `{% set x | trim %}`.
struct _FilterApplication: Sendable {
    var name: _Callable<_FilterName>
    var arguments: _CallArguments
    var location: _SourceLocation
}

struct _ConditionalBranch: Sendable {
    var condition: _Expression
    var body: [_Node]
}

struct _ForLoop: Sendable {
    var target: _AssignmentTarget
    var iterable: _Expression
    var condition: _Expression?
    var body: [_Node]
    var elseBody: [_Node]
    var location: _SourceLocation
}

struct _MacroParameter: Sendable {
    var name: String
    var defaultValue: _Expression?
}

/// A `{% macro %}` definition. Final class so macro values can share it cheaply.
final class _MacroDefinition: Sendable {
    let name: String
    let parameters: [_MacroParameter]
    let body: [_Node]
    let location: _SourceLocation
    /// Whether the body reads `varargs` / `kwargs` (then extra arguments are accepted).
    let usesVariadicPositional: Bool
    let usesVariadicKeyword: Bool

    init(name: String, parameters: [_MacroParameter], body: [_Node], location: _SourceLocation) {
        self.name = name
        self.parameters = parameters
        self.body = body
        self.location = location
        var names = Set<String>()
        _NameCollector.collect(body, into: &names)
        for parameter in parameters {
            if let value = parameter.defaultValue { _NameCollector.collect(value, into: &names) }
        }
        usesVariadicPositional = names.contains("varargs")
        usesVariadicKeyword = names.contains("kwargs")
    }
}

indirect enum _Node: Sendable {
    case text(String)
    case output(_Expression)
    case conditional([_ConditionalBranch], otherwise: [_Node])
    case forLoop(_ForLoop)
    case assignment(_AssignmentTarget, _Expression, _SourceLocation)
    case blockAssignment(_AssignmentTarget, [_FilterApplication], [_Node], _SourceLocation)
    case macro(_MacroDefinition)
    case filterBlock([_FilterApplication], [_Node])
    case scope([(_AssignmentTarget, _Expression)], [_Node], _SourceLocation)
    case breakLoop(_SourceLocation)
    case continueLoop(_SourceLocation)
    /// `{% generation %}…{% endgeneration %}` (transformers' assistant-mask marker): renders its body.
    case generation([_Node])
}

// MARK: - Name collection (introspection)

/// Walks a tree collecting every variable name read, every attribute name and every string
/// constant; used for `mentionsTools` / `mentionsToolCalls` and for macro `varargs` detection.
enum _NameCollector {
    static func collect(_ nodes: [_Node], into names: inout Set<String>, attributes: inout Set<String>, strings: inout Set<String>) {
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

    static func collect(_ arguments: _CallArguments, into names: inout Set<String>, attributes: inout Set<String>, strings: inout Set<String>) {
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

    static func collect(_ expression: _Expression, into names: inout Set<String>, attributes: inout Set<String>, strings: inout Set<String>) {
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

    static func collect(_ nodes: [_Node], into names: inout Set<String>) {
        var attributes = Set<String>()
        var strings = Set<String>()
        collect(nodes, into: &names, attributes: &attributes, strings: &strings)
    }

    static func collect(_ expression: _Expression, into names: inout Set<String>) {
        var attributes = Set<String>()
        var strings = Set<String>()
        collect(expression, into: &names, attributes: &attributes, strings: &strings)
    }
}
