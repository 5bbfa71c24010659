/// GBNF, llama.cpp's grammar text format, parsed into the grammar IR.
///
///     root   ::= expr
///     expr   ::= term (("+" | "-") term)*
///     term   ::= [0-9]+ | "(" expr ")"
///
/// Rules become `Grammar` rules of the same names; each body becomes one fragment of the
/// grammar's shared byte automaton, with string literals and character classes written in
/// UTF-8 and rule references as rule edges.
extension Grammar {
    /// Parses a GBNF grammar text (llama.cpp's `grammars/README.md` format).
    ///
    /// Syntax:
    /// - Rules `name ::= body`, names made of `[a-zA-Z0-9_-]`, each definition starting a line.
    /// - Alternatives `a | b`, sequences `a b`, groups `( … )`, the empty sequence.
    /// - String literals `"…"` and character classes `[…]`, `[^…]` (ranges `a-z`; a negated
    ///   class is the complement over all Unicode scalars) with the escapes `\n \r \t \\ \"
    ///   \[ \]` and `\xHH \uHHHH \UHHHHHHHH` (a scalar value, written in UTF-8 like every
    ///   other character); `.` for any one scalar.
    /// - Repetitions `*`, `+`, `?`, `{m}`, `{m,}`, `{,n}`, `{m,n}` after any item or group.
    /// - Rule references, before or after the referenced rule's definition.
    /// - Comments from `#` to the end of the line; spaces and tabs anywhere between items.
    ///
    /// Newlines: as in llama.cpp, newlines may separate rules, and may appear anywhere inside
    /// parentheses and after `::=` or `|`. A little more lenient than llama.cpp, a body also
    /// continues on the next line when that line does not start a new definition
    /// (`name ::=`): every llama.cpp grammar reads the same, and a continuation line that
    /// llama.cpp would reject joins the rule above instead.
    ///
    /// - Parameters:
    ///   - text: The grammar text.
    ///   - rootRule: The start rule's name.
    ///   - repetitionLimit: The largest count `{m,n}` may use.
    /// - Throws: `GrammarError.invalidGrammarText` with the 1-based line and column (in
    ///   Unicode scalars) of a syntax error, an undefined or twice-defined rule, nesting deeper
    ///   than `GrammarTextParser.nestingLimit` parentheses, or a missing start rule (at 1:1);
    ///   `.budgetExceeded` for a count above `repetitionLimit` or repetitions whose copies
    ///   would exceed `GrammarTextParser.stateLimit` automaton states.
    public init(
        ebnf text: String, rootRule: String = "root", repetitionLimit: Int = 1000, budget: CompilationBudget = CompilationBudget()
    ) throws(GrammarError) {
        self = try CompilationMeter.metering(budget) { () throws(GrammarError) in
            var parser = GrammarTextParser(text, repetitionLimit: repetitionLimit)
            return try parser.parse(rootRule: rootRule)
        }
    }
}

/// A single-pass parser of GBNF text that builds the grammar as it reads.
///
/// Parentheses are tracked on an explicit stack (`groups`), not by recursion, so hostile
/// nesting costs heap, never call stack, and is cut off at `nestingLimit`.
struct GrammarTextParser {
    /// The deepest nesting of parentheses accepted.
    static let nestingLimit = 256
    /// The most automaton states repetitions may grow the grammar to.
    static let stateLimit = 1_000_000

    /// An item of a sequence not yet joined to its neighbours, so a repetition can still
    /// apply to it, with the number of automaton states built for it.
    private struct Piece {
        var fragment: Fragment
        var size: Int
    }

    /// An open parenthesis, or the rule body itself at the bottom of the stack.
    private struct Group {
        /// Offset of the `(` (of the body's first item for the bottom group).
        var opening: Int
        /// The automaton's state count when the group opened.
        var firstState: Int
        /// The alternatives before the last `|`, each already one fragment.
        var alternatives: [Fragment] = []
        /// The alternative being read.
        var sequence: [Piece] = []
    }

