import Foundation

// MARK: - Scopes

/// A frame of variables. `for` iterations, macro calls and `with` blocks get a child scope;
/// `if` does not (as in Jinja, a `set` inside a loop body is lost after the iteration).
final class Scope {
    let parent: Scope?
    private var variables: [String: RuntimeValue] = [:]

    init(parent: Scope?) {
        self.parent = parent
    }

    func lookup(_ name: String) -> RuntimeValue? {
        var scope: Scope? = self
        while let current = scope {
            if let value = current.variables[name] { return value }
            scope = current.parent
        }
        return nil
    }

    func set(_ name: String, _ value: RuntimeValue) {
        variables[name] = value
    }
}

/// How a block of statements finished.
enum Flow {
    case normal
    case breakLoop
    case continueLoop
}

// MARK: - Renderer

/// Executes a parsed template. One renderer per `render` call; not shared across threads.
final class Renderer {
    let limits: ChatTemplate.Limits
    let now: Date
    let timeZone: TimeZone

    private var depth = 0
    private var iterations = 0
    private var producedBytes = 0

    /// Bytes of strings built by operations (`~`, `+`, `*`, filters), across the whole render.
    private var builtBytes = 0
    private var builtBytesBudget: Int { limits.maximumOutputLength.multipliedReportingOverflow(by: 16).partialValue }

    init(limits: ChatTemplate.Limits, now: Date, timeZone: TimeZone) {
        self.limits = limits
        self.now = now
        self.timeZone = timeZone
    }

    /// Jinja's default globals plus transformers' `raise_exception` and `strftime_now`.
    static func global(_ name: String) -> RuntimeValue? {
        switch name {
        case "range": return .builtin(.range)
        case "dict": return .builtin(.dictionary)
        case "namespace": return .builtin(.namespace)
        case "raise_exception": return .builtin(.raiseException)
        case "strftime_now": return .builtin(.strftimeNow)
        case "lipsum", "cycler", "joiner": return .builtin(.unsupported(name))
        default: return nil
        }
    }

    // MARK: Limits

    private func enter(_ location: SourceLocation) throws(ChatTemplateError) {
        depth += 1
        if depth > limits.maximumEvaluationDepth {
            throw .limit("evaluation nested deeper than \(limits.maximumEvaluationDepth) levels (runaway recursion?)", at: location)
        }
    }

    private func leave() { depth -= 1 }

    func countIteration(at location: SourceLocation) throws(ChatTemplateError) {
        iterations += 1
        if iterations > limits.maximumLoopIterations {
            throw .limit("more than \(limits.maximumLoopIterations) loop iterations", at: location)
        }
    }

    /// Checks a string built by an operation against the size limits.
    func checked(_ text: String, at location: SourceLocation) throws(ChatTemplateError) -> String {
        let size = text.utf8.count
        if size > limits.maximumOutputLength {
            throw .limit("a string grew beyond \(limits.maximumOutputLength) bytes", at: location)
        }
        builtBytes += size
        if builtBytes > builtBytesBudget {
            throw .limit("the template built more than \(builtBytesBudget) bytes of strings", at: location)
        }
        return text
    }

    /// Checks a collection built by an operation (list repetition, `range`).
    func checkCollection(count: Int, at location: SourceLocation) throws(ChatTemplateError) {
        if count > limits.maximumCollectionLength {
            throw .limit("a list grew beyond \(limits.maximumCollectionLength) items", at: location)
        }
    }

    private func emit(_ text: String, into buffer: inout String, at location: SourceLocation) throws(ChatTemplateError) {
        producedBytes += text.utf8.count
        if producedBytes > limits.maximumOutputLength {
            throw .limit("output longer than \(limits.maximumOutputLength) bytes", at: location)
        }
        buffer += text
    }

    // MARK: Statements

    func execute(_ nodes: [Node], in scope: Scope, into buffer: inout String) throws(ChatTemplateError) -> Flow {
        for node in nodes {
            let flow = try execute(node, in: scope, into: &buffer)
            if case .normal = flow { continue }
            return flow
        }
        return .normal
    }

