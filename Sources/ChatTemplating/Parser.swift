// MARK: - Parser

/// Recursive-descent parser following Jinja2's grammar (`jinja2/parser.py`), producing a
/// tree of `Node`s. Nesting is bounded so hostile templates cannot exhaust the stack.
struct TemplateParser {
    private let tokens: [Token]
    private var index = 0
    private let maximumNesting: Int
    private var nesting = 0
    /// Inside an `if` or conditional expression (Jinja's "soft frame"): unknown filters and
    /// tests are reported when evaluated instead of at parse time.
    private var isSoft = false
    private var loopDepth = 0

    init(tokens: [Token], maximumNesting: Int) {
        self.tokens = tokens
        self.maximumNesting = maximumNesting
    }

    static func parse(_ source: String, maximumNesting: Int) throws(ChatTemplateError) -> [Node] {
        let tokens = try Lexer.tokenize(source)
        var parser = TemplateParser(tokens: tokens, maximumNesting: maximumNesting)
        let (body, _) = try parser.parseBody(until: [], opener: nil)
        return body
    }

    // MARK: Token stream

    private var current: Token { tokens[min(index, tokens.count - 1)] }

    private func peek(_ offset: Int = 1) -> Token {
        tokens[min(index + offset, tokens.count - 1)]
    }

    private mutating func advance() -> Token {
        let token = current
        if index < tokens.count - 1 { index += 1 }
        return token
    }

    private func isSymbol(_ symbol: String, _ token: Token? = nil) -> Bool {
        if case .symbol(let value) = (token ?? current).kind { return value == symbol }
        return false
    }

    private func isName(_ name: String, _ token: Token? = nil) -> Bool {
        if case .name(let value) = (token ?? current).kind { return value == name }
        return false
    }

    private mutating func skip(symbol: String) -> Bool {
        guard isSymbol(symbol) else { return false }
        _ = advance()
        return true
    }

    private mutating func skip(name: String) -> Bool {
        guard isName(name) else { return false }
        _ = advance()
        return true
    }

    private static func describe(_ kind: Token.Kind) -> String {
        switch kind {
        case .text: return "template data"
        case .variableBegin: return "begin of print statement"
        case .variableEnd: return "end of print statement"
        case .blockBegin: return "begin of statement block"
        case .blockEnd: return "end of statement block"
        case .name(let name): return name
        case .string: return "string"
        case .integer: return "integer"
        case .float: return "float"
        case .symbol(let symbol): return symbol
        case .endOfTemplate: return "end of template"
        }
    }

    private mutating func expect(symbol: String) throws(ChatTemplateError) {
        guard isSymbol(symbol) else {
            throw .syntax("expected '\(symbol)', got '\(Self.describe(current.kind))'", at: current.location)
        }
        _ = advance()
    }

    private mutating func expectName() throws(ChatTemplateError) -> String {
        guard case .name(let name) = current.kind else {
            throw .syntax("expected a name, got '\(Self.describe(current.kind))'", at: current.location)
        }
        _ = advance()
        return name
    }

    private mutating func expect(name expected: String) throws(ChatTemplateError) {
        guard isName(expected) else {
            throw .syntax("expected '\(expected)', got '\(Self.describe(current.kind))'", at: current.location)
        }
        _ = advance()
    }

    private mutating func expectBlockEnd() throws(ChatTemplateError) {
        guard case .blockEnd = current.kind else {
            throw .syntax("expected end of statement block, got '\(Self.describe(current.kind))'", at: current.location)
        }
        _ = advance()
    }

    private mutating func enter(_ location: SourceLocation) throws(ChatTemplateError) {
        nesting += 1
        if nesting > maximumNesting {
            throw .limit("template nesting deeper than \(maximumNesting) levels", at: location)
        }
    }

    private mutating func leave() { nesting -= 1 }

    // MARK: Statements

