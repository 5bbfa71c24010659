/// The ECMAScript regular-expression subset of JSON Schema `pattern` and of regex constraints,
/// compiled to a character automaton (`CharacterNFA`, edges labelled by `CodePointSet`).
///
/// Supported: literals; the escapes `\n \r \t \f \v \0 \cX \xHH \uHHHH` (a surrogate pair of
/// `\u` escapes is one scalar) and `\u{…}`; escaped punctuation (`\. \/ \-` …) as itself; `.`
/// (any scalar but a line terminator); classes `[…]` and `[^…]` with ranges and escapes;
/// `\d \D \w \W \s \S` with their ECMAScript meanings (ASCII digits and word characters; the
/// ECMAScript white space and line terminators); groups `(…)`, `(?:…)`, `(?<name>…)`;
/// alternation; the quantifiers `* + ? {n} {n,} {n,m}` and their lazy forms (same language).
/// Annex B leniencies of real-world patterns are kept: a `{` that does not start a quantifier,
/// and a lone `}` or `]`, stand for themselves, and a class escape at an end of a class range
/// (`[\w-.]`) makes the `-` literal.
///
/// `^` and `$` are supported where they anchor the whole match: at the start (end) of a
/// top-level alternative, or of an alternative of a group that itself starts (ends) one, as in
/// `^(a|b)$` or `(?:^|,)x`. Lookaheads right after a leading `^` are split off by
/// `leadingLookaheads(in:)` and taken as intersections and differences of automata. Anywhere
/// else, and every feature beyond regular languages or this subset (backreferences, other
/// lookaround, word boundaries, property escapes, inline flags), is an `.invalidRegex` error
/// at the byte offset of the construct — never silently accepted.
enum RegularExpression {
    /// Builds the language of `pattern` into `automaton`.
    ///
    /// - Parameters:
    ///   - pattern: The pattern text (already JSON-decoded), without delimiters or flags.
    ///   - search: `true` for JSON Schema semantics: a string is in the language when the
    ///     pattern matches anywhere in it, so each side not anchored by `^` (at the start) or
    ///     `$` (at the end) gets an implicit "any characters". `false` for regex-constraint
    ///     semantics: the whole string must match, and anchors at the ends mean nothing more.
    ///   - repetitionLimit: The largest bound `{n,m}` may use.
    ///   - sizeLimit: The largest number of character edges the pattern may expand to once
    ///     bounded repetitions are written out (`(a{100}){100}` is 10,000).
    /// - Returns: The fragment of `automaton` recognising the language.
    /// - Throws: `.invalidRegex` (with the byte offset into `pattern`) for a malformed pattern
    ///   or an unsupported feature; `.budgetExceeded` past `repetitionLimit`, `sizeLimit` or
    ///   `RegularExpressionParser.nestingLimit` nested groups.
    static func build(_ pattern: String, search: Bool, into automaton: inout CharacterNFA,
                      repetitionLimit: Int = 1000, sizeLimit: Int = 100_000) throws(GrammarError) -> Fragment {
        var parser = RegularExpressionParser(pattern, repetitionLimit: repetitionLimit)
        let tree = try parser.parse()
        let padding: RegularExpressionNode? = search ? .anyString : nil
        let anchored = tree.anchoringStart(padding: padding).anchoringEnd(padding: padding)
        if anchored.expandedSize(limit: sizeLimit) > sizeLimit {
            throw .budgetExceeded(what: "size of the regular expression with its repetitions expanded", limit: sizeLimit)
        }
        let builder = RegularExpressionBuilder(pattern: pattern)
        return try builder.fragment(for: anchored, into: &automaton)
    }