    private func execute(_ node: Node, in scope: Scope, into buffer: inout String) throws(ChatTemplateError) -> Flow {
        switch node {
        case .text(let text):
            try emit(text, into: &buffer, at: .unknown)
            return .normal
        case .output(let expression):
            let value = try evaluate(expression, in: scope)
            try emit(try stringify(value, at: expression.location), into: &buffer, at: expression.location)
            return .normal
        case .conditional(let branches, let otherwise):
            for branch in branches where try evaluate(branch.condition, in: scope).isTruthy {
                return try execute(branch.body, in: scope, into: &buffer)
            }
            return try execute(otherwise, in: scope, into: &buffer)
        case .forLoop(let loop):
            try enter(loop.location)
            defer { leave() }
            try executeLoop(loop, in: scope, into: &buffer)
            return .normal
        case let .assignment(target, expression, location):
            let value = try evaluate(expression, in: scope)
            try assign(value, to: target, in: scope, at: location)
            return .normal
        case let .blockAssignment(target, filters, body, location):
            try enter(location)
            defer { leave() }
            var captured = ""
            _ = try execute(body, in: scope, into: &captured)
            var value = RuntimeValue.string(captured)
            for filter in filters {
                value = try applyFilter(filter.name, to: value, arguments: filter.arguments, in: scope, at: filter.location)
            }
            try assign(value, to: target, in: scope, at: location)
            return .normal
        case .macro(let definition):
            scope.set(definition.name, .macro(TemplateMacro(definition: definition, scope: scope)))
            return .normal
        case let .filterBlock(filters, body):
            let location = filters.first?.location ?? .unknown
            try enter(location)
            defer { leave() }
            var captured = ""
            let flow = try execute(body, in: scope, into: &captured)
            var value = RuntimeValue.string(captured)
            for filter in filters {
                value = try applyFilter(filter.name, to: value, arguments: filter.arguments, in: scope, at: filter.location)
            }
            try emit(try stringify(value, at: location), into: &buffer, at: location)
            return flow
        case let .scope(assignments, body, location):
            try enter(location)
            defer { leave() }
            let inner = Scope(parent: scope)
            for (target, expression) in assignments {
                // Jinja evaluates each value in the outer scope.
                let value = try evaluate(expression, in: scope)
                try assign(value, to: target, in: inner, at: location)
            }
            return try execute(body, in: inner, into: &buffer)
        case .breakLoop:
            return .breakLoop
        case .continueLoop:
            return .continueLoop
        case .generation(let body):
            return try execute(body, in: scope, into: &buffer)
        }
    }

    private func executeLoop(_ loop: ForLoop, in scope: Scope, into buffer: inout String) throws(ChatTemplateError) {
        let iterable = try evaluate(loop.iterable, in: scope)
        var items = try iterate(iterable, at: loop.iterable.location)
        if let condition = loop.condition {
            var kept: [RuntimeValue] = []
            for item in items {
                try countIteration(at: loop.location)
                let probe = Scope(parent: scope)
                try assign(item, to: loop.target, in: probe, at: loop.location)
                if try evaluate(condition, in: probe).isTruthy {
                    kept.append(item)
                }
            }
            items = kept
        }
        if items.isEmpty {
            _ = try execute(loop.elseBody, in: scope, into: &buffer)
            return
        }
        let state = LoopState(items: items)
        for (index, item) in items.enumerated() {
            try countIteration(at: loop.location)
            state.index0 = index
            let iterationScope = Scope(parent: scope)
            try assign(item, to: loop.target, in: iterationScope, at: loop.location)
            iterationScope.set("loop", .loop(state))
            let flow = try execute(loop.body, in: iterationScope, into: &buffer)
            if case .breakLoop = flow { break }
        }
    }

    private func assign(_ value: RuntimeValue, to target: AssignmentTarget, in scope: Scope, at location: SourceLocation) throws(ChatTemplateError) {
        switch target {
        case .name(let name):
            scope.set(name, value)
        case .tuple(let targets):
            let items = try iterate(value, at: location)
            if items.count < targets.count {
                throw .runtime("not enough values to unpack (expected \(targets.count), got \(items.count))", at: location)
            }
            if items.count > targets.count {
                throw .runtime("too many values to unpack (expected \(targets.count))", at: location)
            }
            for (item, subtarget) in zip(items, targets) {
                try assign(item, to: subtarget, in: scope, at: location)
            }
        case let .namespaceAttribute(name, attribute):
            guard let object = scope.lookup(name) ?? Self.global(name) else {
                throw .undefinedValue(message: "'\(name)' is undefined", line: location.line, column: location.column)
            }
            guard case .namespace(let namespace) = object else {
                throw .runtime("cannot assign attribute on non-namespace object", at: location)
            }
            namespace.attributes.set(attribute, value)
        }
    }

    // MARK: Expressions

