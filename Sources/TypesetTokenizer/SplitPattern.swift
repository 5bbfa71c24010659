// A small backtracking matcher for the pre-tokenizer patterns that llama.cpp runs through
// `std::regex`: ECMAScript semantics (leftmost match, alternatives tried in order, greedy
// quantifiers that give back), over one code unit per code point. It understands exactly the
// constructs those patterns use: literals, classes with ranges and negation, `\s \S \d \r \n`,
// `\p{…}` categories, groups `( )` and `(?: )`, lookaheads `(?= )` and `(?! )`, `|`, the
// quantifiers `? * + {n} {n,} {n,m}`, and `$`.
//
// Patterns that name a Unicode category (`\p{L}`) match the collapsed text, where every non-ASCII
// code point stands as the byte of its category (see `CodePointClass.collapsed`), so `\p{L}`
// means "0xD2 or an ASCII letter" — as in llama.cpp. Other patterns match code points, with
// non-ASCII whitespace standing as U+000B. In both, `\s` is ASCII whitespace (`\t \n \v \f \r`
// and space), as `std::regex` has it in the C locale.

/// One compiled pattern.
struct SplitPattern: Sendable {
    /// The pattern as written (for diagnostics).
    let source: String
    /// Whether the pattern names categories and so matches the collapsed text.
    let usesCategories: Bool
    fileprivate let nodes: [Node]
    fileprivate let root: Int
    /// Per node, whether it always consumes exactly one unit (so repetitions of it can be
    /// counted iteratively). Derived from `nodes` once.
    fileprivate let consumesOneUnit: [Bool]

    init(_ source: String) throws(TokenizerError) {
        var parser = PatternParser(source)
        let root = try parser.parseAlternation()
        guard parser.atEnd else { throw .invalidPattern(source, reason: "unbalanced parenthesis") }
        self.source = source
        self.usesCategories = parser.usesCategories
        self.nodes = parser.nodes
        self.root = root
        self.consumesOneUnit = _consumesOneUnit(parser.nodes)
    }

    /// Splits the units `range` of `units` the way llama.cpp's `std::regex` path does: every
    /// match is a piece, and so is every stretch between matches. Appends piece lengths.
    func split(_ units: UnsafeBufferPointer<UInt32>, range: Range<Int>, into lengths: inout [Int32]) {
        let matcher = Matcher(nodes: nodes, consumesOneUnit: consumesOneUnit, units: units, end: range.upperBound)
        var pieceStart = range.lowerBound
        var position = range.lowerBound
        while position < range.upperBound {
            guard let matchEnd = matcher.match(root, at: position), matchEnd > position else {
                position += 1
                continue
            }
            if position > pieceStart { lengths.append(Int32(position - pieceStart)) }
            lengths.append(Int32(matchEnd - position))
            pieceStart = matchEnd
            position = matchEnd
        }
        if range.upperBound > pieceStart { lengths.append(Int32(range.upperBound - pieceStart)) }
    }
}

// MARK: - Nodes

fileprivate struct UnitSet: Sendable {
    var ranges: [ClosedRange<UInt32>] = []
    var includesWhitespace = false
    var includesNonWhitespace = false
    var isNegated = false
    /// Membership of the units below 256, precomputed.
    var lowUnits = [Bool](repeating: false, count: 256)

    mutating func finish() {
        for unit in 0 ..< 256 { lowUnits[unit] = _contains(UInt32(unit)) }
    }

    private func _contains(_ unit: UInt32) -> Bool {
        var found = ranges.contains { $0.contains(unit) }
        if includesWhitespace && _isSpace(unit) { found = true }
        if includesNonWhitespace && !_isSpace(unit) { found = true }
        return found != isNegated
    }

    @inline(__always) func contains(_ unit: UInt32) -> Bool {
        unit < 256 ? lowUnits[Int(unit)] : _contains(unit)
    }
}

@inline(__always) fileprivate func _isSpace(_ unit: UInt32) -> Bool {
    unit == 0x20 || (0x09 ... 0x0D).contains(unit)
}