    /// The lookaheads a pattern starts with, right after its `^`: `^(?=Q)(?!P)R` is `^R`
    /// that also matches `^(?:Q)` and does not match `^(?:P)` (search semantics: a body
    /// matches a prefix of the string, or all of it with `$`). Those are intersections and
    /// differences of regular languages, which the caller takes on automata; lookaheads
    /// elsewhere are not split and stay errors. `nil` when the pattern starts with none.
    ///
    /// Complexity: O(n) in the pattern's length.
    /// Each lookahead's `offset` is the byte offset of its body in `pattern`.
    static func leadingLookaheads(in pattern: String) -> (main: String, lookaheads: [(body: String, negative: Bool, offset: Int)])? {
        let scalars = Array(pattern.unicodeScalars)
        guard scalars.first == "^" else { return nil }
        var position = 1
        var lookaheads: [(body: String, negative: Bool, offset: Int)] = []
        while position + 2 < scalars.count, scalars[position] == "(", scalars[position + 1] == "?",
              scalars[position + 2] == "=" || scalars[position + 2] == "!" {
            // The body, up to the group's end (parentheses balanced outside classes, escapes
            // skipped). A `^` opening an alternative of the body anchors where the lookahead
            // already stands, so it is left out.
            var body = String.UnicodeScalarView()
            var index = position + 3, depth = 0, inClass = false, atAlternativeStart = true, closed = false
            while index < scalars.count {
                let scalar = scalars[index]
                index += 1
                if scalar == "\\", index < scalars.count {
                    body.append(contentsOf: [scalar, scalars[index]])
                    index += 1
                    atAlternativeStart = false
                    continue
                }
                if !inClass, depth == 0, scalar == ")" {
                    closed = true
                    break
                }
                if !inClass, depth == 0, atAlternativeStart, scalar == "^" { continue }
                atAlternativeStart = !inClass && depth == 0 && scalar == "|"
                switch scalar {
                case "[" where !inClass: inClass = true
                case "]" where inClass: inClass = false
                case "(" where !inClass: depth += 1
                case ")" where !inClass: depth -= 1
                default: break
                }
                body.append(scalar)
            }
            guard closed else { return nil }  // unbalanced: the parser reports it
            let offset = scalars[..<(position + 3)].reduce(0) { $0 + UTF8.width($1) }
            lookaheads.append((String(body), scalars[position + 2] == "!", offset))
            position = index
        }
        guard !lookaheads.isEmpty else { return nil }
        var main = String.UnicodeScalarView(["^"])
        main.append(contentsOf: scalars[position...])
        return (String(main), lookaheads)
    }

    // MARK: Character sets

    /// `\d`: the ASCII digits.
    static let digits = CodePointSet([0x30 ... 0x39])

    /// `\w`: ASCII letters, digits and `_`.
    static let wordCharacters = CodePointSet([0x30 ... 0x39, 0x41 ... 0x5A, 0x5F ... 0x5F, 0x61 ... 0x7A])

    /// ECMAScript LineTerminator: `\n`, `\r`, U+2028 and U+2029.
    static let lineTerminators = CodePointSet([0x0A ... 0x0A, 0x0D ... 0x0D, 0x2028 ... 0x2029])

    /// `\s`: ECMAScript WhiteSpace (tab, vertical tab, form feed, space, U+00A0, U+FEFF and the
    /// space separators U+1680, U+2000–U+200A, U+202F, U+205F, U+3000) and LineTerminator.
    static let whiteSpace = CodePointSet([
        0x09 ... 0x0D, 0x20 ... 0x20, 0xA0 ... 0xA0, 0x1680 ... 0x1680, 0x2000 ... 0x200A,
        0x2028 ... 0x2029, 0x202F ... 0x202F, 0x205F ... 0x205F, 0x3000 ... 0x3000, 0xFEFF ... 0xFEFF,
    ])

    /// `.`: every scalar but the line terminators.
    static let dot = CodePointSet.all.subtracting(lineTerminators)
}

// MARK: - Syntax tree

/// A parsed regular expression, before it is built into an automaton.
indirect enum RegularExpressionNode: Equatable, Sendable {
    /// One scalar of the set (an empty set matches nothing).
    case characters(CodePointSet)
    /// The items one after another (the empty sequence matches the empty string).
    case sequence([RegularExpressionNode])
    /// Any one of the alternatives.
    case alternation([RegularExpressionNode])
    /// Between `minimum` and `maximum` (`nil`: unbounded) repetitions of the body.
    case repetition(RegularExpressionNode, minimum: Int, maximum: Int?)
    /// `^`, at `offset` bytes into the pattern; removed by `anchoringStart` where supported.
    case startAnchor(offset: Int)
    /// `$`, at `offset` bytes into the pattern; removed by `anchoringEnd` where supported.
    case endAnchor(offset: Int)
    /// Any string at all: the implicit padding of an unanchored search.
    case anyString

    var isStartAnchor: Bool {
        if case .startAnchor = self { return true }
        return false
    }

    var isEndAnchor: Bool {
        if case .endAnchor = self { return true }
        return false
    }

    /// Whether the node is a group's body (a sequence or an alternation), into which anchors
    /// at the start or the end of the whole match may reach.
    var isGroupBody: Bool {
        switch self {
        case .sequence, .alternation: return true
        default: return false
        }
    }
}