    private let scalars: [Unicode.Scalar]
    private let repetitionLimit: Int
    /// Offset in `scalars` of the next character to read.
    private var position = 0
    private var grammar = Grammar()
    private var groups: [Group] = []
    private var ruleIndices: [String: Int32] = [:]
    /// For each defined rule, the offset of the name in its definition.
    private var definitions: [Int32: Int] = [:]
    /// For each referenced rule, the offset of its first reference.
    private var firstReferences: [Int32: Int] = [:]

    init(_ text: String, repetitionLimit: Int) {
        scalars = Array(text.unicodeScalars)
        self.repetitionLimit = repetitionLimit
    }

    // MARK: Rules

    /// Reads every rule, then checks references and the start rule.
    mutating func parse(rootRule: String) throws(GrammarError) -> Grammar {
        skipSpace(acrossLines: true)
        while position < scalars.count {
            try parseRule()
        }
        try checkReferences()
        guard let root = ruleIndices[rootRule], definitions[root] != nil else {
            throw .invalidGrammarText(line: 1, column: 1, message: "no rule named '\(rootRule)' (the start rule) is defined")
        }
        grammar.root = root
        return grammar
    }

    /// `name ::= body`, with the position at the name.
    private mutating func parseRule() throws(GrammarError) {
        let nameStart = position
        let nameEnd = Self.nameEnd(in: scalars, from: nameStart)
        guard nameEnd > nameStart else {
            throw failure(at: position, "expected a rule name, found \(describe(scalars[position]))")
        }
        let name = text(nameStart ..< nameEnd)
        position = nameEnd
        skipSpace(acrossLines: false)
        guard startsDefinitionSymbol(at: position) else {
            throw failure(at: position, "expected '::=' after the rule name '\(name)'")
        }
        position += 3
        let rule = ruleIndex(named: name)
        if let previous = definitions[rule] {
            throw failure(at: nameStart, "rule '\(name)' is already defined at line \(location(of: previous).line)")
        }
        definitions[rule] = nameStart
        let body = try parseBody()
        grammar.define(rule, as: body)
    }

    /// The rule's index, declaring it on first use.
    private mutating func ruleIndex(named name: String) -> Int32 {
        if let index = ruleIndices[name] { return index }
        let index = grammar.declareRule(name)
        ruleIndices[name] = index
        return index
    }

    /// Every referenced rule must be defined; reports the earliest offending reference.
    private func checkReferences() throws(GrammarError) {
        let undefined = firstReferences.filter { definitions[$0.key] == nil }
        guard let first = undefined.min(by: { $0.value < $1.value }) else { return }
        let name = grammar.rules[Int(first.key)].name
        throw failure(at: first.value, "rule '\(name)' is referenced but never defined")
    }

    // MARK: Bodies

    /// Alternatives up to the end of the text or the next definition.
    private mutating func parseBody() throws(GrammarError) -> Fragment {
        groups = [Group(opening: position, firstState: grammar.automaton.stateCount)]
        while true {
            let crossedLine = skipSpace(acrossLines: true)
            let atEnd = position == scalars.count
            if atEnd || startsRuleDefinition(at: position) {
                if groups.count > 1 { throw failure(at: groups[groups.count - 1].opening, "'(' is never closed") }
                if !atEnd && !crossedLine {
                    throw failure(at: position, "a rule definition must start on a new line")
                }
                return finish(groups.removeLast())
            }
            try parseItem()
        }
    }

    /// One item, operator, `|` or parenthesis at the position.
    private mutating func parseItem() throws(GrammarError) {
        let scalar = scalars[position]
        switch scalar {
        case "\"":
            let bytes = try parseLiteral()
            append { automaton in automaton.literal(bytes) }
        case "[":
            let set = try parseClass()
            append { automaton in Lowering.utf8(set, into: &automaton) }
        case ".":
            position += 1
            append { automaton in Lowering.utf8(.all, into: &automaton) }
        case "(":
            try openGroup()
        case ")":
            try closeGroup()
        case "|":
            position += 1
            endAlternative()
        case "*", "+", "?":
            let start = position
            position += 1
            let maximum: Int? = scalar == "?" ? 1 : nil
            try repeatLastItem(minimum: scalar == "+" ? 1 : 0, maximum: maximum, operatorAt: start)
        case "{":
            let start = position
            let bounds = try parseBounds()
            try repeatLastItem(minimum: bounds.minimum, maximum: bounds.maximum, operatorAt: start)
        default:
            guard Self.isNameCharacter(scalar) else {
                throw failure(at: position, "unexpected \(describe(scalar))")
            }
            parseReference()
        }
    }