fileprivate enum Node: Sendable {
    case unit(UInt32)
    case set(UnitSet)
    case sequence([Int])
    case alternation([Int])
    /// Greedy repetition; `maximum == Int.max` for unbounded.
    case repetition(Int, minimum: Int, maximum: Int)
    case lookahead(Int, negated: Bool)
    case endOfInput
}

// MARK: - Matching

fileprivate struct Matcher {
    let nodes: [Node]
    let consumesOneUnit: [Bool]
    let units: UnsafeBufferPointer<UInt32>
    let end: Int

    /// The end of the first match starting exactly at `start`, in ECMAScript priority order.
    func match(_ node: Int, at start: Int) -> Int? {
        var result: Int?
        _ = match(node, start) { end in result = end; return true }
        return result
    }

    /// Whether `node` matches exactly one unit at `position`, for nodes that always consume
    /// exactly one unit (units, sets, and sequences of lookaheads ending in one); `nil` for others.
    func matchesOne(_ node: Int, _ position: Int) -> Bool? {
        switch nodes[node] {
        case let .unit(unit): return position < end && units[position] == unit
        case let .set(set): return position < end && set.contains(units[position])
        case let .sequence(items):
            guard let last = items.last else { return nil }
            for item in items.dropLast() {
                guard case let .lookahead(inner, negated) = nodes[item] else { return nil }
                if (match(inner, at: position) != nil) == negated { return false }
            }
            return matchesOne(last, position)
        case let .alternation(items) where items.count == 1:
            return matchesOne(items[0], position)
        default: return nil
        }
    }

    func match(_ node: Int, _ position: Int, _ next: (Int) -> Bool) -> Bool {
        switch nodes[node] {
        case let .unit(unit):
            return position < end && units[position] == unit && next(position + 1)
        case let .set(set):
            return position < end && set.contains(units[position]) && next(position + 1)
        case let .sequence(items):
            return matchSequence(items, 0, position, next)
        case let .alternation(items):
            for item in items where match(item, position, next) { return true }
            return false
        case let .lookahead(inner, negated):
            let found = match(inner, at: position) != nil
            return found != negated && next(position)
        case .endOfInput:
            return position == end && next(position)
        case let .repetition(inner, minimum, maximum):
            if consumesOneUnit[inner] {
                // Count the longest run iteratively (no recursion per unit), then give back.
                var count = 0
                while count < maximum, matchesOne(inner, position + count) == true { count += 1 }
                guard count >= minimum else { return false }
                var taken = count
                while taken >= minimum {
                    if next(position + taken) { return true }
                    taken -= 1
                }
                return false
            }
            return matchRepetition(inner, minimum, maximum, 0, position, next)
        }
    }

    private func matchSequence(_ items: [Int], _ index: Int, _ position: Int, _ next: (Int) -> Bool) -> Bool {
        if index == items.count { return next(position) }
        return match(items[index], position) { matchSequence(items, index + 1, $0, next) }
    }

    private func matchRepetition(
        _ inner: Int, _ minimum: Int, _ maximum: Int, _ count: Int, _ position: Int, _ next: (Int) -> Bool
    ) -> Bool {
        if count < maximum {
            // An iteration that consumes nothing ends the loop (ECMAScript's empty-check).
            let more = match(inner, position) { after in
                after != position && matchRepetition(inner, minimum, maximum, count + 1, after, next)
            }
            if more { return true }
        }
        return count >= minimum && next(position)
    }
}

/// Whether each node always consumes exactly one unit: units, sets, and sequences of
/// lookaheads ending in one. Children precede their parents in `nodes`, so one pass suffices.
fileprivate func _consumesOneUnit(_ nodes: [Node]) -> [Bool] {
    var result = [Bool](repeating: false, count: nodes.count)
    for (index, node) in nodes.enumerated() {
        switch node {
        case .unit, .set:
            result[index] = true
        case let .sequence(items):
            result[index] = items.last.map { result[$0] } == true && items.dropLast().allSatisfy {
                if case .lookahead = nodes[$0] { true } else { false }
            }
        case let .alternation(items):
            result[index] = items.count == 1 && result[items[0]]
        default:
            break
        }
    }
    return result
}