// MARK: - Anchors

extension RegularExpressionNode {
    /// This node with its `^` anchors at the start of the match removed, and `padding` (when
    /// given) put before every alternative that has none.
    ///
    /// An alternative is anchored when its first items are `^`; when its first item is a
    /// group, the group's alternatives are examined in turn. Other anchors stay in place (and
    /// are refused by the builder).
    func anchoringStart(padding: Self?) -> Self {
        switch self {
        case .alternation(let alternatives):
            return .alternation(alternatives.map { $0.anchoringStart(padding: padding) })
        case .sequence(let items):
            if items.first?.isStartAnchor == true {
                return .sequence(Array(items.drop { $0.isStartAnchor }))
            }
            if let first = items.first, first.isGroupBody {
                return .sequence([first.anchoringStart(padding: padding)] + items.dropFirst())
            }
            return .sequence((padding.map { [$0] } ?? []) + items)
        default:
            return .sequence((padding.map { [$0] } ?? []) + [self])
        }
    }

    /// This node with its `$` anchors at the end of the match removed, and `padding` (when
    /// given) put after every alternative that has none; the mirror of `anchoringStart`.
    func anchoringEnd(padding: Self?) -> Self {
        switch self {
        case .alternation(let alternatives):
            return .alternation(alternatives.map { $0.anchoringEnd(padding: padding) })
        case .sequence(let items):
            if items.last?.isEndAnchor == true {
                let kept = items.count - items.reversed().prefix { $0.isEndAnchor }.count
                return .sequence(Array(items.prefix(kept)))
            }
            if let last = items.last, last.isGroupBody {
                return .sequence(items.dropLast() + [last.anchoringEnd(padding: padding)])
            }
            return .sequence(items + (padding.map { [$0] } ?? []))
        default:
            return .sequence([self] + (padding.map { [$0] } ?? []))
        }
    }
}

// MARK: - Size

extension RegularExpressionNode {
    /// The number of character edges once bounded repetitions are written out as copies,
    /// saturating just past `limit`.
    func expandedSize(limit: Int) -> Int {
        let ceiling = limit &+ 1
        switch self {
        case .characters, .anyString:
            return 1
        case .startAnchor, .endAnchor:
            return 0
        case .sequence(let items), .alternation(let items):
            var total = 0
            for item in items { total = min(ceiling, total + item.expandedSize(limit: limit)) }
            return total
        case .repetition(let body, let minimum, let maximum):
            // `NFA.repeating` builds max(minimum, maximum) copies, plus one for an unbounded tail.
            let copies = max(1, maximum ?? (minimum + 1))
            let (product, overflow) = body.expandedSize(limit: limit).multipliedReportingOverflow(by: copies)
            return overflow ? ceiling : min(ceiling, product)
        }
    }
}

// MARK: - Parser

/// A recursive-descent parser of the supported subset (see `RegularExpression`), over the
/// pattern's Unicode scalars; error offsets are in UTF-8 bytes.
struct RegularExpressionParser {
    /// The deepest nesting of groups accepted (the parser and builder recurse per level).
    static let nestingLimit = 100

    /// What one class atom or escape stands for: one scalar (which may end a range), or a
    /// class escape such as `\d`.
    enum ClassAtom {
        case scalar(UInt32)
        case set(CodePointSet)

        var set: CodePointSet {
            switch self {
            case .scalar(let value): return CodePointSet(value)
            case .set(let set): return set
            }
        }
    }

    /// A parsed quantifier: the bounds, and where it starts (a scalar index).
    struct Quantifier {
        var minimum: Int
        var maximum: Int?
        var start: Int
    }

    let pattern: String
    private let scalars: [Unicode.Scalar]
    /// The byte offset of each scalar, and of the end of the pattern.
    private let offsets: [Int]
    private let repetitionLimit: Int
    private var position = 0
    private var depth = 0
    private var groupNames: Set<String> = []

    init(_ pattern: String, repetitionLimit: Int) {
        self.pattern = pattern
        self.repetitionLimit = repetitionLimit
        scalars = Array(pattern.unicodeScalars)
        var offsets: [Int] = []
        offsets.reserveCapacity(scalars.count + 1)
        var offset = 0
        for scalar in scalars {
            offsets.append(offset)
            offset += UTF8.width(scalar)
        }
        offsets.append(offset)
        self.offsets = offsets
    }