    /// A rule reference at the position.
    private mutating func parseReference() {
        let start = position
        position = Self.nameEnd(in: scalars, from: start)
        let rule = ruleIndex(named: text(start ..< position))
        if firstReferences[rule] == nil { firstReferences[rule] = start }
        append { automaton in automaton.rule(rule) }
    }

    // MARK: Groups and sequences

    /// Appends an item built by `build` to the sequence being read.
    private mutating func append(_ build: (inout ByteNFA) -> Fragment) {
        let before = grammar.automaton.stateCount
        let fragment = build(&grammar.automaton)
        let piece = Piece(fragment: fragment, size: grammar.automaton.stateCount - before)
        groups[groups.count - 1].sequence.append(piece)
    }

    private mutating func openGroup() throws(GrammarError) {
        // The bottom group is the body, so `groups.count - 1` parentheses are open.
        guard groups.count <= Self.nestingLimit else {
            throw failure(at: position, "parentheses nested more than \(Self.nestingLimit) deep")
        }
        groups.append(Group(opening: position, firstState: grammar.automaton.stateCount))
        position += 1
    }

    private mutating func closeGroup() throws(GrammarError) {
        guard groups.count > 1 else { throw failure(at: position, "')' without a matching '('") }
        position += 1
        let group = groups.removeLast()
        let fragment = finish(group)
        let piece = Piece(fragment: fragment, size: grammar.automaton.stateCount - group.firstState)
        groups[groups.count - 1].sequence.append(piece)
    }

    /// Closes the alternative being read at a `|`.
    private mutating func endAlternative() {
        let pieces = groups[groups.count - 1].sequence
        let joined = grammar.automaton.sequence(pieces.map(\.fragment))
        groups[groups.count - 1].alternatives.append(joined)
        groups[groups.count - 1].sequence = []
    }

    /// The union of the group's alternatives, the one being read included.
    private mutating func finish(_ group: Group) -> Fragment {
        let last = grammar.automaton.sequence(group.sequence.map(\.fragment))
        return grammar.automaton.union(group.alternatives + [last])
    }

    // MARK: Repetitions

    /// `{m}`, `{m,}`, `{,n}` or `{m,n}` at the position, spaces allowed inside.
    private mutating func parseBounds() throws(GrammarError) -> (minimum: Int, maximum: Int?) {
        let opening = position
        position += 1
        skipSpace(acrossLines: false)
        let minimum = readCount()
        skipSpace(acrossLines: false)
        var maximum = minimum
        if position < scalars.count, scalars[position] == "," {
            position += 1
            skipSpace(acrossLines: false)
            maximum = readCount()
            skipSpace(acrossLines: false)
            guard minimum != nil || maximum != nil else {
                throw failure(at: opening, "expected a repetition count in '{…}'")
            }
        } else if minimum == nil {
            throw failure(at: position, "expected a repetition count in '{…}'")
        }
        guard position < scalars.count, scalars[position] == "}" else {
            throw failure(at: position, "expected '}' to end the repetition that starts at column \(location(of: opening).column)")
        }
        position += 1
        let lower = minimum ?? 0
        if lower > repetitionLimit || (maximum ?? 0) > repetitionLimit {
            throw .budgetExceeded(what: "repetition count in a grammar text", limit: repetitionLimit)
        }
        if let maximum, maximum < lower {
            throw failure(at: opening, "repetition maximum \(maximum) is less than its minimum \(lower)")
        }
        return (lower, maximum)
    }

    /// Decimal digits at the position, saturating just above the repetition limit.
    private mutating func readCount() -> Int? {
        let ceiling = min(repetitionLimit, 1 << 40) + 1
        var value: Int? = nil
        while position < scalars.count, let digit = Self.digitValue(scalars[position], radix: 10) {
            value = min((value ?? 0) * 10 + digit, ceiling)
            position += 1
        }
        return value
    }