    func evaluate(_ expression: Expression, in scope: Scope) throws(ChatTemplateError) -> RuntimeValue {
        try enter(expression.location)
        defer { leave() }
        switch expression {
        case .literal(let literal, _):
            switch literal {
            case .none: return .none
            case .boolean(let value): return .boolean(value)
            case .integer(let value): return .integer(value)
            case .double(let value): return .double(value)
            case .string(let value): return .string(value)
            }
        case .name(let name, _):
            return scope.lookup(name) ?? Self.global(name) ?? .undefinedName(name)
        case .list(let items, _):
            var values: [RuntimeValue] = []
            values.reserveCapacity(items.count)
            for item in items { values.append(try evaluate(item, in: scope)) }
            return .list(values)
        case .tuple(let items, _):
            var values: [RuntimeValue] = []
            values.reserveCapacity(items.count)
            for item in items { values.append(try evaluate(item, in: scope)) }
            return .tuple(values)
        case .dictionary(let entries, let location):
            var dictionary = Dictionary()
            for entry in entries {
                let key = try evaluate(entry.key, in: scope)
                let value = try evaluate(entry.value, in: scope)
                guard dictionary.set(key, value) else {
                    throw .runtime("unhashable type: '\(key.typeName)'", at: location)
                }
            }
            return .dictionary(dictionary)
        case let .attribute(base, name, location):
            let object = try evaluate(base, in: scope)
            return try attribute(name, of: object, at: location)
        case let .item(base, index, location):
            let object = try evaluate(base, in: scope)
            if case let .slice(start, stop, step, _) = index {
                return try slice(object,
                                 start: start.map { e throws(ChatTemplateError) in try evaluate(e, in: scope) },
                                 stop: stop.map { e throws(ChatTemplateError) in try evaluate(e, in: scope) },
                                 step: step.map { e throws(ChatTemplateError) in try evaluate(e, in: scope) },
                                 at: location)
            }
            let key = try evaluate(index, in: scope)
            return try item(key, of: object, at: location)
        case .slice(_, _, _, let location):
            throw .syntax("a slice is only allowed inside brackets", at: location)
        case let .unary(operation, operand, location):
            let value = try evaluate(operand, in: scope)
            return try unary(operation, value, at: location)
        case let .binary(operation, left, right, location):
            switch operation {
            case .and:
                let first = try evaluate(left, in: scope)
                return first.isTruthy ? try evaluate(right, in: scope) : first
            case .or:
                let first = try evaluate(left, in: scope)
                return first.isTruthy ? first : try evaluate(right, in: scope)
            default:
                let a = try evaluate(left, in: scope)
                let b = try evaluate(right, in: scope)
                return try binary(operation, a, b, at: location)
            }
        case let .comparison(first, rest, location):
            var left = try evaluate(first, in: scope)
            for (operation, operand) in rest {
                let right = try evaluate(operand, in: scope)
                if !(try compare(operation, left, right, at: location)) {
                    return .boolean(false)
                }
                left = right
            }
            return .boolean(true)
        case let .conditional(condition, then, otherwise, location):
            if try evaluate(condition, in: scope).isTruthy {
                return try evaluate(then, in: scope)
            }
            if let otherwise {
                return try evaluate(otherwise, in: scope)
            }
            _ = location
            return .undefined(Undefined(reason: .hint("the inline if-expression on line \(location.line) evaluated to false and no else section was defined.")))
        case let .filter(input, filter, arguments, location):
            let value = try evaluate(input, in: scope)
            return try applyFilter(filter, to: value, arguments: arguments, in: scope, at: location)
        case let .test(input, test, arguments, location):
            let value = try evaluate(input, in: scope)
            return .boolean(try applyTest(test, to: value, arguments: arguments, in: scope, at: location))
        case let .call(callee, arguments, location):
            let function = try evaluate(callee, in: scope)
            let evaluated = try evaluateArguments(arguments, in: scope, at: location)
            return try call(function, with: evaluated, at: location)
        }
    }

    // MARK: Arguments

    struct Arguments {
        var positional: [RuntimeValue] = []
        var keyword: [(name: String, value: RuntimeValue)] = []

        var isEmpty: Bool { positional.isEmpty && keyword.isEmpty }
    }

    func evaluateArguments(_ arguments: CallArguments, in scope: Scope, at location: SourceLocation) throws(ChatTemplateError) -> Arguments {
        var result = Arguments()
        for argument in arguments.positional {
            result.positional.append(try evaluate(argument, in: scope))
        }
        for argument in arguments.keyword {
            result.keyword.append((argument.name, try evaluate(argument.value, in: scope)))
        }
        if let rest = arguments.variadicPositional {
            result.positional += try iterate(try evaluate(rest, in: scope), at: location)
        }
        if let rest = arguments.variadicKeyword {
            let value = try evaluate(rest, in: scope)
            guard case .dictionary(let dictionary) = value else {
                throw .runtime("argument after ** must be a mapping, not \(value.typeName)", at: location)
            }
            for (key, value) in dictionary.entries {
                guard case .string(let name) = key else {
                    throw .runtime("keywords must be strings", at: location)
                }
                result.keyword.append((name, value))
            }
        }
        return result
    }