    /// Parses nodes until a `{% name %}` whose name is in `endTags`; returns the nodes and that
    /// name, leaving the stream just after it. `opener` names the block for error messages.
    private mutating func parseBody(
        until endTags: Set<String>, opener: (name: String, location: SourceLocation)?
    ) throws(ChatTemplateError) -> ([Node], String?) {
        var body: [Node] = []
        while true {
            let token = current
            switch token.kind {
            case .text(let text):
                _ = advance()
                body.append(.text(text))
            case .variableBegin:
                _ = advance()
                let expression = try parseTuple(withCondition: true, endNames: [])
                guard case .variableEnd = current.kind else {
                    throw .syntax("expected end of print statement, got '\(Self.describe(current.kind))'", at: current.location)
                }
                _ = advance()
                body.append(.output(expression))
            case .blockBegin:
                _ = advance()
                guard case .name(let tag) = current.kind else {
                    throw .syntax("tag name expected", at: current.location)
                }
                if endTags.contains(tag) {
                    _ = advance()
                    return (body, tag)
                }
                if let node = try parseStatement(tag, at: token.location, opener: opener, endTags: endTags) {
                    body.append(node)
                }
            case .endOfTemplate:
                if let opener {
                    let expected = endTags.sorted().map { "'\($0)'" }.joined(separator: " or ")
                    throw .syntax(
                        "unexpected end of template: the '\(opener.name)' block opened here was never closed (expected \(expected))",
                        at: opener.location)
                }
                return (body, nil)
            default:
                throw .syntax("unexpected '\(Self.describe(token.kind))'", at: token.location)
            }
        }
    }

    private static let endTagNames: Set<String> = [
        "endfor", "endif", "elif", "else", "endmacro", "endset", "endfilter", "endwith",
        "endgeneration", "endcall", "endblock", "endraw", "endautoescape",
    ]

    private static let unsupportedTags: Set<String> = [
        "block", "extends", "include", "import", "from", "call", "autoescape",
    ]

    /// Parses the statement whose `{%` is at `location`; the stream is at its tag name.
    private mutating func parseStatement(
        _ tag: String, at location: SourceLocation, opener: (name: String, location: SourceLocation)?, endTags: Set<String>
    ) throws(ChatTemplateError) -> Node? {
        try enter(location)
        defer { leave() }
        switch tag {
        case "if":
            _ = advance()
            return try parseIf(location: location)
        case "for":
            _ = advance()
            return try parseFor(location: location)
        case "set":
            _ = advance()
            return try parseSet(location: location)
        case "macro":
            _ = advance()
            return try parseMacro(location: location)
        case "filter":
            _ = advance()
            let filters = try parseFilterChain(startInline: true)
            try expectBlockEnd()
            let body = try parseNestedBody(until: ["endfilter"], opener: ("filter", location), soft: false)
            try expectBlockEnd()
            return .filterBlock(filters, body)
        case "with":
            _ = advance()
            var assignments: [(AssignmentTarget, Expression)] = []
            while !isBlockEnd {
                if !assignments.isEmpty { try expect(symbol: ",") }
                let target = try parseAssignmentTarget(allowNamespace: false, endNames: [])
                try expect(symbol: "=")
                assignments.append((target, try parseExpression()))
            }
            try expectBlockEnd()
            let body = try parseNestedBody(until: ["endwith"], opener: ("with", location), soft: false)
            try expectBlockEnd()
            return .scope(assignments, body, location)
        case "generation":
            _ = advance()
            try expectBlockEnd()
            let body = try parseNestedBody(until: ["endgeneration"], opener: ("generation", location), soft: isSoft)
            try expectBlockEnd()
            return .generation(body)
        case "print":
            _ = advance()
            let expression = try parseTuple(withCondition: true, endNames: [])
            try expectBlockEnd()
            return .output(expression)
        case "break", "continue":
            _ = advance()
            guard loopDepth > 0 else {
                throw .syntax("'\(tag)' outside of a loop", at: location)
            }
            try expectBlockEnd()
            return tag == "break" ? .breakLoop(location) : .continueLoop(location)
        default:
            if Self.unsupportedTags.contains(tag) {
                throw .unsupported("the '\(tag)' tag", at: location)
            }
            if Self.endTagNames.contains(tag) || endTags.contains(tag) {
                var message = "encountered unexpected tag '\(tag)'"
                if let opener {
                    let expected = endTags.sorted().map { "'\($0)'" }.joined(separator: " or ")
                    message += "; the innermost open block is '\(opener.name)' (expected \(expected))"
                }
                throw .syntax(message, at: location)
            }
            throw .syntax("encountered unknown tag '\(tag)'", at: location)
        }
    }