    /// Parses the whole pattern.
    mutating func parse() throws(GrammarError) -> RegularExpressionNode {
        let tree = try parseDisjunction()
        if position < scalars.count {
            // Only an unmatched `)` stops a top-level disjunction early.
            throw error("unmatched ')'", at: position)
        }
        return tree
    }

    // MARK: Helpers

    private var current: Unicode.Scalar? { scalar(at: position) }

    private func scalar(at index: Int) -> Unicode.Scalar? {
        index < scalars.count ? scalars[index] : nil
    }

    /// Consumes `expected` if it comes next.
    private mutating func consume(_ expected: Unicode.Scalar) -> Bool {
        guard current == expected else { return false }
        position += 1
        return true
    }

    /// An `.invalidRegex` error at the scalar index `index`.
    private func error(_ message: String, at index: Int) -> GrammarError {
        .invalidRegex(pattern: pattern, offset: offsets[min(index, offsets.count - 1)], message: message)
    }

    private static func hexadecimalValue(_ scalar: Unicode.Scalar?) -> UInt32? {
        guard let scalar else { return nil }
        switch scalar.value {
        case 0x30 ... 0x39: return scalar.value - 0x30
        case 0x41 ... 0x46: return scalar.value - 0x41 + 10
        case 0x61 ... 0x66: return scalar.value - 0x61 + 10
        default: return nil
        }
    }

    private static func isDecimalDigit(_ scalar: Unicode.Scalar?) -> Bool {
        guard let scalar else { return false }
        return ("0" ... "9").contains(scalar)
    }

    private static func isASCIILetterOrDigit(_ scalar: Unicode.Scalar) -> Bool {
        ("a" ... "z").contains(scalar) || ("A" ... "Z").contains(scalar) || ("0" ... "9").contains(scalar)
    }

    /// The value of `count` hexadecimal digits at `index`, if they are all there.
    private func hexadecimalNumber(at index: Int, count: Int) -> UInt32? {
        var value: UInt32 = 0
        for offset in 0 ..< count {
            guard let digit = Self.hexadecimalValue(scalar(at: index + offset)) else { return nil }
            value = value << 4 | digit
        }
        return value
    }

    // MARK: Disjunctions and terms

    /// Alternatives separated by `|`, up to the end or a `)`.
    private mutating func parseDisjunction() throws(GrammarError) -> RegularExpressionNode {
        var alternatives = [try parseAlternative()]
        while consume("|") { alternatives.append(try parseAlternative()) }
        return alternatives.count == 1 ? alternatives[0] : .alternation(alternatives)
    }

    /// Terms up to the end, a `|` or a `)`; always a `.sequence`.
    private mutating func parseAlternative() throws(GrammarError) -> RegularExpressionNode {
        var terms: [RegularExpressionNode] = []
        while let next = current, next != "|", next != ")" {
            terms.append(try parseTerm())
        }
        return .sequence(terms)
    }

    /// An atom and its quantifier, if any.
    private mutating func parseTerm() throws(GrammarError) -> RegularExpressionNode {
        let atom = try parseAtom()
        guard let quantifier = try parseQuantifier() else { return atom }
        if case .startAnchor = atom { throw error("nothing to repeat: an anchor cannot be quantified", at: quantifier.start) }
        if case .endAnchor = atom { throw error("nothing to repeat: an anchor cannot be quantified", at: quantifier.start) }
        return .repetition(atom, minimum: quantifier.minimum, maximum: quantifier.maximum)
    }

    private mutating func parseAtom() throws(GrammarError) -> RegularExpressionNode {
        let start = position
        guard let next = current else { throw error("unexpected end of pattern", at: start) }
        switch next {
        case "^":
            position += 1
            return .startAnchor(offset: offsets[start])
        case "$":
            position += 1
            return .endAnchor(offset: offsets[start])
        case "(":
            return try parseGroup()
        case "[":
            return .characters(try parseClass())
        case ".":
            position += 1
            return .characters(RegularExpression.dot)
        case "\\":
            return .characters(try parseEscape(inClass: false).set)
        case "*", "+", "?":
            throw error("nothing to repeat before '\(next)'", at: start)
        case "{" where bracedQuantifier(at: start) != nil:
            throw error("nothing to repeat before '{'", at: start)
        default:
            // Includes a `{` that starts no quantifier, and lone `}` and `]` (Annex B).
            position += 1
            return .characters(CodePointSet(next.value))
        }
    }