    /// Binds arguments to named parameters like a Python signature (extra arguments are errors).
    func bind(_ arguments: Arguments, names: [String], function: String, at location: SourceLocation) throws(ChatTemplateError) -> [RuntimeValue?] {
        var bound = [RuntimeValue?](repeating: nil, count: names.count)
        if arguments.positional.count > names.count {
            throw .runtime("\(function)() takes at most \(names.count) arguments (\(arguments.positional.count) given)", at: location)
        }
        for (index, value) in arguments.positional.enumerated() {
            bound[index] = value
        }
        for (name, value) in arguments.keyword {
            guard let index = names.firstIndex(of: name) else {
                throw .runtime("\(function)() got an unexpected keyword argument '\(name)'", at: location)
            }
            if bound[index] != nil {
                throw .runtime("\(function)() got multiple values for argument '\(name)'", at: location)
            }
            bound[index] = value
        }
        return bound
    }

    // MARK: Attribute and item access

    private static let dictionaryMethods: Set<String> = ["get", "items", "keys", "values", "copy"]
    private static let dictionaryMutators: Set<String> = ["clear", "pop", "popitem", "setdefault", "update"]
    private static let listMethods: Set<String> = ["index", "count", "copy"]
    private static let listMutators: Set<String> = ["append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort"]

    private static func unsafe(_ name: String, of object: RuntimeValue) -> RuntimeValue {
        .undefined(Undefined(reason: .unsafe("access to attribute '\(name)' of '\(object.typeName)' object is unsafe.")))
    }

    /// `object.name` (Jinja's sandboxed `getattr`: Python attribute first, then item).
    func attribute(_ name: String, of object: RuntimeValue, at location: SourceLocation) throws(ChatTemplateError) -> RuntimeValue {
        if name.hasPrefix("__") {
            if case .undefined(let undefined) = object { throw undefined.error(at: location) }
            return Self.unsafe(name, of: object)
        }
        switch object {
        case .undefined(let undefined):
            throw undefined.error(at: location)
        case .dictionary(let dictionary):
            if Self.dictionaryMethods.contains(name) { return .method(object, name) }
            if Self.dictionaryMutators.contains(name) { return Self.unsafe(name, of: object) }
            if let value = dictionary.value(for: name) { return value }
        case .string:
            if Self.stringMethods.contains(name) { return .method(object, name) }
        case .list, .tuple:
            if Self.listMethods.contains(name) { return .method(object, name) }
            if case .list = object, Self.listMutators.contains(name) { return Self.unsafe(name, of: object) }
        case .namespace(let namespace):
            if let value = namespace.attributes.value(for: name) { return value }
        case .loop(let loop):
            if let value = loopAttribute(name, of: loop, object: object) { return value }
        default:
            break
        }
        return .undefined(Undefined(reason: .attribute(owner: object.objectTypeDescription, name: name)))
    }

    private func loopAttribute(_ name: String, of loop: LoopState, object: RuntimeValue) -> RuntimeValue? {
        let index0 = loop.index0
        switch name {
        case "index": return .integer(index0 + 1)
        case "index0": return .integer(index0)
        case "revindex": return .integer(loop.length - index0)
        case "revindex0": return .integer(loop.length - index0 - 1)
        case "first": return .boolean(index0 == 0)
        case "last": return .boolean(index0 == loop.length - 1)
        case "length": return .integer(loop.length)
        case "depth": return .integer(1)
        case "depth0": return .integer(0)
        case "previtem":
            return index0 > 0 ? loop.items[index0 - 1]
                : .undefined(Undefined(reason: .hint("there is no previous item")))
        case "nextitem":
            return index0 + 1 < loop.length ? loop.items[index0 + 1]
                : .undefined(Undefined(reason: .hint("there is no next item")))
        case "cycle", "changed": return .method(object, name)
        default: return nil
        }
    }

    /// `object[key]` (Jinja's sandboxed `getitem`: item first, then attribute for string keys).
    func item(_ key: RuntimeValue, of object: RuntimeValue, at location: SourceLocation) throws(ChatTemplateError) -> RuntimeValue {
        switch object {
        case .undefined(let undefined):
            throw undefined.error(at: location)
        case .list(let items), .tuple(let items):
            if let index = key.integerIndex {
                let resolved = index < 0 ? index + items.count : index
                if resolved >= 0 && resolved < items.count { return items[resolved] }
                return .undefined(Undefined(reason: .element(owner: object.objectTypeDescription, key: key.pythonRepr())))
            }
        case .string(let text):
            if let index = key.integerIndex {
                let scalars = Array(text.unicodeScalars)
                let resolved = index < 0 ? index + scalars.count : index
                if resolved >= 0 && resolved < scalars.count { return .string(String(scalars[resolved])) }
                return .undefined(Undefined(reason: .element(owner: object.objectTypeDescription, key: key.pythonRepr())))
            }
        case .dictionary(let dictionary):
            if let value = dictionary.value(for: key) { return value }
        default:
            break
        }
        if case .string(let name) = key {
            if case .dictionary = object, !Self.dictionaryMethods.contains(name), !Self.dictionaryMutators.contains(name) {
                return .undefined(Undefined(reason: .attribute(owner: object.objectTypeDescription, name: name)))
            }
            return try attribute(name, of: object, at: location)
        }
        return .undefined(Undefined(reason: .element(owner: object.objectTypeDescription, key: key.pythonRepr())))
    }