    private var isBlockEnd: Bool {
        if case .blockEnd = current.kind { return true }
        return false
    }

    private mutating func parseNestedBody(
        until endTags: Set<String>, opener: (String, SourceLocation), soft: Bool
    ) throws(ChatTemplateError) -> [Node] {
        let savedSoft = isSoft
        isSoft = soft
        defer { isSoft = savedSoft }
        let (body, _) = try parseBody(until: endTags, opener: opener)
        return body
    }

    private mutating func parseIf(location: SourceLocation) throws(ChatTemplateError) -> Node {
        let savedSoft = isSoft
        isSoft = true
        defer { isSoft = savedSoft }
        var branches: [ConditionalBranch] = []
        var condition = try parseTuple(withCondition: false, endNames: [])
        try expectBlockEnd()
        while true {
            let (body, end) = try parseBody(until: ["elif", "else", "endif"], opener: ("if", location))
            branches.append(ConditionalBranch(condition: condition, body: body))
            switch end {
            case "elif":
                condition = try parseTuple(withCondition: false, endNames: [])
                try expectBlockEnd()
            case "else":
                try expectBlockEnd()
                let (otherwise, _) = try parseBody(until: ["endif"], opener: ("if", location))
                try expectBlockEnd()
                return .conditional(branches, otherwise: otherwise)
            default:
                try expectBlockEnd()
                return .conditional(branches, otherwise: [])
            }
        }
    }

    private mutating func parseFor(location: SourceLocation) throws(ChatTemplateError) -> Node {
        let target = try parseAssignmentTarget(allowNamespace: false, endNames: ["in"])
        try expect(name: "in")
        let iterable = try parseTuple(withCondition: false, endNames: ["recursive"])
        var condition: Expression?
        if skip(name: "if") {
            condition = try parseExpression()
        }
        if isName("recursive") {
            throw .unsupported("recursive for loops", at: current.location)
        }
        try expectBlockEnd()
        let savedSoft = isSoft
        isSoft = false
        loopDepth += 1
        let (body, end) = try parseBody(until: ["endfor", "else"], opener: ("for", location))
        loopDepth -= 1
        var elseBody: [Node] = []
        if end == "else" {
            try expectBlockEnd()
            (elseBody, _) = try parseBody(until: ["endfor"], opener: ("for", location))
        }
        isSoft = savedSoft
        try expectBlockEnd()
        return .forLoop(ForLoop(
            target: target, iterable: iterable, condition: condition,
            body: body, elseBody: elseBody, location: location))
    }

    private mutating func parseSet(location: SourceLocation) throws(ChatTemplateError) -> Node {
        let target = try parseAssignmentTarget(allowNamespace: true, endNames: [])
        if skip(symbol: "=") {
            let value = try parseTuple(withCondition: true, endNames: [])
            try expectBlockEnd()
            return .assignment(target, value, location)
        }
        var filters: [FilterApplication] = []
        if isSymbol("|") {
            filters = try parseFilterChain(startInline: false)
        }
        try expectBlockEnd()
        let body = try parseNestedBody(until: ["endset"], opener: ("set", location), soft: false)
        try expectBlockEnd()
        return .blockAssignment(target, filters, body, location)
    }