// MARK: - Parsing

fileprivate struct PatternParser {
    let source: String
    let scalars: [UInt32]
    var index = 0
    var nodes: [Node] = []
    var usesCategories = false

    init(_ source: String) {
        self.source = source
        self.scalars = source.unicodeScalars.map(\.value)
    }

    var atEnd: Bool { index == scalars.count }

    mutating func add(_ node: Node) -> Int {
        nodes.append(node)
        return nodes.count - 1
    }

    func error(_ reason: String) -> TokenizerError { .invalidPattern(source, reason: reason) }

    mutating func parseAlternation() throws(TokenizerError) -> Int {
        var branches = [try parseSequence()]
        while index < scalars.count, scalars[index] == 0x7C {  // |
            index += 1
            branches.append(try parseSequence())
        }
        return branches.count == 1 ? branches[0] : add(.alternation(branches))
    }

    mutating func parseSequence() throws(TokenizerError) -> Int {
        var items: [Int] = []
        while index < scalars.count, scalars[index] != 0x7C, scalars[index] != 0x29 {  // | )
            var atom = try parseAtom()
            atom = try parseQuantifiers(atom)
            items.append(atom)
        }
        return add(.sequence(items))
    }

    mutating func parseQuantifiers(_ atom: Int) throws(TokenizerError) -> Int {
        var atom = atom
        while index < scalars.count {
            let minimum: Int, maximum: Int
            switch scalars[index] {
            case 0x3F: (minimum, maximum) = (0, 1); index += 1          // ?
            case 0x2A: (minimum, maximum) = (0, .max); index += 1       // *
            case 0x2B: (minimum, maximum) = (1, .max); index += 1       // +
            case 0x7B:                                                  // {n,m}
                index += 1
                let low = parseNumber()
                var high = low
                if index < scalars.count, scalars[index] == 0x2C {
                    index += 1
                    high = index < scalars.count && scalars[index] == 0x7D ? .max : parseNumber()
                }
                guard index < scalars.count, scalars[index] == 0x7D, low >= 0, high >= low else {
                    throw error("malformed {n,m}")
                }
                index += 1
                (minimum, maximum) = (low, high)
            default: return atom
            }
            if index < scalars.count, scalars[index] == 0x3F { throw error("lazy quantifiers are not supported") }
            atom = add(.repetition(atom, minimum: minimum, maximum: maximum))
        }
        return atom
    }

    mutating func parseNumber() -> Int {
        var value = -1
        while index < scalars.count, (0x30 ... 0x39).contains(scalars[index]) {
            value = max(value, 0) * 10 + Int(scalars[index] - 0x30)
            index += 1
        }
        return value
    }

    mutating func parseAtom() throws(TokenizerError) -> Int {
        let scalar = scalars[index]
        index += 1
        switch scalar {
        case 0x28:  // (
            var lookahead: Bool? = nil
            if index + 1 < scalars.count, scalars[index] == 0x3F {  // ?
                switch scalars[index + 1] {
                case 0x3A: break                    // (?:
                case 0x3D: lookahead = false        // (?=
                case 0x21: lookahead = true         // (?!
                default: throw error("unsupported group")
                }
                index += 2
            }
            let inner = try parseAlternation()
            guard index < scalars.count, scalars[index] == 0x29 else { throw error("unclosed group") }
            index += 1
            if let negated = lookahead { return add(.lookahead(inner, negated: negated)) }
            return inner
        case 0x5B:  // [
            return add(.set(try parseSet()))
        case 0x24:  // $
            return add(.endOfInput)
        case 0x5C:  // backslash
            var set = UnitSet()
            if let unit = try parseEscape(into: &set) { return add(.unit(unit)) }
            set.finish()
            return add(.set(set))
        case 0x2E:
            throw error("'.' is not supported")
        default:
            return add(.unit(scalar))
        }
    }

    /// Parses the escape after a backslash. Returns the unit for a literal; otherwise adds the
    /// class it names to `set` and returns `nil`.
    mutating func parseEscape(into set: inout UnitSet) throws(TokenizerError) -> UInt32? {
        guard index < scalars.count else { throw error("dangling backslash") }
        let scalar = scalars[index]
        index += 1
        switch scalar {
        case 0x72: return 0x0D                                  // \r
        case 0x6E: return 0x0A                                  // \n
        case 0x74: return 0x09                                  // \t
        case 0x73: set.includesWhitespace = true; return nil    // \s
        case 0x53: set.includesNonWhitespace = true; return nil // \S
        case 0x64: set.ranges.append(0x30 ... 0x39); return nil // \d
        case 0x70:                                              // \p{…}
            guard index < scalars.count, scalars[index] == 0x7B,
                  let close = scalars[index...].firstIndex(of: 0x7D) else { throw error("malformed \\p{…}") }
            let name = String(String.UnicodeScalarView(scalars[(index + 1) ..< close].compactMap(Unicode.Scalar.init)))
            index = close + 1
            guard let ranges = _categoryRanges[name] else { throw error("unsupported category \\p{\(name)}") }
            usesCategories = true
            set.ranges += ranges
            return nil
        default:
            if (0x41 ... 0x5A).contains(scalar) || (0x61 ... 0x7A).contains(scalar) || (0x30 ... 0x39).contains(scalar) {
                throw error("unsupported escape \\\(Unicode.Scalar(scalar).map { String($0) } ?? "?")")
            }
            return scalar  // an escaped punctuation character stands for itself
        }
    }

    mutating func parseSet() throws(TokenizerError) -> UnitSet {
        var set = UnitSet()
        if index < scalars.count, scalars[index] == 0x5E { set.isNegated = true; index += 1 }  // ^
        var first = true
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == 0x5D && !first { index += 1; set.finish(); return set }  // ]
            first = false
            index += 1
            let low: UInt32
            if scalar == 0x5C {
                guard let unit = try parseEscape(into: &set) else { continue }
                low = unit
            } else {
                low = scalar
            }
            // A range low-high, unless '-' is the last character of the set.
            if index + 1 < scalars.count, scalars[index] == 0x2D, scalars[index + 1] != 0x5D {
                index += 1
                var high = scalars[index]
                index += 1
                if high == 0x5C {
                    guard let unit = try parseEscape(into: &set) else { throw error("class escape as range end") }
                    high = unit
                }
                guard high >= low else { throw error("reversed range") }
                set.ranges.append(low ... high)
            } else {
                set.ranges.append(low ... low)
            }
        }
        throw error("unclosed [")
    }
}

/// What each category stands for in collapsed text: its stand-in byte plus the ASCII members,
/// as llama.cpp defines them (its ASCII punctuation and symbol sets leave out `~`).
fileprivate let _categoryRanges: [String: [ClosedRange<UInt32>]] = {
    let letters: [ClosedRange<UInt32>] = [0xD2 ... 0xD2, 0x41 ... 0x5A, 0x61 ... 0x7A]
    return [
        "N": [0xD1 ... 0xD1, 0x30 ... 0x39],
        "L": letters, "Lu": letters, "Ll": letters, "Lt": letters, "Lm": letters, "Lo": letters,
        "P": [0xD3 ... 0xD3, 0x21 ... 0x23, 0x25 ... 0x2A, 0x2C ... 0x2F, 0x3A ... 0x3B, 0x3F ... 0x40,
              0x5B ... 0x5D, 0x5F ... 0x5F, 0x7B ... 0x7B, 0x7D ... 0x7D],
        "M": [0xD4 ... 0xD4],
        "S": [0xD5 ... 0xD5, 0x24 ... 0x24, 0x2B ... 0x2B, 0x3C ... 0x3E, 0x5E ... 0x5E, 0x60 ... 0x60, 0x7C ... 0x7C],
    ]
}()