    private func slice(_ object: RuntimeValue, start: RuntimeValue?, stop: RuntimeValue?, step: RuntimeValue?, at location: SourceLocation) throws(ChatTemplateError) -> RuntimeValue {
        func bound(_ value: RuntimeValue?) throws(ChatTemplateError) -> Int? {
            guard let value else { return nil }
            switch value {
            case .none: return nil
            case .undefined(let undefined): throw undefined.error(at: location)
            default:
                guard let index = value.integerIndex else {
                    throw .runtime("slice indices must be integers or None", at: location)
                }
                return index
            }
        }
        let startIndex = try bound(start)
        let stopIndex = try bound(stop)
        let stepValue = try bound(step) ?? 1
        if stepValue == 0 {
            throw .runtime("slice step cannot be zero", at: location)
        }
        func indices(count: Int) -> [Int] {
            var result: [Int] = []
            if stepValue > 0 {
                var lower = startIndex ?? 0
                if lower < 0 { lower = max(lower + count, 0) }
                lower = min(lower, count)
                var upper = stopIndex ?? count
                if upper < 0 { upper = max(upper + count, 0) }
                upper = min(upper, count)
                var index = lower
                while index < upper {
                    result.append(index)
                    let (next, overflow) = index.addingReportingOverflow(stepValue)
                    if overflow { break }
                    index = next
                }
            } else {
                var upper = startIndex ?? (count - 1)
                if upper < 0 { upper += count }
                upper = min(upper, count - 1)
                var lower = stopIndex ?? -1
                if let stopIndex, stopIndex < 0 { lower = max(stopIndex + count, -1) }
                var index = upper
                while index > lower && index >= 0 {
                    result.append(index)
                    let (next, overflow) = index.addingReportingOverflow(stepValue)
                    if overflow { break }
                    index = next
                }
            }
            return result
        }
        switch object {
        case .undefined(let undefined):
            throw undefined.error(at: location)
        case .list(let items):
            return .list(indices(count: items.count).map { items[$0] })
        case .tuple(let items):
            return .tuple(indices(count: items.count).map { items[$0] })
        case .string(let text):
            let scalars = Array(text.unicodeScalars)
            var view = String.UnicodeScalarView()
            for index in indices(count: scalars.count) { view.append(scalars[index]) }
            return .string(String(view))
        default:
            return .undefined(Undefined(reason: .element(owner: object.objectTypeDescription, key: "slice")))
        }
    }

    // MARK: Iteration and membership

    /// Python `iter(value)` materialized.
    func iterate(_ value: RuntimeValue, at location: SourceLocation) throws(ChatTemplateError) -> [RuntimeValue] {
        switch value {
        case .undefined: return []
        case .list(let items), .tuple(let items): return items
        case .dictionary(let dictionary): return dictionary.keys
        case .string(let text): return text.unicodeScalars.map { .string(String($0)) }
        default:
            throw .runtime("'\(value.typeName)' object is not iterable", at: location)
        }
    }

    /// Python `needle in container`.
    func contains(_ container: RuntimeValue, _ needle: RuntimeValue, at location: SourceLocation) throws(ChatTemplateError) -> Bool {
        switch container {
        case .undefined:
            return false
        case .string(let text):
            guard case .string(let part) = needle else {
                if case .undefined(let undefined) = needle { throw undefined.error(at: location) }
                throw .runtime("'in <string>' requires string as left operand, not \(needle.typeName)", at: location)
            }
            return Text.contains(text, part)
        case .list(let items), .tuple(let items):
            return items.contains { RuntimeValue.pythonEquals($0, needle) }
        case .dictionary(let dictionary):
            if Dictionary.hashKey(needle) == nil {
                throw .runtime("unhashable type: '\(needle.typeName)'", at: location)
            }
            return dictionary.value(for: needle) != nil
        default:
            throw .runtime("argument of type '\(container.typeName)' is not iterable", at: location)
        }
    }

    // MARK: Operators

    private func compare(_ operation: ComparisonOperator, _ left: RuntimeValue, _ right: RuntimeValue, at location: SourceLocation) throws(ChatTemplateError) -> Bool {
        switch operation {
        case .equal: return RuntimeValue.pythonEquals(left, right)
        case .notEqual: return !RuntimeValue.pythonEquals(left, right)
        case .contains: return try contains(right, left, at: location)
        case .notContains: return !(try contains(right, left, at: location))
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            if case .undefined(let undefined) = left { throw undefined.error(at: location) }
            if case .undefined(let undefined) = right { throw undefined.error(at: location) }
            let (a, b) = operation == .less || operation == .lessOrEqual ? (left, right) : (right, left)
            guard let less = RuntimeValue.pythonLess(a, b) else {
                throw .runtime("'\(operation.rawValue)' not supported between instances of '\(left.typeName)' and '\(right.typeName)'", at: location)
            }
            if operation == .less || operation == .greater { return less }
            return less || RuntimeValue.pythonEquals(a, b)
        }
    }