    private mutating func parseMacro(location: SourceLocation) throws(ChatTemplateError) -> Node {
        let name = try expectName()
        try expect(symbol: "(")
        var parameters: [MacroParameter] = []
        while !isSymbol(")") {
            if !parameters.isEmpty { try expect(symbol: ",") }
            if isSymbol(")") { break }
            let parameterLocation = current.location
            let parameterName = try expectName()
            if skip(symbol: "=") {
                parameters.append(MacroParameter(name: parameterName, defaultValue: try parseExpression()))
            } else {
                if parameters.contains(where: { $0.defaultValue != nil }) {
                    throw .syntax("non-default argument follows default argument", at: parameterLocation)
                }
                parameters.append(MacroParameter(name: parameterName, defaultValue: nil))
            }
        }
        try expect(symbol: ")")
        try expectBlockEnd()
        let savedLoopDepth = loopDepth
        loopDepth = 0
        let body = try parseNestedBody(until: ["endmacro"], opener: ("macro", location), soft: false)
        loopDepth = savedLoopDepth
        try expectBlockEnd()
        return .macro(MacroDefinition(name: name, parameters: parameters, body: body, location: location))
    }

    private mutating func parseAssignmentTarget(
        allowNamespace: Bool, endNames: Set<String>
    ) throws(ChatTemplateError) -> AssignmentTarget {
        let location = current.location
        if allowNamespace, case .name(let name) = current.kind, isSymbol(".", peek()) {
            _ = advance()
            _ = advance()
            let attribute = try expectName()
            return .namespaceAttribute(name, attribute)
        }
        var targets: [AssignmentTarget] = []
        var isTuple = false
        while true {
            if !targets.isEmpty {
                try expect(symbol: ",")
            }
            if isTupleEnd(endNames) || isSymbol("=") { break }
            targets.append(try parseSimpleTarget())
            if isSymbol(",") {
                isTuple = true
            } else {
                break
            }
        }
        if !isTuple, let single = targets.first { return single }
        guard !targets.isEmpty else {
            throw .syntax("expected an assignment target, got '\(Self.describe(current.kind))'", at: location)
        }
        return .tuple(targets)
    }

    private mutating func parseSimpleTarget() throws(ChatTemplateError) -> AssignmentTarget {
        let location = current.location
        if skip(symbol: "(") {
            try enter(location)
            defer { leave() }
            let inner = try parseAssignmentTarget(allowNamespace: false, endNames: [])
            try expect(symbol: ")")
            if case .tuple = inner { return inner }
            return inner
        }
        guard case .name(let name) = current.kind else {
            throw .syntax("can't assign to '\(Self.describe(current.kind))'", at: location)
        }
        if ["true", "false", "none", "True", "False", "None"].contains(name) {
            throw .syntax("can't assign to constant '\(name)'", at: location)
        }
        _ = advance()
        return .name(name)
    }

    // MARK: Expressions

    private func isTupleEnd(_ endNames: Set<String>) -> Bool {
        switch current.kind {
        case .variableEnd, .blockEnd, .endOfTemplate:
            return true
        case .symbol(let symbol):
            return symbol == ")"
        case .name(let name):
            return endNames.contains(name)
        default:
            return false
        }
    }

    /// Jinja's `parse_tuple`: a single expression, or a comma-separated tuple without parentheses.
    private mutating func parseTuple(
        withCondition: Bool, endNames: Set<String>, explicitParentheses: Bool = false
    ) throws(ChatTemplateError) -> Expression {
        let location = current.location
        var items: [Expression] = []
        var isTuple = false
        while true {
            if !items.isEmpty { try expect(symbol: ",") }
            if isTupleEnd(endNames) { break }
            items.append(withCondition ? try parseExpression() : try parseOr())
            if isSymbol(",") {
                isTuple = true
            } else {
                break
            }
        }
        if !isTuple {
            if let single = items.first { return single }
            if !explicitParentheses {
                throw .syntax("expected an expression, got '\(Self.describe(current.kind))'", at: current.location)
            }
        }
        return .tuple(items, location)
    }

    private mutating func parseExpression() throws(ChatTemplateError) -> Expression {
        try parseConditional()
    }

    private mutating func parseConditional() throws(ChatTemplateError) -> Expression {
        var expression = try parseOr()
        while isName("if") {
            let location = current.location
            _ = advance()
            try enter(location)
            defer { leave() }
            let savedSoft = isSoft
            isSoft = true
            defer { isSoft = savedSoft }
            let condition = try parseOr()
            var otherwise: Expression?
            if skip(name: "else") {
                otherwise = try parseConditional()
            }
            expression = .conditional(condition: condition, then: expression, otherwise: otherwise, location)
        }
        return expression
    }