    // MARK: Quantifiers

    /// The quantifier that comes next, if any, with its lazy `?` consumed.
    ///
    /// - Throws: `.invalidRegex` for `{n,m}` with m < n; `.budgetExceeded` for a bound past
    ///   the repetition limit.
    private mutating func parseQuantifier() throws(GrammarError) -> Quantifier? {
        guard let next = current else { return nil }
        let start = position
        var quantifier: Quantifier
        switch next {
        case "*": quantifier = Quantifier(minimum: 0, maximum: nil, start: start)
        case "+": quantifier = Quantifier(minimum: 1, maximum: nil, start: start)
        case "?": quantifier = Quantifier(minimum: 0, maximum: 1, start: start)
        case "{":
            guard let braced = bracedQuantifier(at: start) else { return nil }
            quantifier = braced.quantifier
            position = braced.end - 1
        default: return nil
        }
        position += 1
        _ = consume("?")   // lazy: the same language
        if let maximum = quantifier.maximum, maximum < quantifier.minimum {
            throw error("numbers out of order in {} quantifier", at: start)
        }
        if max(quantifier.minimum, quantifier.maximum ?? 0) > repetitionLimit {
            throw .budgetExceeded(what: "repetition bound in regular expression /\(pattern)/", limit: repetitionLimit)
        }
        return quantifier
    }

    /// The braced quantifier `{n}`, `{n,}` or `{n,m}` at `index` and the index just past it,
    /// or `nil` when the `{` there starts none (it is then a literal). Bounds saturate at
    /// one billion.
    private func bracedQuantifier(at index: Int) -> (quantifier: Quantifier, end: Int)? {
        guard scalar(at: index) == "{" else { return nil }
        var cursor = index + 1
        func number() -> Int? {
            var value: Int? = nil
            while let scalar = scalar(at: cursor), Self.isDecimalDigit(scalar) {
                value = min(1_000_000_000, (value ?? 0) * 10 + Int(scalar.value - 0x30))
                cursor += 1
            }
            return value
        }
        guard let minimum = number() else { return nil }
        var maximum: Int? = minimum
        if scalar(at: cursor) == "," {
            cursor += 1
            maximum = number()
        }
        guard scalar(at: cursor) == "}" else { return nil }
        return (Quantifier(minimum: minimum, maximum: maximum, start: index), cursor + 1)
    }

    // MARK: Groups

    /// `(…)`, `(?:…)` or `(?<name>…)`; lookaround and inline modifiers are refused.
    private mutating func parseGroup() throws(GrammarError) -> RegularExpressionNode {
        let open = position
        position += 1
        if consume("?") { try parseGroupPrefix(open: open) }
        depth += 1
        if depth > Self.nestingLimit {
            throw .budgetExceeded(what: "nesting depth of groups in regular expression", limit: Self.nestingLimit)
        }
        let body = try parseDisjunction()
        depth -= 1
        guard consume(")") else { throw error("missing ')' for the group opened here", at: open) }
        return body
    }

    /// What follows `(?`: `:` or a group name; anything else is an error.
    private mutating func parseGroupPrefix(open: Int) throws(GrammarError) {
        let next = current
        let after = scalar(at: position + 1)
        switch (next, after) {
        case (":", _):
            position += 1
        case ("=", _):
            throw error("lookahead (?=…) is only supported right after the pattern's leading '^'", at: open)
        case ("!", _):
            throw error("negative lookahead (?!…) is only supported right after the pattern's leading '^'", at: open)
        case ("<", "="):
            throw error("lookbehind (?<=…) is not supported", at: open)
        case ("<", "!"):
            throw error("negative lookbehind (?<!…) is not supported", at: open)
        case ("<", _):
            position += 1
            try parseGroupName(open: open)
        case ("P", "<"):
            throw error("Python-style named groups (?P<name>…) are not supported: use (?<name>…)", at: open)
        case let (scalar?, _) where ("a" ... "z").contains(scalar) || ("A" ... "Z").contains(scalar) || scalar == "-":
            throw error("inline modifiers (flags) such as (?i) are not supported", at: open)
        default:
            throw error("invalid group: '(?' must be followed by ':' or '<name>'", at: open)
        }
    }