    private func unary(_ operation: UnaryOperator, _ value: RuntimeValue, at location: SourceLocation) throws(ChatTemplateError) -> RuntimeValue {
        if operation == .not { return .boolean(!value.isTruthy) }
        if case .undefined(let undefined) = value { throw undefined.error(at: location) }
        guard let number = value.numericValue else {
            throw .runtime("bad operand type for unary \(operation.rawValue): '\(value.typeName)'", at: location)
        }
        switch (operation, number) {
        case (.negate, .integer(let x)):
            let (result, overflow) = Int(0).subtractingReportingOverflow(x)
            if overflow { throw .runtime("integer overflow", at: location) }
            return .integer(result)
        case (.negate, .double(let x)): return .double(-x)
        case (_, .integer(let x)): return .integer(x)
        case (_, .double(let x)): return .double(x)
        }
    }

    func binary(_ operation: BinaryOperator, _ left: RuntimeValue, _ right: RuntimeValue, at location: SourceLocation) throws(ChatTemplateError) -> RuntimeValue {
        if operation == .concatenate {
            return .string(try checked(try stringify(left, at: location) + stringify(right, at: location), at: location))
        }
        if case .undefined(let undefined) = left { throw undefined.error(at: location) }
        if case .undefined(let undefined) = right { throw undefined.error(at: location) }
        if let a = left.numericValue, let b = right.numericValue {
            return try arithmetic(operation, a, b, at: location)
        }
        switch (operation, left, right) {
        case let (.add, .string(a), .string(b)):
            return .string(try checked(a + b, at: location))
        case let (.add, .list(a), .list(b)):
            try checkCollection(count: a.count + b.count, at: location)
            return .list(a + b)
        case let (.add, .tuple(a), .tuple(b)):
            try checkCollection(count: a.count + b.count, at: location)
            return .tuple(a + b)
        case (.multiply, .string, _), (.multiply, .list, _), (.multiply, .tuple, _),
             (.multiply, _, .string), (.multiply, _, .list), (.multiply, _, .tuple):
            return try repeatSequence(left, right, at: location)
        case let (.modulo, .string(format), arguments):
            return .string(try checked(try percentFormat(format, arguments, at: location), at: location))
        default:
            break
        }
        if operation == .add {
            switch left {
            case .string, .list, .tuple:
                let name = left.typeName
                throw .runtime("can only concatenate \(name) (not \"\(right.typeName)\") to \(name)", at: location)
            default:
                break
            }
        }
        throw .runtime("unsupported operand type(s) for \(operation.rawValue): '\(left.typeName)' and '\(right.typeName)'", at: location)
    }

    private func repeatSequence(_ left: RuntimeValue, _ right: RuntimeValue, at location: SourceLocation) throws(ChatTemplateError) -> RuntimeValue {
        let (sequence, countValue): (RuntimeValue, RuntimeValue)
        switch left {
        case .string, .list, .tuple: (sequence, countValue) = (left, right)
        default: (sequence, countValue) = (right, left)
        }
        guard case .integer(let rawCount)? = countValue.numericValue.map({ number -> RuntimeValue in
            if case .integer(let value) = number { return .integer(value) }
            return .none
        }) else {
            throw .runtime("can't multiply sequence by non-int of type '\(countValue.typeName)'", at: location)
        }
        let count = max(rawCount, 0)
        switch sequence {
        case .string(let text):
            let size = text.utf8.count.multipliedReportingOverflow(by: count)
            if size.overflow || size.partialValue > limits.maximumOutputLength {
                throw .limit("a string grew beyond \(limits.maximumOutputLength) bytes", at: location)
            }
            return .string(try checked(String(repeating: text, count: count), at: location))
        case .list(let items), .tuple(let items):
            let size = items.count.multipliedReportingOverflow(by: count)
            if size.overflow { throw .limit("a list grew beyond \(limits.maximumCollectionLength) items", at: location) }
            try checkCollection(count: size.partialValue, at: location)
            var result: [RuntimeValue] = []
            result.reserveCapacity(size.partialValue)
            for _ in 0..<count { result += items }
            if case .tuple = sequence { return .tuple(result) }
            return .list(result)
        default:
            throw .runtime("can't multiply sequence by non-int", at: location)
        }
    }