    private mutating func parseOr() throws(ChatTemplateError) -> Expression {
        var left = try parseAnd()
        while isName("or") {
            let location = advance().location
            left = .binary(.or, left, try parseAnd(), location)
        }
        return left
    }

    private mutating func parseAnd() throws(ChatTemplateError) -> Expression {
        var left = try parseNot()
        while isName("and") {
            let location = advance().location
            left = .binary(.and, left, try parseNot(), location)
        }
        return left
    }

    private mutating func parseNot() throws(ChatTemplateError) -> Expression {
        if isName("not") {
            let location = advance().location
            try enter(location)
            defer { leave() }
            return .unary(.not, try parseNot(), location)
        }
        return try parseComparison()
    }

    private mutating func parseComparison() throws(ChatTemplateError) -> Expression {
        let location = current.location
        let first = try parseMath1()
        var rest: [(ComparisonOperator, Expression)] = []
        while true {
            let comparison: ComparisonOperator
            if case .symbol(let symbol) = current.kind, let found = ComparisonOperator(rawValue: symbol),
               symbol != "in" {
                comparison = found
                _ = advance()
            } else if isName("in") {
                comparison = .contains
                _ = advance()
            } else if isName("not"), isName("in", peek()) {
                comparison = .notContains
                _ = advance()
                _ = advance()
            } else {
                break
            }
            rest.append((comparison, try parseMath1()))
        }
        return rest.isEmpty ? first : .comparison(first, rest, location)
    }

    private mutating func parseMath1() throws(ChatTemplateError) -> Expression {
        var left = try parseConcatenation()
        while isSymbol("+") || isSymbol("-") {
            let token = advance()
            let operation: BinaryOperator = isSymbol("+", token) ? .add : .subtract
            left = .binary(operation, left, try parseConcatenation(), token.location)
        }
        return left
    }

    private mutating func parseConcatenation() throws(ChatTemplateError) -> Expression {
        var left = try parseMath2()
        while isSymbol("~") {
            let location = advance().location
            left = .binary(.concatenate, left, try parseMath2(), location)
        }
        return left
    }

    private mutating func parseMath2() throws(ChatTemplateError) -> Expression {
        var left = try parsePower()
        while true {
            let operation: BinaryOperator
            switch current.kind {
            case .symbol("*"): operation = .multiply
            case .symbol("/"): operation = .divide
            case .symbol("//"): operation = .floorDivide
            case .symbol("%"): operation = .modulo
            default: return left
            }
            let location = advance().location
            left = .binary(operation, left, try parsePower(), location)
        }
    }

    private mutating func parsePower() throws(ChatTemplateError) -> Expression {
        var left = try parseUnary(withFilter: true)
        while isSymbol("**") {
            let location = advance().location
            left = .binary(.power, left, try parseUnary(withFilter: true), location)
        }
        return left
    }

    private mutating func parseUnary(withFilter: Bool) throws(ChatTemplateError) -> Expression {
        let location = current.location
        try enter(location)
        defer { leave() }
        var expression: Expression
        if isSymbol("-") {
            _ = advance()
            expression = .unary(.negate, try parseUnary(withFilter: false), location)
        } else if isSymbol("+") {
            _ = advance()
            expression = .unary(.plus, try parseUnary(withFilter: false), location)
        } else {
            expression = try parsePrimary()
        }
        expression = try parsePostfix(expression)
        if withFilter {
            expression = try parseFilterExpression(expression)
        }
        return expression
    }