    /// The value of an ASCII digit in base 10 or 16, `nil` for anything else.
    private static func digitValue(_ scalar: Unicode.Scalar, radix: Int) -> Int? {
        switch scalar {
        case "0" ... "9": return Int(scalar.value - 0x30)
        case "a" ... "f" where radix == 16: return Int(scalar.value - 0x61 + 10)
        case "A" ... "F" where radix == 16: return Int(scalar.value - 0x41 + 10)
        default: return nil
        }
    }

    /// Replaces the last item of the sequence being read by its repetition.
    private mutating func repeatLastItem(minimum: Int, maximum: Int?, operatorAt start: Int) throws(GrammarError) {
        guard let piece = groups[groups.count - 1].sequence.popLast() else {
            throw failure(at: start, "\(describe(scalars[start])) has nothing before it to repeat")
        }
        let copies = max(minimum, maximum ?? minimum) + (maximum == nil ? 1 : 0)
        guard grammar.automaton.stateCount + piece.size * copies <= Self.stateLimit else {
            throw .budgetExceeded(what: "automaton states of a grammar text", limit: Self.stateLimit)
        }
        let before = grammar.automaton.stateCount
        let fragment: Fragment
        switch (minimum, maximum) {
        case (0, nil): fragment = grammar.automaton.star(piece.fragment)
        case (1, nil): fragment = grammar.automaton.plus(piece.fragment)
        case (0, 1?): fragment = grammar.automaton.optional(piece.fragment)
        default: fragment = grammar.automaton.repeating(piece.fragment, minimum: minimum, maximum: maximum)
        }
        let repeated = Piece(fragment: fragment, size: piece.size + grammar.automaton.stateCount - before)
        groups[groups.count - 1].sequence.append(repeated)
    }

    // MARK: Literals and classes

    /// `"…"` at the position, as UTF-8 bytes.
    private mutating func parseLiteral() throws(GrammarError) -> [UInt8] {
        let opening = position
        position += 1
        var bytes: [UInt8] = []
        while true {
            guard position < scalars.count else { throw failure(at: opening, "string literal is never closed") }
            if scalars[position] == "\"" { break }
            bytes += Lowering.encode(try readCharacter(closing: opening, what: "string literal"))
        }
        position += 1
        return bytes
    }

    /// `[…]` or `[^…]` at the position, as the set of scalars it matches.
    private mutating func parseClass() throws(GrammarError) -> CodePointSet {
        let opening = position
        position += 1
        let negated = position < scalars.count && scalars[position] == "^"
        if negated { position += 1 }
        var set = CodePointSet()
        while true {
            guard position < scalars.count else { throw failure(at: opening, "character class is never closed") }
            if scalars[position] == "]" { break }
            let lowerStart = position
            let lower = try readCharacter(closing: opening, what: "character class")
            if isRangeDash(at: position) {
                position += 1
                let upper = try readCharacter(closing: opening, what: "character class")
                guard lower <= upper else {
                    throw failure(at: lowerStart, "range \(Self.hex(lower))-\(Self.hex(upper)) is out of order")
                }
                set.insert(lower ... upper)
            } else {
                set.insert(lower ... lower)
            }
        }
        position += 1
        return negated ? set.inverted : set
    }

    /// A `-` between two characters of a class (a `-` before the closing `]` is itself).
    private func isRangeDash(at offset: Int) -> Bool {
        offset + 1 < scalars.count && scalars[offset] == "-" && scalars[offset + 1] != "]"
    }

    /// One character of a literal or class at the position, escapes decoded, as a scalar value.
    private mutating func readCharacter(closing opening: Int, what: String) throws(GrammarError) -> UInt32 {
        let start = position
        let scalar = scalars[position]
        position += 1
        guard scalar == "\\" else { return scalar.value }
        guard position < scalars.count else { throw failure(at: opening, "\(what) is never closed") }
        let escaped = scalars[position]
        position += 1
        switch escaped {
        case "n": return 0x0A
        case "r": return 0x0D
        case "t": return 0x09
        case "\\", "\"", "[", "]": return escaped.value
        case "x": return try readHexadecimal(digits: 2, escapeAt: start)
        case "u": return try readHexadecimal(digits: 4, escapeAt: start)
        case "U": return try readHexadecimal(digits: 8, escapeAt: start)
        default: throw failure(at: start, "unknown escape '\\\(escaped)'")
        }
    }