    private func arithmetic(_ operation: BinaryOperator, _ a: RuntimeValue.Number, _ b: RuntimeValue.Number, at location: SourceLocation) throws(ChatTemplateError) -> RuntimeValue {
        if case let (.integer(x), .integer(y)) = (a, b) {
            func checkedResult(_ pair: (partialValue: Int, overflow: Bool)) throws(ChatTemplateError) -> RuntimeValue {
                if pair.overflow { throw .runtime("integer overflow (Python integers are unbounded; this interpreter uses 64 bits)", at: location) }
                return .integer(pair.partialValue)
            }
            switch operation {
            case .add: return try checkedResult(x.addingReportingOverflow(y))
            case .subtract: return try checkedResult(x.subtractingReportingOverflow(y))
            case .multiply: return try checkedResult(x.multipliedReportingOverflow(by: y))
            case .divide:
                if y == 0 { throw .runtime("division by zero", at: location) }
                return .double(Double(x) / Double(y))
            case .floorDivide:
                if y == 0 { throw .runtime("integer division or modulo by zero", at: location) }
                if x == Int.min && y == -1 { throw .runtime("integer overflow", at: location) }
                var quotient = x / y
                if (x % y != 0) && ((x < 0) != (y < 0)) { quotient -= 1 }
                return .integer(quotient)
            case .modulo:
                if y == 0 { throw .runtime("integer division or modulo by zero", at: location) }
                if y == -1 { return .integer(0) }
                var remainder = x % y
                if remainder != 0 && ((remainder < 0) != (y < 0)) { remainder += y }
                return .integer(remainder)
            case .power:
                if y < 0 {
                    if x == 0 { throw .runtime("0.0 cannot be raised to a negative power", at: location) }
                    return .double(Foundation.pow(Double(x), Double(y)))
                }
                var result = 1
                var base = x
                var exponent = y
                while exponent > 0 {
                    if exponent & 1 == 1 {
                        let product = result.multipliedReportingOverflow(by: base)
                        if product.overflow { throw .runtime("integer overflow (Python integers are unbounded; this interpreter uses 64 bits)", at: location) }
                        result = product.partialValue
                    }
                    exponent >>= 1
                    if exponent > 0 {
                        let square = base.multipliedReportingOverflow(by: base)
                        if square.overflow { throw .runtime("integer overflow (Python integers are unbounded; this interpreter uses 64 bits)", at: location) }
                        base = square.partialValue
                    }
                }
                return .integer(result)
            default:
                break
            }
        }
        let x = a.doubleValue
        let y = b.doubleValue
        switch operation {
        case .add: return .double(x + y)
        case .subtract: return .double(x - y)
        case .multiply: return .double(x * y)
        case .divide:
            if y == 0 { throw .runtime("float division by zero", at: location) }
            return .double(x / y)
        case .floorDivide:
            if y == 0 { throw .runtime("float floor division by zero", at: location) }
            return .double((x / y).rounded(.down))
        case .modulo:
            if y == 0 { throw .runtime("float modulo", at: location) }
            var remainder = x.truncatingRemainder(dividingBy: y)
            if remainder != 0 && ((remainder < 0) != (y < 0)) { remainder += y }
            return .double(remainder)
        case .power:
            if x == 0 && y < 0 { throw .runtime("0.0 cannot be raised to a negative power", at: location) }
            return .double(Foundation.pow(x, y))
        default:
            throw .runtime("unsupported operand", at: location)
        }
    }

    // MARK: Calls

    func call(_ function: RuntimeValue, with arguments: Arguments, at location: SourceLocation) throws(ChatTemplateError) -> RuntimeValue {
        switch function {
        case .undefined(let undefined):
            throw undefined.error(at: location)
        case .macro(let macro):
            return try callMacro(macro, with: arguments, at: location)
        case .builtin(let builtin):
            return try callBuiltin(builtin, with: arguments, at: location)
        case let .method(receiver, name):
            return try callMethod(name, on: receiver, with: arguments, at: location)
        default:
            throw .runtime("'\(function.typeName)' object is not callable", at: location)
        }
    }