    private mutating func parsePrimary() throws(ChatTemplateError) -> Expression {
        let token = current
        switch token.kind {
        case .name(let name):
            _ = advance()
            switch name {
            case "true", "True": return .literal(.boolean(true), token.location)
            case "false", "False": return .literal(.boolean(false), token.location)
            case "none", "None": return .literal(.none, token.location)
            default: return .name(name, token.location)
            }
        case .string(var value):
            _ = advance()
            while case .string(let next) = current.kind {
                value += next
                _ = advance()
            }
            return .literal(.string(value), token.location)
        case .integer(let value):
            _ = advance()
            return .literal(.integer(value), token.location)
        case .float(let value):
            _ = advance()
            return .literal(.double(value), token.location)
        case .symbol("("):
            _ = advance()
            let expression = try parseTuple(withCondition: true, endNames: [], explicitParentheses: true)
            try expect(symbol: ")")
            return expression
        case .symbol("["):
            _ = advance()
            var items: [Expression] = []
            while !isSymbol("]") {
                if !items.isEmpty { try expect(symbol: ",") }
                if isSymbol("]") { break }
                items.append(try parseExpression())
            }
            try expect(symbol: "]")
            return .list(items, token.location)
        case .symbol("{"):
            _ = advance()
            var entries: [DictionaryEntry] = []
            while !isSymbol("}") {
                if !entries.isEmpty { try expect(symbol: ",") }
                if isSymbol("}") { break }
                let key = try parseExpression()
                try expect(symbol: ":")
                entries.append(DictionaryEntry(key: key, value: try parseExpression()))
            }
            try expect(symbol: "}")
            return .dictionary(entries, token.location)
        default:
            throw .syntax("unexpected '\(Self.describe(token.kind))'", at: token.location)
        }
    }

    private mutating func parsePostfix(_ base: Expression) throws(ChatTemplateError) -> Expression {
        var expression = base
        while true {
            if isSymbol(".") || isSymbol("[") {
                expression = try parseSubscript(expression)
            } else if isSymbol("(") {
                expression = try parseCall(expression)
            } else {
                return expression
            }
        }
    }

    private mutating func parseFilterExpression(_ base: Expression) throws(ChatTemplateError) -> Expression {
        var expression = base
        while true {
            if isSymbol("|") {
                for filter in try parseFilterChain(startInline: false) {
                    expression = .filter(expression, filter.name, filter.arguments, filter.location)
                }
            } else if isName("is") {
                expression = try parseTest(expression)
            } else if isSymbol("(") {
                expression = try parseCall(expression)
            } else {
                return expression
            }
        }
    }

    private mutating func parseSubscript(_ base: Expression) throws(ChatTemplateError) -> Expression {
        let token = advance()
        if isSymbol(".", token) {
            let attributeToken = current
            switch attributeToken.kind {
            case .name(let name):
                _ = advance()
                return .attribute(base, name, token.location)
            case .integer(let value):
                _ = advance()
                return .item(base, .literal(.integer(value), attributeToken.location), token.location)
            default:
                throw .syntax("expected name or number after '.'", at: attributeToken.location)
            }
        }
        // '['
        var arguments: [Expression] = []
        while !isSymbol("]") {
            if !arguments.isEmpty {
                try expect(symbol: ",")
                if isSymbol("]") { break }
            }
            arguments.append(try parseSubscribed())
        }
        try expect(symbol: "]")
        let index: Expression
        if arguments.count == 1, let only = arguments.first {
            index = only
        } else if arguments.isEmpty {
            throw .syntax("expected a subscript", at: token.location)
        } else {
            index = .tuple(arguments, token.location)
        }
        return .item(base, index, token.location)
    }

    private mutating func parseSubscribed() throws(ChatTemplateError) -> Expression {
        let location = current.location
        var start: Expression?
        if isSymbol(":") {
            _ = advance()
        } else {
            let expression = try parseExpression()
            guard isSymbol(":") else { return expression }
            _ = advance()
            start = expression
        }
        var stop: Expression?
        if !isSymbol("]") && !isSymbol(",") && !isSymbol(":") {
            stop = try parseExpression()
        }
        var step: Expression?
        if skip(symbol: ":") {
            if !isSymbol("]") && !isSymbol(",") {
                step = try parseExpression()
            }
        }
        return .slice(start: start, stop: stop, step: step, location)
    }