    /// The name of `(?<name>…)` up to and including `>`: an identifier, unique in the pattern.
    private mutating func parseGroupName(open: Int) throws(GrammarError) {
        var name = ""
        while let next = current, next != ">" {
            let valid = name.isEmpty
                ? next.properties.isIDStart || next == "$" || next == "_"
                : next.properties.isIDContinue || next == "$" || next == "\u{200C}" || next == "\u{200D}"
            guard valid else { throw error("invalid group name", at: position) }
            name.unicodeScalars.append(next)
            position += 1
        }
        guard !name.isEmpty, consume(">") else { throw error("invalid group name", at: open) }
        guard groupNames.insert(name).inserted else { throw error("duplicate group name '\(name)'", at: open) }
    }

    // MARK: Classes

    /// `[…]` or `[^…]`, as the set of scalars it matches (`[]` is empty, `[^]` is everything).
    private mutating func parseClass() throws(GrammarError) -> CodePointSet {
        let open = position
        position += 1
        let negated = consume("^")
        var set = CodePointSet()
        while true {
            guard let next = current else { throw error("missing ']' for the class opened here", at: open) }
            if next == "]" {
                position += 1
                break
            }
            set = set.union(try parseClassRange())
        }
        return negated ? set.inverted : set
    }

    /// One class atom, or a range `a-z` of two.
    private mutating func parseClassRange() throws(GrammarError) -> CodePointSet {
        let start = position
        let first = try parseClassAtom()
        guard current == "-", let after = scalar(at: position + 1), after != "]" else { return first.set }
        position += 1
        let second = try parseClassAtom()
        guard case .scalar(let low) = first, case .scalar(let high) = second else {
            // Annex B: a class escape at an end of a range makes the `-` literal.
            return first.set.union(CodePointSet(0x2D)).union(second.set)
        }
        guard low <= high else { throw error("range out of order in character class", at: start) }
        return CodePointSet([low ... high])
    }

    private mutating func parseClassAtom() throws(GrammarError) -> ClassAtom {
        guard let next = current else { throw error("unexpected end of pattern", at: position) }
        if next == "\\" { return try parseEscape(inClass: true) }
        position += 1
        return .scalar(next.value)
    }

    // MARK: Escapes

    /// The escape at the backslash under the cursor, outside or inside a class (where `\b`
    /// is a backspace).
    private mutating func parseEscape(inClass: Bool) throws(GrammarError) -> ClassAtom {
        let start = position
        position += 1
        guard let letter = current else { throw error("the pattern ends with a lone backslash", at: start) }
        position += 1
        switch letter {
        case "d": return .set(RegularExpression.digits)
        case "D": return .set(RegularExpression.digits.inverted)
        case "w": return .set(RegularExpression.wordCharacters)
        case "W": return .set(RegularExpression.wordCharacters.inverted)
        case "s": return .set(RegularExpression.whiteSpace)
        case "S": return .set(RegularExpression.whiteSpace.inverted)
        case "n": return .scalar(0x0A)
        case "r": return .scalar(0x0D)
        case "t": return .scalar(0x09)
        case "f": return .scalar(0x0C)
        case "v": return .scalar(0x0B)
        case "b" where inClass: return .scalar(0x08)
        case "b", "B":
            throw error(inClass ? "\\B is not valid inside a character class" : "word boundaries (\\b, \\B) are not supported", at: start)
        case "0":
            if Self.isDecimalDigit(current) { throw error("octal escapes are not supported", at: start) }
            return .scalar(0)
        case "1" ... "9":
            throw error(inClass ? "octal escapes are not supported" : "backreferences (\\1 …) are not supported", at: start)
        case "k":
            throw error("named backreferences (\\k<name>) are not supported", at: start)
        case "p", "P":
            throw error("Unicode property escapes (\\p{…}, \\P{…}) are not supported", at: start)
        case "c":
            return .scalar(try parseControlEscape(start: start))
        case "x":
            guard let value = hexadecimalNumber(at: position, count: 2) else {
                throw error("\\x must be followed by two hexadecimal digits", at: start)
            }
            position += 2
            return .scalar(value)
        case "u":
            return .scalar(try parseUnicodeEscape(start: start))
        case let other where Self.isASCIILetterOrDigit(other):
            throw error("unknown escape '\\\(other)'", at: start)
        default:
            // Escaped punctuation, space or non-ASCII: the character itself.
            return .scalar(letter.value)
        }
    }