    private func callMacro(_ macro: TemplateMacro, with arguments: Arguments, at location: SourceLocation) throws(ChatTemplateError) -> RuntimeValue {
        let definition = macro.definition
        let parameters = definition.parameters
        if arguments.positional.count > parameters.count && !definition.usesVariadicPositional {
            throw .runtime("macro '\(definition.name)' takes not more than \(parameters.count) argument(s)", at: location)
        }
        try enter(location)
        defer { leave() }
        let scope = Scope(parent: macro.scope)
        var bound = [RuntimeValue?](repeating: nil, count: parameters.count)
        for (index, value) in arguments.positional.prefix(parameters.count).enumerated() {
            bound[index] = value
        }
        var extraKeywords = Dictionary()
        for (name, value) in arguments.keyword {
            if let index = parameters.firstIndex(where: { $0.name == name }) {
                if bound[index] != nil {
                    throw .runtime("macro '\(definition.name)' got multiple values for argument '\(name)'", at: location)
                }
                bound[index] = value
            } else if definition.usesVariadicKeyword {
                extraKeywords.set(name, value)
            } else {
                throw .runtime("macro '\(definition.name)' takes no keyword argument '\(name)'", at: location)
            }
        }
        for (index, parameter) in parameters.enumerated() {
            if let value = bound[index] {
                scope.set(parameter.name, value)
            } else if let defaultValue = parameter.defaultValue {
                scope.set(parameter.name, try evaluate(defaultValue, in: scope))
            } else {
                scope.set(parameter.name, .undefined(Undefined(reason: .hint("parameter '\(parameter.name)' was not provided"))))
            }
        }
        scope.set("varargs", .tuple(Array(arguments.positional.dropFirst(parameters.count))))
        scope.set("kwargs", .dictionary(extraKeywords))
        var output = ""
        _ = try execute(definition.body, in: scope, into: &output)
        return .string(output)
    }

    private func callBuiltin(_ builtin: Builtin, with arguments: Arguments, at location: SourceLocation) throws(ChatTemplateError) -> RuntimeValue {
        switch builtin {
        case .raiseException:
            let message = arguments.positional.first ?? arguments.keyword.first?.value ?? .none
            throw .raised(message: try stringify(message, at: location))
        case .strftimeNow:
            guard case .string(let format)? = arguments.positional.first else {
                throw .runtime("strftime_now() argument must be str", at: location)
            }
            return .string(DateFormatting.strftime(format, date: now, timeZone: timeZone))
        case .range:
            guard arguments.keyword.isEmpty else {
                throw .runtime("range() takes no keyword arguments", at: location)
            }
            var numbers: [Int] = []
            for value in arguments.positional {
                if case .undefined(let undefined) = value { throw undefined.error(at: location) }
                guard let number = value.integerIndex else {
                    throw .runtime("'\(value.typeName)' object cannot be interpreted as an integer", at: location)
                }
                numbers.append(number)
            }
            let (start, stop, step): (Int, Int, Int)
            switch numbers.count {
            case 1: (start, stop, step) = (0, numbers[0], 1)
            case 2: (start, stop, step) = (numbers[0], numbers[1], 1)
            case 3: (start, stop, step) = (numbers[0], numbers[1], numbers[2])
            default:
                throw .runtime("range expected 1 to 3 arguments, got \(numbers.count)", at: location)
            }
            if step == 0 { throw .runtime("range() arg 3 must not be zero", at: location) }
            let span = step > 0 ? Double(stop) - Double(start) : Double(start) - Double(stop)
            let exactCount = span <= 0 ? 0 : ((span - 1) / Double(step.magnitude)).rounded(.down) + 1
            if exactCount > Double(limits.maximumRangeLength) {
                throw .limit("Range too big. The sandbox blocks ranges larger than MAX_RANGE (\(limits.maximumRangeLength)).", at: location)
            }
            let count = Int(exactCount)
            var values: [RuntimeValue] = []
            values.reserveCapacity(count)
            var current = start
            for _ in 0..<count {
                values.append(.integer(current))
                current &+= step
            }
            return .list(values)
        case .dictionary:
            var dictionary = Dictionary()
            if let first = arguments.positional.first {
                guard arguments.positional.count == 1 else {
                    throw .runtime("dict expected at most 1 argument, got \(arguments.positional.count)", at: location)
                }
                switch first {
                case .dictionary(let other):
                    dictionary = other
                default:
                    for pair in try iterate(first, at: location) {
                        let items = try iterate(pair, at: location)
                        guard items.count == 2 else {
                            throw .runtime("dictionary update sequence element has length \(items.count); 2 is required", at: location)
                        }
                        guard dictionary.set(items[0], items[1]) else {
                            throw .runtime("unhashable type: '\(items[0].typeName)'", at: location)
                        }
                    }
                }
            }
            for (name, value) in arguments.keyword { dictionary.set(name, value) }
            return .dictionary(dictionary)
        case .namespace:
            let namespace = Namespace()
            for value in arguments.positional {
                guard case .dictionary(let dictionary) = value else {
                    throw .runtime("namespace() positional argument must be a mapping", at: location)
                }
                for (key, item) in dictionary.entries { namespace.attributes.set(key, item) }
            }
            for (name, value) in arguments.keyword { namespace.attributes.set(name, value) }
            return .namespace(namespace)
        case .unsupported(let name):
            throw .unsupported("the global function '\(name)'", at: location)
        }
    }
}

extension RuntimeValue {
    /// An integer usable as an index (Python `int` or `bool`).
    var integerIndex: Int? {
        switch self {
        case .integer(let value): return value
        case .boolean(let value): return value ? 1 : 0
        default: return nil
        }
    }
}