    private mutating func parseCallArguments() throws(ChatTemplateError) -> CallArguments {
        let open = current
        try expect(symbol: "(")
        var arguments = CallArguments()
        var first = true
        while !isSymbol(")") {
            if !first {
                try expect(symbol: ",")
                if isSymbol(")") { break }
            }
            first = false
            let location = current.location
            if isSymbol("*") {
                _ = advance()
                guard arguments.variadicPositional == nil, arguments.variadicKeyword == nil else {
                    throw .syntax("invalid syntax for function call expression", at: location)
                }
                arguments.variadicPositional = try parseExpression()
            } else if isSymbol("**") {
                _ = advance()
                guard arguments.variadicKeyword == nil else {
                    throw .syntax("invalid syntax for function call expression", at: location)
                }
                arguments.variadicKeyword = try parseExpression()
            } else if case .name(let name) = current.kind, isSymbol("=", peek()) {
                guard arguments.variadicKeyword == nil else {
                    throw .syntax("invalid syntax for function call expression", at: location)
                }
                _ = advance()
                _ = advance()
                arguments.keyword.append(KeywordArgument(name: name, value: try parseExpression()))
            } else {
                guard arguments.keyword.isEmpty, arguments.variadicPositional == nil, arguments.variadicKeyword == nil else {
                    throw .syntax("invalid syntax for function call expression", at: location)
                }
                arguments.positional.append(try parseExpression())
            }
        }
        guard isSymbol(")") else {
            throw .syntax("expected ')' to close the call opened here", at: open.location)
        }
        _ = advance()
        return arguments
    }

    private mutating func parseCall(_ callee: Expression) throws(ChatTemplateError) -> Expression {
        let location = current.location
        try enter(location)
        defer { leave() }
        return .call(callee, try parseCallArguments(), location)
    }

    private mutating func parseDottedName() throws(ChatTemplateError) -> String {
        var name = try expectName()
        while isSymbol(".") {
            _ = advance()
            name += "." + (try expectName())
        }
        return name
    }

    /// `| name(args) | name …` (when `startInline`, the first filter has no leading pipe).
    private mutating func parseFilterChain(startInline: Bool) throws(ChatTemplateError) -> [FilterApplication] {
        var filters: [FilterApplication] = []
        var inline = startInline
        while isSymbol("|") || inline {
            if !inline { _ = advance() }
            inline = false
            let location = current.location
            let name = try parseDottedName()
            let arguments = isSymbol("(") ? try parseCallArguments() : .empty
            filters.append(FilterApplication(name: try resolveFilter(name, at: location), arguments: arguments, location: location))
        }
        return filters
    }

    private mutating func parseTest(_ base: Expression) throws(ChatTemplateError) -> Expression {
        let location = advance().location  // 'is'
        let negated = skip(name: "not")
        let nameLocation = current.location
        let name = try parseDottedName()
        var arguments = CallArguments.empty
        if isSymbol("(") {
            arguments = try parseCallArguments()
        } else {
            var takesArgument = false
            switch current.kind {
            case .name(let word):
                takesArgument = !["else", "or", "and"].contains(word)
                if word == "is" {
                    throw .syntax("You cannot chain multiple tests with is", at: current.location)
                }
            case .string, .integer, .float, .symbol("("), .symbol("["), .symbol("{"):
                takesArgument = true
            default:
                break
            }
            if takesArgument {
                let argument = try parsePostfix(try parsePrimary())
                arguments.positional = [argument]
            }
        }
        let test: Expression = .test(base, try resolveTest(name, at: nameLocation), arguments, location)
        return negated ? .unary(.not, test, location) : test
    }

    private func resolveFilter(_ name: String, at location: SourceLocation) throws(ChatTemplateError) -> Callable<FilterName> {
        if let filter = FilterName(jinjaName: name) { return .known(filter) }
        if FilterName.unsupportedNames.contains(name) { return .unsupported(name) }
        if isSoft { return .missing(name) }
        throw .syntax("No filter named '\(name)'.", at: location)
    }

    private func resolveTest(_ name: String, at location: SourceLocation) throws(ChatTemplateError) -> Callable<TestName> {
        if let test = TestName(jinjaName: name) { return .known(test) }
        if isSoft { return .missing(name) }
        throw .syntax("No test named '\(name)'.", at: location)
    }
}