    /// `\cX` after the `c`: the control character of the ASCII letter X.
    private mutating func parseControlEscape(start: Int) throws(GrammarError) -> UInt32 {
        guard let letter = current, ("a" ... "z").contains(letter) || ("A" ... "Z").contains(letter) else {
            throw error("\\c must be followed by an ASCII letter", at: start)
        }
        position += 1
        return letter.value % 32
    }

    /// `\uHHHH` (a high surrogate followed by `\u` and a low one make one scalar) or
    /// `\u{H…}`, after the `u`. Lone surrogates and values past U+10FFFF are errors.
    private mutating func parseUnicodeEscape(start: Int) throws(GrammarError) -> UInt32 {
        if consume("{") { return try parseBracedUnicodeEscape(start: start) }
        guard let lead = hexadecimalNumber(at: position, count: 4) else {
            throw error("\\u must be followed by four hexadecimal digits or {…}", at: start)
        }
        position += 4
        if (0xD800 ... 0xDBFF).contains(lead),
           scalar(at: position) == "\\", scalar(at: position + 1) == "u",
           let trail = hexadecimalNumber(at: position + 2, count: 4), (0xDC00 ... 0xDFFF).contains(trail) {
            position += 6
            return 0x10000 + (lead - 0xD800) << 10 + (trail - 0xDC00)
        }
        if CodePointSet.surrogates.contains(lead) { throw error("lone surrogate in \\u escape", at: start) }
        return lead
    }

    /// The rest of `\u{H…}` after the `{`.
    private mutating func parseBracedUnicodeEscape(start: Int) throws(GrammarError) -> UInt32 {
        var value: UInt32 = 0
        var digitCount = 0
        while let digit = Self.hexadecimalValue(current) {
            value = min(0x110000, value << 4 | digit)
            digitCount += 1
            position += 1
        }
        guard digitCount > 0, consume("}") else {
            throw error("\\u{…} must hold hexadecimal digits and end with '}'", at: start)
        }
        guard value <= CodePointSet.maximum else { throw error("\\u{…} is beyond U+10FFFF", at: start) }
        if CodePointSet.surrogates.contains(value) { throw error("lone surrogate in \\u escape", at: start) }
        return value
    }
}

// MARK: - Builder

/// Builds a parsed, anchor-resolved expression into a character automaton.
struct RegularExpressionBuilder {
    /// The pattern, for error messages.
    let pattern: String

    /// The fragment of `automaton` for `node`.
    ///
    /// - Throws: `.invalidRegex` for an anchor left where it does not anchor the whole match.
    func fragment(for node: RegularExpressionNode, into automaton: inout CharacterNFA) throws(GrammarError) -> Fragment {
        switch node {
        case .characters(let set):
            return set.isEmpty ? automaton.nothing() : automaton.symbol(set)
        case .anyString:
            return automaton.star(automaton.symbol(.all))
        case .sequence(let items):
            var parts: [Fragment] = []
            for item in items { parts.append(try fragment(for: item, into: &automaton)) }
            return automaton.sequence(parts)
        case .alternation(let alternatives):
            var parts: [Fragment] = []
            for alternative in alternatives { parts.append(try fragment(for: alternative, into: &automaton)) }
            return automaton.union(parts)
        case .repetition(let body, let minimum, let maximum):
            let part = try fragment(for: body, into: &automaton)
            return repetition(part, minimum: minimum, maximum: maximum, into: &automaton)
        case .startAnchor(let offset):
            throw .invalidRegex(pattern: pattern, offset: offset,
                                message: "'^' is only supported at the start of the pattern or of a top-level alternative")
        case .endAnchor(let offset):
            throw .invalidRegex(pattern: pattern, offset: offset,
                                message: "'$' is only supported at the end of the pattern or of a top-level alternative")
        }
    }

    /// `part` repeated between `minimum` and `maximum` times (`nil`: unbounded).
    private func repetition(_ part: Fragment, minimum: Int, maximum: Int?, into automaton: inout CharacterNFA) -> Fragment {
        switch (minimum, maximum) {
        case (0, nil): return automaton.star(part)
        case (1, nil): return automaton.plus(part)
        case (0, 1?): return automaton.optional(part)
        default: return automaton.repeating(part, minimum: minimum, maximum: maximum)
        }
    }
}