    /// Exactly `digits` hexadecimal digits at the position, as a Unicode scalar value.
    private mutating func readHexadecimal(digits: Int, escapeAt start: Int) throws(GrammarError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0 ..< digits {
            guard position < scalars.count, let digit = Self.digitValue(scalars[position], radix: 16) else {
                throw failure(at: start, "'\\\(scalars[start + 1])' needs \(digits) hexadecimal digits")
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        guard Unicode.Scalar(value) != nil else {
            throw failure(at: start, "\(Self.hex(value)) is not a Unicode scalar value")
        }
        return value
    }

    // MARK: Lexical helpers

    private static func isNameCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "a" ... "z", "A" ... "Z", "0" ... "9", "_", "-": return true
        default: return false
        }
    }

    /// The end of the (possibly empty) run of name characters at `offset`.
    private static func nameEnd(in scalars: [Unicode.Scalar], from offset: Int) -> Int {
        var end = offset
        while end < scalars.count, isNameCharacter(scalars[end]) { end += 1 }
        return end
    }

    /// The end of the spaces, tabs and comment at `offset` on its line.
    private func inlineSpaceEnd(from offset: Int) -> Int {
        var end = offset
        while end < scalars.count {
            switch scalars[end] {
            case " ", "\t": end += 1
            case "#": while end < scalars.count, scalars[end] != "\n", scalars[end] != "\r" { end += 1 }
            default: return end
            }
        }
        return end
    }

    private func startsDefinitionSymbol(at offset: Int) -> Bool {
        offset + 2 < scalars.count && scalars[offset] == ":" && scalars[offset + 1] == ":" && scalars[offset + 2] == "="
    }

    /// Whether `name ::=` starts at `offset`.
    private func startsRuleDefinition(at offset: Int) -> Bool {
        let end = Self.nameEnd(in: scalars, from: offset)
        return end > offset && startsDefinitionSymbol(at: inlineSpaceEnd(from: end))
    }

    /// Skips spaces, tabs and comments, and line breaks too when `acrossLines`.
    /// - Returns: Whether a line break was skipped.
    @discardableResult
    private mutating func skipSpace(acrossLines: Bool) -> Bool {
        var crossedLine = false
        while true {
            position = inlineSpaceEnd(from: position)
            guard acrossLines, position < scalars.count, scalars[position] == "\n" || scalars[position] == "\r" else {
                return crossedLine
            }
            crossedLine = true
            position += 1
        }
    }

    private func text(_ range: Range<Int>) -> String {
        var result = String.UnicodeScalarView()
        result.append(contentsOf: scalars[range])
        return String(result)
    }

    // MARK: Errors

    private func failure(at offset: Int, _ message: String) -> GrammarError {
        let (line, column) = location(of: offset)
        return .invalidGrammarText(line: line, column: column, message: message)
    }

    /// The 1-based line and column (in scalars) of `offset`; `\n`, `\r\n` and `\r` end lines.
    private func location(of offset: Int) -> (line: Int, column: Int) {
        var line = 1, column = 1
        for index in 0 ..< min(offset, scalars.count) {
            switch scalars[index] {
            case "\n":
                line += 1
                column = 1
            case "\r":
                if index + 1 < scalars.count, scalars[index + 1] == "\n" { continue }
                line += 1
                column = 1
            default:
                column += 1
            }
        }
        return (line, column)
    }

    /// A character for a message: `'x'` when printable, its code point otherwise.
    private func describe(_ scalar: Unicode.Scalar) -> String {
        switch scalar.properties.generalCategory {
        case .control, .format, .spaceSeparator, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned:
            return Self.hex(scalar.value)
        default:
            return "'\(scalar)'"
        }
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
