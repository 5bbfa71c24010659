// Exact automata for JSON numbers under JSON Schema's numeric keywords (`minimum`,
// `exclusiveMinimum`, `maximum`, `exclusiveMaximum`, `multipleOf`).
//
// Everything is decided on the decimal digits of the text, never through floating point:
// a bound such as 9007199254740993 or 0.1 means exactly that value.

// MARK: - Exact decimals

/// An exact decimal number, `±significand × 10^exponent`, parsed from JSON number text
/// without going through floating point.
///
/// The representation is normalised: the significand has neither leading nor trailing
/// zeros (trailing zeros move into the exponent), and zero is the empty significand with
/// exponent 0 and no sign. Equal values therefore have equal representations, so `==` and
/// `hash(into:)` are value equality ("1.50", "15e-1" and "1.5" are one `DecimalNumber`).
struct DecimalNumber: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Whether the value is below zero (never true for zero).
    private(set) var isNegative: Bool
    /// The significant digits (each 0 ... 9), most significant first; empty for zero.
    private(set) var significand: [UInt8]
    /// The power of ten the significand is multiplied by; 0 for zero.
    private(set) var exponent: Int

    /// The largest exponent a lexeme may write: text such as `1e9999999999999999` is
    /// rejected by `init?(_:)` rather than rounded, so every `DecimalNumber` is exact.
    static let lexemeExponentLimit = 1_000_000_000_000_000

    static let zero = DecimalNumber(isNegative: false, significand: [], exponent: 0)

    /// The value `±digits × 10^exponent`, normalised. `digits` are values 0 ... 9, not ASCII.
    init(isNegative: Bool, significand digits: some Sequence<UInt8>, exponent: Int) {
        var digits = Array(digits)
        precondition(digits.allSatisfy { $0 <= 9 }, "decimal digits are values 0 ... 9")
        var exponent = exponent
        while digits.last == 0 {
            digits.removeLast()
            exponent += 1
        }
        let leadingZeros = digits.prefix { $0 == 0 }.count
        digits.removeFirst(leadingZeros)
        if digits.isEmpty {
            self.isNegative = false
            self.significand = []
            self.exponent = 0
        } else {
            self.isNegative = isNegative
            self.significand = digits
            self.exponent = exponent
        }
    }

    /// The integer `value`.
    init(_ value: Int) {
        self.init(isNegative: value < 0, significand: String(value.magnitude).utf8.map { $0 - 0x30 }, exponent: 0)
    }

    /// Parses JSON number text `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, exactly.
    ///
    /// Returns `nil` for anything else (a leading `+` or zero, `.5`, `1.`, surrounding
    /// space, `NaN`) and for exponents beyond ±`lexemeExponentLimit`.
    init?(_ text: some StringProtocol) {
        self.init(lexeme: Array(text.utf8))
    }

    /// Parses the bytes of a JSON number lexeme; see `init?(_:)`.
    init?(lexeme bytes: [UInt8]) {
        var reader = DecimalLexemeReader(bytes: bytes)
        guard let parsed = reader.read() else { return nil }
        self.init(isNegative: parsed.isNegative, significand: parsed.digits, exponent: parsed.exponent)
    }

    // MARK: Properties

    var isZero: Bool { significand.isEmpty }
    /// Whether the value is greater than zero.
    var isPositive: Bool { !isNegative && !isZero }
    /// Whether the value is a whole number ("2.0" and "1e3" are).
    var isInteger: Bool { exponent >= 0 }

    /// The value as an `Int` when it is an integer that fits, else `nil`.
    var exactInteger: Int? {
        guard isInteger, significand.count + exponent <= 19 else { return nil }
        var magnitude: UInt64 = 0
        for digit in significand + [UInt8](repeating: 0, count: exponent) {
            let (times, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times.addingReportingOverflow(UInt64(digit))
            guard !overflow, !carry else { return nil }
            magnitude = sum
        }
        if isNegative {
            guard magnitude <= UInt64(Int.max) + 1 else { return nil }
            return Int(truncatingIfNeeded: 0 &- magnitude)
        }
        guard magnitude <= UInt64(Int.max) else { return nil }
        return Int(magnitude)
    }

    /// The absolute value.
    var magnitude: DecimalNumber { DecimalNumber(isNegative: false, significand: significand, exponent: exponent) }

    static prefix func - (value: DecimalNumber) -> DecimalNumber {
        DecimalNumber(isNegative: !value.isNegative, significand: value.significand, exponent: value.exponent)
    }

    /// The digits of the magnitude's integer part, without leading zeros (empty when the
    /// magnitude is below 1). Writes out every zero the exponent implies.
    var integerPartDigits: [UInt8] {
        let count = significand.count + exponent
        guard count > 0 else { return [] }
        return Array(significand.prefix(count)) + [UInt8](repeating: 0, count: max(0, exponent))
    }

    /// The digits of the magnitude after the decimal point, without trailing zeros (empty
    /// for an integer). Writes out every leading zero the exponent implies.
    var fractionPartDigits: [UInt8] {
        guard exponent < 0 else { return [] }
        let leadingZeros = max(0, -(significand.count + exponent))
        return [UInt8](repeating: 0, count: leadingZeros) + significand.suffix(-exponent)
    }

    // MARK: Comparison

    static func < (left: DecimalNumber, right: DecimalNumber) -> Bool {
        if left.isNegative != right.isNegative { return left.isNegative }
        let order = compareMagnitudes(left, right)
        return left.isNegative ? order > 0 : order < 0
    }

    /// -1, 0 or 1 as `|left|` is below, equal to or above `|right|`.
    static func compareMagnitudes(_ left: DecimalNumber, _ right: DecimalNumber) -> Int {
        if left.isZero || right.isZero { return (left.isZero ? 0 : 1) - (right.isZero ? 0 : 1) }
        // The position just above the leading digit decides first, then the digits.
        let leftTop = left.significand.count + left.exponent, rightTop = right.significand.count + right.exponent
        if leftTop != rightTop { return leftTop < rightTop ? -1 : 1 }
        for (leftDigit, rightDigit) in zip(left.significand, right.significand) where leftDigit != rightDigit {
            return leftDigit < rightDigit ? -1 : 1
        }
        // Equal so far; with no trailing zeros, more digits means a larger value.
        return left.significand.count == right.significand.count ? 0 : left.significand.count < right.significand.count ? -1 : 1
    }

    // MARK: Rounding

    /// The smallest multiple of `10^-fractionDigits` at or above the value (the ceiling
    /// for `fractionDigits == 0`). Exact, and never writes out more digits than the
    /// significand has.
    func roundedUp(fractionDigits: Int = 0) -> DecimalNumber {
        guard let kept = truncatedSignificand(fractionDigits: fractionDigits) else { return self }
        return DecimalNumber(isNegative: isNegative,
                        significand: isNegative ? Array(kept) : Self.incremented(kept),
                        exponent: -fractionDigits)
    }

    /// The largest multiple of `10^-fractionDigits` at or below the value (the floor for
    /// `fractionDigits == 0`).
    func roundedDown(fractionDigits: Int = 0) -> DecimalNumber {
        guard let kept = truncatedSignificand(fractionDigits: fractionDigits) else { return self }
        return DecimalNumber(isNegative: isNegative,
                        significand: isNegative ? Self.incremented(kept) : Array(kept),
                        exponent: -fractionDigits)
    }

    /// The least integer at or above the value.
    var ceiling: DecimalNumber { roundedUp() }
    /// The greatest integer at or below the value.
    var floor: DecimalNumber { roundedDown() }

    /// `self + 1` for an integer. Writes out all of its digits, so callers bound the
    /// exponent first.
    var successor: DecimalNumber {
        precondition(isInteger, "successor of a non-integer")
        let digits = integerPartDigits
        if isNegative {
            return DecimalNumber(isNegative: true, significand: Self.decremented(digits), exponent: 0)
        }
        return DecimalNumber(isNegative: false, significand: Self.incremented(digits[...]), exponent: 0)
    }

    /// The significand's digits at positions `10^-fractionDigits` and above (the
    /// magnitude truncated to that many fraction digits, scaled by `10^fractionDigits`), or
    /// `nil` when the value already is a multiple of `10^-fractionDigits`.
    private func truncatedSignificand(fractionDigits: Int) -> ArraySlice<UInt8>? {
        guard exponent < -fractionDigits else { return nil }
        let kept = significand.count + exponent + fractionDigits
        return kept <= 0 ? [] : significand[..<kept]
    }

    /// The digit string plus one (an empty string is zero).
    private static func incremented(_ digits: ArraySlice<UInt8>) -> [UInt8] {
        var result = Array(digits)
        var index = result.count - 1
        while index >= 0, result[index] == 9 {
            result[index] = 0
            index -= 1
        }
        if index >= 0 { result[index] += 1 } else { result.insert(1, at: 0) }
        return result
    }

    /// The digit string minus one; the string must not be zero.
    private static func decremented(_ digits: [UInt8]) -> [UInt8] {
        var result = digits
        var index = result.count - 1
        while index >= 0, result[index] == 0 {
            result[index] = 9
            index -= 1
        }
        precondition(index >= 0, "decrementing zero")
        result[index] -= 1
        return result
    }

    // MARK: Text

    /// Plain decimal notation ("-12.5", "1000"), or scientific notation ("1.5e+4000") when
    /// the exponent is beyond ±1000.
    var description: String {
        if isZero { return "0" }
        let sign = isNegative ? "-" : ""
        func text(_ digits: some Sequence<UInt8>) -> String { String(decoding: digits.map { $0 + 0x30 }, as: UTF8.self) }
        if abs(exponent) > 1000 {
            let rest = significand.count > 1 ? "." + text(significand.dropFirst()) : ""
            let power = exponent + significand.count - 1
            return sign + text(significand.prefix(1)) + rest + "e" + (power < 0 ? "-" : "+") + String(power.magnitude)
        }
        let integer = integerPartDigits, fraction = fractionPartDigits
        return sign + (integer.isEmpty ? "0" : text(integer)) + (fraction.isEmpty ? "" : "." + text(fraction))
    }
}

/// Reads one JSON number lexeme into sign, digits (integer and fraction parts together,
/// as values 0 ... 9) and the exponent of the last digit.
private struct DecimalLexemeReader {
    let bytes: [UInt8]
    var position = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    private static func isDigit(_ byte: UInt8) -> Bool { (0x30 ... 0x39).contains(byte) }

    private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    private mutating func skip(_ byte: UInt8) -> Bool {
        guard current == byte else { return false }
        position += 1
        return true
    }

    /// The run of digits at the position, as values.
    private mutating func digitRun() -> [UInt8] {
        var run: [UInt8] = []
        while let byte = current, Self.isDigit(byte) {
            run.append(byte - 0x30)
            position += 1
        }
        return run
    }

    mutating func read() -> (isNegative: Bool, digits: [UInt8], exponent: Int)? {
        let isNegative = skip(UInt8(ascii: "-"))
        let integer = digitRun()
        guard let first = integer.first, first != 0 || integer.count == 1 else { return nil }
        var fraction: [UInt8] = []
        if skip(UInt8(ascii: ".")) {
            fraction = digitRun()
            guard !fraction.isEmpty else { return nil }
        }
        var written = 0
        if skip(UInt8(ascii: "e")) || skip(UInt8(ascii: "E")) {
            let isNegativeExponent = skip(UInt8(ascii: "-"))
            if !isNegativeExponent { _ = skip(UInt8(ascii: "+")) }
            let run = digitRun()
            let significant = run.drop { $0 == 0 }
            guard !run.isEmpty, significant.count <= 16 else { return nil }
            written = significant.reduce(0) { $0 * 10 + Int($1) }
            guard written <= DecimalNumber.lexemeExponentLimit else { return nil }
            if isNegativeExponent { written = -written }
        }
        guard position == bytes.count else { return nil }
        return (isNegative, integer + fraction, written - fraction.count)
    }
}

// MARK: - Number languages

/// Exact byte automata for the JSON numbers that satisfy JSON Schema's numeric keywords.
///
/// Every function builds its language as deterministic automata (one per constraint, each
/// small and exact), intersects them, and embeds the result into the caller's automaton as
/// one fragment. Soundness is absolute: no accepted text has a value outside the
/// constraints. The spellings that are not accepted although their value qualifies are
/// listed on each function.
///
/// Bounds are compared digit by digit: "numbers with more integer digits than the bound,
/// or as many with a larger digit after an equal prefix, or an equal integer part and a
/// larger fraction" (and the mirror image for upper bounds), so an automaton has a few
/// states per digit of its bound and 30-digit bounds cost nothing special.
enum NumberLanguage {
    /// The most states an intermediate automaton (a determinised constraint or a product of
    /// two) may have before `GrammarError.budgetExceeded` is thrown.
    static let stateLimit = 1 << 16

    /// Bounds are tightened, never loosened, to at most this many digits after the point
    /// and to magnitudes of at most `10^digitLimit`, so automata stay a few hundred states.
    /// (Minimising a chain of n states takes n refinement rounds, so longer bounds would
    /// cost quadratic time.) Bounds such as ±1.7976931348623157e308 are thus moved in to
    /// ±10^100, and 5e-324 as an exclusive minimum up to 10^-100.
    static let digitLimit = 100

    /// JSON integers written `-?(0|[1-9][0-9]*)` (not "-0") whose value satisfies every
    /// given keyword, as a fragment of `automaton`.
    ///
    /// Bounds may be any decimals; the tightest of `minimum`/`exclusiveMinimum` (and of the
    /// maxima) applies, so `minimum: 1.5` means at least 2 and `exclusiveMaximum: 10` at most
    /// 9. A range with no integer gives a fragment with no path (`nothing()`).
    ///
    /// `multipleOf` may be any positive decimal: with `p/q` its value in lowest terms, an
    /// integer is a multiple exactly when it is divisible by `p` (so 0.5 allows every
    /// integer and 2.5 the multiples of 5). Divisibility is checked by tracking the
    /// remainder digit by digit.
    ///
    /// Not accepted although the value qualifies: spellings with a fraction or an exponent
    /// ("3.0", "3e0"), "-0", and, when a lower bound is below `-10^digitLimit` (an upper
    /// bound above `10^digitLimit`), the integers beyond `-10^digitLimit` (`10^digitLimit`):
    /// such a bound is moved in to that value. Without a bound on a side, any length is
    /// accepted.
    ///
    /// - Throws: `.invalidSchema` for a `multipleOf` that is not positive;
    ///   `.unsupportedKeyword("multipleOf")` when `p` (after factors of 10) needs more than
    ///   `stateLimit` remainder states; `.budgetExceeded` when the range needs integers of
    ///   more than `digitLimit` digits (a minimum above `10^digitLimit`, a maximum below
    ///   `-10^digitLimit`) or an automaton passes `stateLimit` states.
    ///   Pointers are left empty for the caller to fill in.
    static func integer(minimum: DecimalNumber? = nil, exclusiveMinimum: DecimalNumber? = nil,
                        maximum: DecimalNumber? = nil, exclusiveMaximum: DecimalNumber? = nil,
                        multipleOf: DecimalNumber? = nil, filters: NumericFilters = NumericFilters(),
                        into automaton: inout ByteNFA, stateLimit: Int = stateLimit) throws(GrammarError) -> Fragment {
        try integerLanguage(minimum: minimum, exclusiveMinimum: exclusiveMinimum, maximum: maximum, exclusiveMaximum: exclusiveMaximum,
                            multipleOf: multipleOf, filters: filters, stateLimit: stateLimit).embeddedFragment(into: &automaton)
    }

    /// The language of ``integer(minimum:exclusiveMinimum:maximum:exclusiveMaximum:multipleOf:filters:into:stateLimit:)``
    /// as a trimmed, minimal automaton (``DFA/empty`` when no integer qualifies): one
    /// spelling per value, so its strings count the values.
    static func integerLanguage(minimum: DecimalNumber? = nil, exclusiveMinimum: DecimalNumber? = nil,
                                maximum: DecimalNumber? = nil, exclusiveMaximum: DecimalNumber? = nil,
                                multipleOf: DecimalNumber? = nil, filters: NumericFilters = NumericFilters(),
                                stateLimit: Int = stateLimit) throws(GrammarError) -> DFA {
        let divisibility = try multipleOf.map { (value) throws(GrammarError) in try Divisibility(integersMultipleOf: value, stateLimit: stateLimit) }
        let range = NumericRange(minimum: minimum, exclusiveMinimum: exclusiveMinimum,
                                  maximum: maximum, exclusiveMaximum: exclusiveMaximum)
        guard !range.isEmpty else { return .empty }
        var lower: DecimalNumber? = nil, upper: DecimalNumber? = nil
        if let bound = range.lower { lower = try integerBound(bound, side: .lower) }
        if let bound = range.upper { upper = try integerBound(bound, side: .upper) }
        if let lower, let upper, lower > upper { return .empty }

        var languages = [try determinized(stateLimit: stateLimit) { $0.integerSyntax() }]
        if let lower {
            languages.append(try comparison(Bound(value: lower, isStrict: false), side: .lower, allowsFraction: false, stateLimit: stateLimit))
        }
        if let upper {
            languages.append(try comparison(Bound(value: upper, isStrict: false), side: .upper, allowsFraction: false, stateLimit: stateLimit))
        }
        if let divisibility {
            languages.append(try determinized(stateLimit: stateLimit) { divisibility.spellings(allowsFraction: false, into: &$0) })
        }
        return try filters.applied(to: intersection(of: languages, stateLimit: stateLimit), allowsFraction: false, stateLimit: stateLimit)
    }

    /// JSON numbers whose value satisfies every given keyword, as a fragment of `automaton`.
    ///
    /// With no keyword: the whole JSON number grammar
    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`. With any keyword: the spellings
    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?` whose exact value qualifies; "-0" and "-0.0" are the
    /// value 0 and trailing fraction zeros are allowed ("1.50"). Bounds are exact decimals:
    /// `exclusiveMinimum: 0` admits "0.0001" but not "0", "0.0" or "-0.0".
    ///
    /// `multipleOf` may be any positive decimal `m`: a value `v` qualifies when `v / m` is
    /// an integer, decided exactly from the digits (the remainder of the digits read so far
    /// modulo `m`'s significand, and how many fraction digits have been read), with no limit
    /// on the fraction length: "0.50000" is a multiple of 0.25.
    ///
    /// Not accepted although the value qualifies, when a keyword is given: spellings with an
    /// exponent ("1e2", "1.5E-3"); values beyond ±`10^digitLimit` on the side of a bound
    /// that lies beyond it (the bound is moved in to `±10^digitLimit`); and, when a bound has more
    /// than `digitLimit` digits after the point, the values between that bound and the bound
    /// rounded inward to `digitLimit` fraction digits (all of which have more than
    /// `digitLimit` significant fraction digits).
    ///
    /// - Throws: `.invalidSchema` for a `multipleOf` that is not positive;
    ///   `.unsupportedKeyword("multipleOf")` when its significand (after factors of 10)
    ///   times its fraction length needs more than `stateLimit` remainder states;
    ///   `.budgetExceeded` when the range lies entirely beyond ±`10^digitLimit` or an
    ///   automaton passes `stateLimit` states. Pointers are left empty for the caller.
    static func number(minimum: DecimalNumber? = nil, exclusiveMinimum: DecimalNumber? = nil,
                       maximum: DecimalNumber? = nil, exclusiveMaximum: DecimalNumber? = nil,
                       multipleOf: DecimalNumber? = nil, filters: NumericFilters = NumericFilters(),
                       digitLimits: NumberDigitLimits? = nil,
                       into automaton: inout ByteNFA, stateLimit: Int = stateLimit) throws(GrammarError) -> Fragment {
        try numberLanguage(minimum: minimum, exclusiveMinimum: exclusiveMinimum, maximum: maximum, exclusiveMaximum: exclusiveMaximum,
                           multipleOf: multipleOf, filters: filters, digitLimits: digitLimits, stateLimit: stateLimit)
            .embeddedFragment(into: &automaton)
    }

    /// The language of ``number(minimum:exclusiveMinimum:maximum:exclusiveMaximum:multipleOf:filters:digitLimits:into:stateLimit:)``
    /// as a trimmed, minimal automaton (``DFA/empty`` when no number qualifies).
    static func numberLanguage(minimum: DecimalNumber? = nil, exclusiveMinimum: DecimalNumber? = nil,
                               maximum: DecimalNumber? = nil, exclusiveMaximum: DecimalNumber? = nil,
                               multipleOf: DecimalNumber? = nil, filters: NumericFilters = NumericFilters(),
                               digitLimits: NumberDigitLimits? = nil, stateLimit: Int = stateLimit) throws(GrammarError) -> DFA {
        let divisibility = try multipleOf.map { (value) throws(GrammarError) in try Divisibility(numbersMultipleOf: value, stateLimit: stateLimit) }
        let range = NumericRange(minimum: minimum, exclusiveMinimum: exclusiveMinimum,
                                  maximum: maximum, exclusiveMaximum: exclusiveMaximum)
        guard !range.isEmpty else { return .empty }
        // Digit limits widen, never narrow, to the integer digits a bound or the divisor
        // needs (`multipleOf: 1e300` has no multiple of 16 digits but 0).
        let limits = digitLimits.map { limits in
            let needed = ([range.lower?.value, range.upper?.value, multipleOf].compactMap { $0?.integerPartDigits.count }).max() ?? 0
            return NumberDigitLimits(integerDigits: max(limits.integerDigits, needed), fractionDigits: limits.fractionDigits)
        }
        if range.lower == nil, range.upper == nil, divisibility == nil, filters.isEmpty {
            if let limits {
                return try determinized(stateLimit: stateLimit) { $0.numberSyntax(limits: limits) }
            }
            return try determinized(stateLimit: stateLimit) { $0.numberSyntax(allowsExponent: true) }
        }

        var languages = [try determinized(stateLimit: stateLimit) { automaton in
            limits.map { automaton.numberSyntax(limits: $0) } ?? automaton.numberSyntax(allowsExponent: false)
        }]
        if let bound = range.lower {
            let tightened = try tightened(bound, side: .lower, fractionDigits: digitLimit)
            languages.append(try comparison(tightened, side: .lower, allowsFraction: true, stateLimit: stateLimit))
        }
        if let bound = range.upper {
            let tightened = try tightened(bound, side: .upper, fractionDigits: digitLimit)
            languages.append(try comparison(tightened, side: .upper, allowsFraction: true, stateLimit: stateLimit))
        }
        if let divisibility {
            languages.append(try determinized(stateLimit: stateLimit) { divisibility.spellings(allowsFraction: true, into: &$0) })
        }
        return try filters.applied(to: intersection(of: languages, stateLimit: stateLimit), allowsFraction: true, stateLimit: stateLimit)
    }

    // MARK: Bounds

    enum BoundSide { case lower, upper }

    /// The inclusive integer bound equivalent to `bound` on integers, after `tightened`.
    private static func integerBound(_ bound: Bound, side: BoundSide) throws(GrammarError) -> DecimalNumber {
        let moved = try tightened(bound, side: side, fractionDigits: 0)
        guard moved.isStrict else { return moved.value }
        // An integer excluded: the next one inward (mirrored for upper bounds).
        return side == .lower ? moved.value.successor : -((-moved.value).successor)
    }

    /// `bound` moved inward, never outward, to a multiple of `10^-fractionDigits` with a
    /// magnitude of at most `10^digitLimit`: a lower bound below `-10^digitLimit` becomes
    /// `-10^digitLimit` and one between grid points rounds up (inclusive); upper bounds
    /// mirror. The language can only shrink, by values off the grid or beyond the limit.
    ///
    /// - Throws: `.budgetExceeded` when the bound itself is beyond the limit on its inner
    ///   side (a lower bound above `10^digitLimit`), which no short spelling satisfies.
    private static func tightened(_ bound: Bound, side: BoundSide, fractionDigits: Int) throws(GrammarError) -> Bound {
        if side == .upper { return try tightened(bound.negated, side: .lower, fractionDigits: fractionDigits).negated }
        let limit = DecimalNumber(isNegative: false, significand: [1], exponent: digitLimit)
        if bound.value < -limit { return Bound(value: -limit, isStrict: false) }
        if bound.value > limit {
            throw .budgetExceeded(what: "digits of the integer part of a number bound", limit: digitLimit)
        }
        if bound.value.exponent < -fractionDigits {
            return Bound(value: bound.value.roundedUp(fractionDigits: fractionDigits), isStrict: false)
        }
        return bound
    }

    /// The signed spellings whose value satisfies `bound` as a lower or upper bound,
    /// determinised.
    private static func comparison(_ bound: Bound, side: BoundSide, allowsFraction: Bool, stateLimit: Int) throws(GrammarError) -> DFA {
        // An upper bound U on v is the lower bound -U on -v: the same spellings with the sign flipped.
        let sides = side == .lower ? magnitudeComparisons(lower: bound) : magnitudeComparisons(lower: bound.negated)
        let (unsigned, negative) = side == .lower ? (sides.unsigned, sides.negative) : (sides.negative, sides.unsigned)
        return try determinized(stateLimit: stateLimit) { automaton in
            var parts: [Fragment] = []
            if let unsigned { parts.append(unsigned.spellings(allowsFraction: allowsFraction, into: &automaton)) }
            if let negative {
                let minus = automaton.literal("-".utf8)
                parts.append(automaton.sequence([minus, negative.spellings(allowsFraction: allowsFraction, into: &automaton)]))
            }
            return parts.isEmpty ? automaton.nothing() : automaton.union(parts)
        }
    }

    /// For `value ≥ bound` (or `>`): the condition on the magnitude `m` of unsigned
    /// spellings `m` and of negative spellings `-m`; `nil` when no spelling on that side
    /// qualifies.
    private static func magnitudeComparisons(lower bound: Bound) -> (unsigned: MagnitudeComparison?, negative: MagnitudeComparison?) {
        let unsigned = bound.value.isNegative
            ? MagnitudeComparison(direction: .atLeast, bound: .zero, isStrict: false)   // every magnitude
            : MagnitudeComparison(direction: .atLeast, bound: bound.value, isStrict: bound.isStrict)
        // -m ≥ L  ⇔  m ≤ -L, possible only when -L ≥ 0 (and -L > 0 when strict).
        let opposite = -bound.value
        let negative = opposite.isNegative || (opposite.isZero && bound.isStrict)
            ? nil
            : MagnitudeComparison(direction: .atMost, bound: opposite, isStrict: bound.isStrict)
        return (unsigned, negative)
    }

    // MARK: Automata

    /// Builds a fragment in a fresh automaton and determinises it.
    fileprivate static func determinized(stateLimit: Int, _ build: (inout ByteNFA) -> Fragment) throws(GrammarError) -> DFA {
        var automaton = ByteNFA()
        let fragment = build(&automaton)
        do {
            return try DFA(fragment, of: automaton, stateLimit: stateLimit)
        } catch {
            throw error.budgetError ?? budgetError(stateLimit)
        }
    }

    /// The product of all `languages` (strings in every one).
    private static func intersection(of languages: [DFA], stateLimit: Int) throws(GrammarError) -> DFA {
        var result = languages[0]
        for language in languages.dropFirst() {
            do {
                result = try result.intersection(language, stateLimit: stateLimit)
            } catch {
                throw error.budgetError ?? budgetError(stateLimit)
            }
            if result.isEmptyLanguage { break }
        }
        return result
    }

    fileprivate static func budgetError(_ limit: Int) -> GrammarError {
        .budgetExceeded(what: "states of a number automaton", limit: limit)
    }
}

// MARK: - Ranges

/// A bound of a numeric range: the value, and whether the value itself is excluded.
struct Bound: Hashable, Sendable {
    var value: DecimalNumber
    var isStrict: Bool

    var negated: Bound { Bound(value: -value, isStrict: isStrict) }
}

/// The tightest lower and upper bounds among `minimum`, `exclusiveMinimum`, `maximum` and
/// `exclusiveMaximum`.
struct NumericRange: Sendable {
    var lower: Bound?
    var upper: Bound?

    init(minimum: DecimalNumber?, exclusiveMinimum: DecimalNumber?, maximum: DecimalNumber?, exclusiveMaximum: DecimalNumber?) {
        let lowers = [minimum.map { Bound(value: $0, isStrict: false) }, exclusiveMinimum.map { Bound(value: $0, isStrict: true) }]
        let uppers = [maximum.map { Bound(value: $0, isStrict: false) }, exclusiveMaximum.map { Bound(value: $0, isStrict: true) }]
        // Larger lower bounds are tighter; at equal values, the exclusive one.
        lower = lowers.compactMap { $0 }.max { ($0.value, $0.isStrict ? 1 : 0) < ($1.value, $1.isStrict ? 1 : 0) }
        upper = uppers.compactMap { $0 }.min { ($0.value, $0.isStrict ? 0 : 1) < ($1.value, $1.isStrict ? 0 : 1) }
    }

    /// Whether no real number lies in the range.
    var isEmpty: Bool {
        guard let lower, let upper else { return false }
        return lower.value > upper.value || (lower.value == upper.value && (lower.isStrict || upper.isStrict))
    }
}

// MARK: - Magnitude comparisons

/// Unsigned spellings `(0|[1-9][0-9]*)(\.[0-9]+)?` (the fraction only when allowed) whose
/// value is at least / at most `bound` (strictly when `isStrict`); `bound` is not negative.
///
/// Built directly as an automaton with one chain of states following the bound's digits:
/// from the chain, a larger (smaller) digit leads to states that take the remaining integer
/// digits freely; longer (shorter) integer parts branch off the start; the bound's own
/// integer part continues into the same comparison on the fraction, where a missing digit
/// counts as zero. A few states per digit of the bound.
struct MagnitudeComparison: Sendable {
    enum Direction: Sendable { case atLeast, atMost }

    var direction: Direction
    var bound: DecimalNumber
    var isStrict: Bool

    func spellings(allowsFraction: Bool, into automaton: inout ByteNFA) -> Fragment {
        var builder = MagnitudeComparisonBuilder(comparison: self, allowsFraction: allowsFraction)
        // Lend the automaton to the builder without copying its storage.
        swap(&builder.automaton, &automaton)
        let fragment = builder.build()
        swap(&builder.automaton, &automaton)
        return fragment
    }
}

/// The states of one `MagnitudeComparison` while it is being built.
private struct MagnitudeComparisonBuilder {
    let comparison: MagnitudeComparison
    let allowsFraction: Bool
    var automaton = ByteNFA()
    let integerDigits: [UInt8]
    let fractionDigits: [UInt8]
    var start: Int32 = 0
    var end: Int32 = 0
    /// After a complete integer part: an optional fraction (any digits), then the end.
    var wholeNumber: Int32 = 0

    init(comparison: MagnitudeComparison, allowsFraction: Bool) {
        self.comparison = comparison
        self.allowsFraction = allowsFraction
        integerDigits = comparison.bound.integerPartDigits
        fractionDigits = comparison.bound.fractionPartDigits
    }

    static let anyDigit = digits(0 ... 9)
    static let nonzeroDigit = digits(1 ... 9)

    /// The ASCII digits with values in `values`.
    static func digits(_ values: ClosedRange<UInt8>) -> ByteSet { ByteSet((0x30 + values.lowerBound) ... (0x30 + values.upperBound)) }
    static func digit(_ value: UInt8) -> ByteSet { digits(value ... value) }

    private mutating func state() -> Int32 { automaton.addState() }
    private mutating func edge(_ source: Int32, _ target: Int32, _ bytes: ByteSet?) {
        automaton.addEdge(from: source, to: target, label: bytes.map { .bytes($0) })
    }

    mutating func build() -> Fragment {
        start = state()
        end = state()
        wholeNumber = state()
        edge(wholeNumber, end, nil)
        if allowsFraction {
            let point = state(), fraction = state()
            edge(wholeNumber, point, ByteSet([UInt8(ascii: ".")]))
            edge(point, fraction, Self.anyDigit)
            edge(fraction, fraction, Self.anyDigit)
            edge(fraction, end, nil)
        }
        let count = integerDigits.count
        // tails[k]: k more integer digits, any, then the rest of a whole number.
        var tails = [wholeNumber]
        for _ in 0 ..< max(count - 1, 0) {
            let tail = state()
            edge(tail, tails[tails.count - 1], Self.anyDigit)
            tails.append(tail)
        }
        // chain[i]: the first i digits of the bound's integer part read.
        var chain = [start]
        for digit in integerDigits {
            let next = state()
            edge(chain[chain.count - 1], next, Self.digit(digit))
            chain.append(next)
        }
        let equalInteger: Int32
        if count == 0 {
            equalInteger = state()
            edge(start, equalInteger, Self.digit(0))
        } else {
            equalInteger = chain[count]
        }
        for position in 0 ..< count {
            if let differing = differingDigits(at: position) { edge(chain[position], tails[count - 1 - position], differing) }
        }
        switch comparison.direction {
        case .atLeast:
            addLongerIntegerParts()
            addFractionsAtLeast(from: equalInteger)
        case .atMost:
            addShorterIntegerParts()
            addFractionsAtMost(from: equalInteger)
        }
        return Fragment(start: start, end: end)
    }

    /// At an integer digit where the number first differs from the bound: the digits that
    /// make it larger (at least) or smaller (at most), without a leading zero.
    private func differingDigits(at position: Int) -> ByteSet? {
        let digit = integerDigits[position]
        switch comparison.direction {
        case .atLeast:
            return digit < 9 ? Self.digits(digit + 1 ... 9) : nil
        case .atMost:
            let lowest: UInt8 = position == 0 ? 1 : 0
            return digit > lowest ? Self.digits(lowest ... digit - 1) : nil
        }
    }

    /// Integer parts with more digits than the bound's: `[1-9][0-9]{count}[0-9]*`.
    private mutating func addLongerIntegerParts() {
        var current = state()
        edge(start, current, Self.nonzeroDigit)
        for _ in 0 ..< integerDigits.count {
            let next = state()
            edge(current, next, Self.anyDigit)
            current = next
        }
        edge(current, current, Self.anyDigit)
        edge(current, wholeNumber, nil)
    }

    /// Integer parts with fewer digits than the bound's (which has some): "0" and
    /// `[1-9][0-9]{0,count-2}`.
    private mutating func addShorterIntegerParts() {
        guard !integerDigits.isEmpty else { return }
        edge(start, wholeNumber, Self.digit(0))
        guard integerDigits.count >= 2 else { return }
        var current = state()
        edge(start, current, Self.nonzeroDigit)
        edge(current, wholeNumber, nil)
        for _ in 2 ..< integerDigits.count {
            let next = state()
            edge(current, next, Self.anyDigit)
            edge(next, wholeNumber, nil)
            current = next
        }
    }

    /// A state taking any digits, then the end.
    private mutating func anyDigitsThenEnd() -> Int32 {
        let rest = state()
        edge(rest, rest, Self.anyDigit)
        edge(rest, end, nil)
        return rest
    }

    /// A state taking digits with at least one nonzero, then the end: `[0-9]*[1-9][0-9]*`.
    private mutating func someNonzeroDigitThenEnd() -> Int32 {
        let zeros = state()
        edge(zeros, zeros, Self.anyDigit)
        edge(zeros, anyDigitsThenEnd(), Self.nonzeroDigit)
        return zeros
    }

    /// After ".", states following the bound's fraction digits; from the i-th, `leave(i)`
    /// names the digits that branch off to `branch`. Returns the chain (its last state: all
    /// of the bound's fraction read).
    private mutating func fractionChain(from equalInteger: Int32, branch: Int32, leave: (UInt8) -> ByteSet?) -> [Int32] {
        var chain = [state()]
        edge(equalInteger, chain[0], ByteSet([UInt8(ascii: ".")]))
        for digit in fractionDigits {
            if let set = leave(digit) { edge(chain[chain.count - 1], branch, set) }
            let next = state()
            edge(chain[chain.count - 1], next, Self.digit(digit))
            chain.append(next)
        }
        return chain
    }

    /// After an integer part equal to the bound's: fractions at least (above) the bound's.
    private mutating func addFractionsAtLeast(from equalInteger: Int32) {
        if fractionDigits.isEmpty {
            if !comparison.isStrict {
                edge(equalInteger, wholeNumber, nil)
            } else if allowsFraction {
                edge(equalInteger, someNonzeroDigitThenEnd(), ByteSet([UInt8(ascii: ".")]))
            }
            return
        }
        guard allowsFraction else { return }   // equal integer part, no fraction: below the bound
        let rest = anyDigitsThenEnd()
        let chain = fractionChain(from: equalInteger, branch: rest) { $0 < 9 ? Self.digits($0 + 1 ... 9) : nil }
        let matched = chain[chain.count - 1]
        edge(matched, comparison.isStrict ? someNonzeroDigitThenEnd() : rest, nil)
    }

    /// After an integer part equal to the bound's: fractions at most (below) the bound's.
    private mutating func addFractionsAtMost(from equalInteger: Int32) {
        if fractionDigits.isEmpty {
            guard !comparison.isStrict else { return }
            edge(equalInteger, end, nil)
            if allowsFraction {
                // "." and zeros only.
                let point = state(), zeros = state()
                edge(equalInteger, point, ByteSet([UInt8(ascii: ".")]))
                edge(point, zeros, Self.digit(0))
                edge(zeros, zeros, Self.digit(0))
                edge(zeros, end, nil)
            }
            return
        }
        edge(equalInteger, end, nil)   // no fraction: below a bound with one
        guard allowsFraction else { return }
        let rest = anyDigitsThenEnd()
        let chain = fractionChain(from: equalInteger, branch: rest) { $0 > 0 ? Self.digits(0 ... $0 - 1) : nil }
        // A proper, non-empty prefix of the bound's fraction is below it (the rest of the bound's is not all zeros).
        for state in chain.dropFirst().dropLast() { edge(state, end, nil) }
        if !comparison.isStrict {
            let matched = chain[chain.count - 1]
            edge(matched, matched, Self.digit(0))
            edge(matched, end, nil)
        }
    }
}

// MARK: - Divisibility

/// What `multipleOf` asks of a spelling: its value times `10^scale` is an integer multiple
/// of `divisor × 10^trailingZeros` (one of `scale` and `trailingZeros` is 0).
struct Divisibility: Hashable, Sendable {
    var divisor: Int
    var trailingZeros: Int
    var scale: Int

    /// For integers and `multipleOf` = `m × 10^e` (`m` without trailing zeros): with
    /// `e ≥ 0`, divisibility by `m` then `e` zeros; with `e < 0`, `m / 10^-e` in lowest terms
    /// is `p/q`, and an integer is a multiple exactly when `p` divides it.
    init(integersMultipleOf value: DecimalNumber, stateLimit: Int) throws(GrammarError) {
        try Self.checkPositive(value)
        var digits = value.significand
        if value.exponent < 0 {
            // Cancel the common factors of 2 and 5 with the denominator 10^-e.
            for factor in [2, 5] {
                var removed = 0
                while removed < -value.exponent {
                    let (quotient, remainder) = Self.divide(digits, by: factor)
                    guard remainder == 0 else { break }
                    digits = quotient
                    removed += 1
                }
            }
        }
        let divisor = try Self.smallInteger(digits, of: value, stateLimit: stateLimit)
        self.init(divisor: divisor, trailingZeros: max(value.exponent, 0), scale: 0)
        try checkStates(of: value, stateLimit: stateLimit, allowsFraction: false)
    }

    /// For numbers and `multipleOf` = `m × 10^e`: `v` qualifies when `v × 10^max(-e, 0)` is an
    /// integer multiple of `m × 10^max(e, 0)`.
    init(numbersMultipleOf value: DecimalNumber, stateLimit: Int) throws(GrammarError) {
        try Self.checkPositive(value)
        let divisor = try Self.smallInteger(value.significand, of: value, stateLimit: stateLimit)
        self.init(divisor: divisor, trailingZeros: max(value.exponent, 0), scale: max(-value.exponent, 0))
        try checkStates(of: value, stateLimit: stateLimit, allowsFraction: true)
    }

    init(divisor: Int, trailingZeros: Int, scale: Int) {
        self.divisor = divisor
        self.trailingZeros = trailingZeros
        self.scale = scale
    }

    /// An upper estimate of the states of the determinised `spellings`.
    /// (Saturates at `Int.max`.)
    func estimatedStates(allowsFraction: Bool) -> Int {
        let stages = allowsFraction ? scale &+ trailingZeros &+ 3 : trailingZeros &+ 1
        let (product, overflow) = divisor.multipliedReportingOverflow(by: stages)
        return overflow || product > Int.max - 4 ? Int.max : product + 4
    }

    private static func checkPositive(_ value: DecimalNumber) throws(GrammarError) {
        guard value.isPositive else { throw .invalidSchema(pointer: "", message: "multipleOf must be greater than 0, not \(value)") }
    }

    private func checkStates(of value: DecimalNumber, stateLimit: Int, allowsFraction: Bool) throws(GrammarError) {
        let states = estimatedStates(allowsFraction: allowsFraction)
        guard states <= stateLimit else {
            throw Self.unsupported(value, "it needs about \(states) remainder states, more than the limit of \(stateLimit)")
        }
    }

    private static func unsupported(_ value: DecimalNumber, _ reason: String) -> GrammarError {
        .unsupportedKeyword(keyword: "multipleOf", pointer: "", reason: "multipleOf \(value): \(reason)")
    }

    /// The digits as an `Int` no larger than `stateLimit`.
    private static func smallInteger(_ digits: [UInt8], of value: DecimalNumber, stateLimit: Int) throws(GrammarError) -> Int {
        var result = 0
        for digit in digits {
            result = result * 10 + Int(digit)
            if result > stateLimit {
                throw unsupported(value, "its significand \(String(decoding: digits.map { $0 + 0x30 }, as: UTF8.self)) needs more than \(stateLimit) remainder states")
            }
        }
        return result
    }

    /// Long division of a decimal digit string by a small positive integer.
    static func divide(_ digits: [UInt8], by divisor: Int) -> (quotient: [UInt8], remainder: Int) {
        var quotient: [UInt8] = []
        var remainder = 0
        for digit in digits {
            let current = remainder * 10 + Int(digit)
            quotient.append(UInt8(current / divisor))
            remainder = current % divisor
        }
        return (Array(quotient.drop { $0 == 0 }), remainder)
    }

    /// The spellings `-?(0|[1-9][0-9]*)` (not "-0"), or `-?(0|[1-9][0-9]*)(\.[0-9]+)?`
    /// when `allowsFraction`, whose value qualifies.
    ///
    /// States track the remainder modulo `divisor` of the digits read so far, and in the
    /// fraction how many digits have been read (up to `scale`; beyond it only zeros may
    /// follow). An integer part must end in `trailingZeros` zeros after a multiple of
    /// `divisor` (or be "0"); a fraction then has only zeros.
    func spellings(allowsFraction: Bool, into automaton: inout ByteNFA) -> Fragment {
        let start = automaton.addState(), afterMinus = automaton.addState(), end = automaton.addState()
        let zero = automaton.addState()
        automaton.addEdge(from: start, to: afterMinus, label: .bytes(ByteSet([UInt8(ascii: "-")])))
        automaton.addEdge(from: start, to: zero, label: .bytes(ByteSet([UInt8(ascii: "0")])))
        if allowsFraction { automaton.addEdge(from: afterMinus, to: zero, label: .bytes(ByteSet([UInt8(ascii: "0")]))) }

        // integer[r]: a non-zero integer part so far, remainder r.
        let integer = (0 ..< divisor).map { _ in automaton.addState() }
        for entry in [start, afterMinus] {
            addDigitEdges(from: entry, remainder: 0, digits: 1 ... 9, to: integer, into: &automaton)
        }
        for remainder in 0 ..< divisor {
            addDigitEdges(from: integer[remainder], remainder: remainder, digits: 0 ... 9, to: integer, into: &automaton)
        }
        // complete[r]: a whole integer part, whose value × 10^scale has remainder r·10^scale.
        let complete = (0 ..< divisor).map { _ in automaton.addState() }
        automaton.addEdge(from: zero, to: complete[0], label: nil)
        if trailingZeros == 0 {
            for remainder in 0 ..< divisor { automaton.addEdge(from: integer[remainder], to: complete[remainder], label: nil) }
        } else {
            let zeros = automaton.literal([UInt8](repeating: UInt8(ascii: "0"), count: trailingZeros))
            automaton.addEdge(from: integer[0], to: zeros.start, label: nil)
            automaton.addEdge(from: zeros.end, to: complete[0], label: nil)
        }
        let powers = powersOfTen(upTo: scale)
        for remainder in 0 ..< divisor where remainder * powers[scale] % divisor == 0 {
            automaton.addEdge(from: complete[remainder], to: end, label: nil)
        }
        if allowsFraction { addFraction(after: complete, powers: powers, end: end, into: &automaton) }
        return Fragment(start: start, end: end)
    }

    /// `10^k mod divisor` for k in 0 ... `exponent`.
    private func powersOfTen(upTo exponent: Int) -> [Int] {
        var powers = [1 % divisor]
        for _ in 0 ..< exponent { powers.append(powers[powers.count - 1] * 10 % divisor) }
        return powers
    }

    /// Edges on the digits `digits` from `source` (remainder `remainder`) to `targets[(10r + d) mod divisor]`.
    private func addDigitEdges(from source: Int32, remainder: Int, digits: ClosedRange<Int>, to targets: [Int32], into automaton: inout ByteNFA) {
        var byTarget: [Int: ByteSet] = [:]
        for digit in digits { byTarget[(remainder * 10 + digit) % divisor, default: ByteSet()].insert(UInt8(0x30 + digit)) }
        for (target, bytes) in byTarget.sorted(by: { $0.key < $1.key }) {
            automaton.addEdge(from: source, to: targets[target], label: .bytes(bytes))
        }
    }

    /// "." and fraction digits after each `complete[r]`: fraction[j][r] has read j digits
    /// (j = scale + 1 stands for "more than scale", after which only zeros were allowed).
    private func addFraction(after complete: [Int32], powers: [Int], end: Int32, into automaton: inout ByteNFA) {
        let fraction = (0 ... scale + 1).map { _ in (0 ..< divisor).map { _ in automaton.addState() } }
        for remainder in 0 ..< divisor {
            automaton.addEdge(from: complete[remainder], to: fraction[0][remainder], label: .bytes(ByteSet([UInt8(ascii: ".")])))
        }
        let zero = ByteSet([UInt8(ascii: "0")])
        for read in 0 ... scale + 1 {
            for remainder in 0 ..< divisor {
                let source = fraction[read][remainder]
                if read < scale {
                    addDigitEdges(from: source, remainder: remainder, digits: 0 ... 9, to: fraction[read + 1], into: &automaton)
                } else {
                    automaton.addEdge(from: source, to: fraction[scale + 1][remainder], label: .bytes(zero))
                }
                // The value × 10^scale is the digits so far followed by scale - read zeros.
                if read >= 1, remainder * powers[max(scale - read, 0)] % divisor == 0 {
                    automaton.addEdge(from: source, to: end, label: nil)
                }
            }
        }
    }
}

// MARK: - Syntax

/// The most digits a generated number may have before and after its point
/// (`JSONSchemaOptions.boundsNumberDigits`).
struct NumberDigitLimits: Sendable, Hashable {
    var integerDigits: Int
    var fractionDigits: Int

    /// About what a `Double` holds: 16 and 16.
    static let double = NumberDigitLimits(integerDigits: 16, fractionDigits: 16)
}

extension NFA where Label == ByteLabel {
    /// `-?[1-9][0-9]*` or "0": JSON integers without exponent or fraction, and not "-0".
    fileprivate mutating func integerSyntax() -> Fragment {
        let nonzero = sequence([optional(literal("-".utf8)), bytes(ByteSet(0x31 ... 0x39)), star(bytes(ByteSet(0x30 ... 0x39)))])
        return union([literal("0".utf8), nonzero])
    }

    /// `-?(0|[1-9][0-9]{0,n-1})(\.[0-9]{1,m})?` with `n` = `limits.integerDigits` and `m` =
    /// `limits.fractionDigits`: numbers without exponent and with bounded digits.
    fileprivate mutating func numberSyntax(limits: NumberDigitLimits) -> Fragment {
        let digit = ByteSet(0x30 ... 0x39)
        let integerPart = union([literal("0".utf8), sequence([bytes(ByteSet(0x31 ... 0x39)), upTo(limits.integerDigits - 1, of: digit)])])
        let fraction = optional(sequence([literal(".".utf8), bytes(digit), upTo(limits.fractionDigits - 1, of: digit)]))
        return sequence([optional(literal("-".utf8)), integerPart, fraction])
    }

    /// Up to `count` bytes of `set` (a chain of `count` states).
    private mutating func upTo(_ count: Int, of set: ByteSet) -> Fragment {
        guard count > 0 else { return empty() }
        var chain = optional(bytes(set))
        for _ in 1 ..< count { chain = optional(sequence([bytes(set), chain])) }
        return chain
    }

    /// `0|-?[1-9][0-9]*(\.[0-9]*[1-9])?|-?0\.[0-9]*[1-9]`: each value's shortest spelling
    /// without an exponent.
    fileprivate mutating func shortestNumberSyntax() -> Fragment {
        let digit = ByteSet(0x30 ... 0x39), nonzero = ByteSet(0x31 ... 0x39)
        func fraction() -> Fragment { sequence([literal(".".utf8), star(bytes(digit)), bytes(nonzero)]) }
        let whole = sequence([optional(literal("-".utf8)), bytes(nonzero), star(bytes(digit)), optional(fraction())])
        let belowOne = sequence([optional(literal("-".utf8)), literal("0".utf8), fraction()])
        return union([literal("0".utf8), whole, belowOne])
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?`, then `([eE][+-]?[0-9]+)?` when `allowsExponent`.
    fileprivate mutating func numberSyntax(allowsExponent: Bool) -> Fragment {
        let digit = ByteSet(0x30 ... 0x39)
        let integerPart = union([literal("0".utf8), sequence([bytes(ByteSet(0x31 ... 0x39)), star(bytes(digit))])])
        let fraction = optional(sequence([literal(".".utf8), plus(bytes(digit))]))
        var parts = [optional(literal("-".utf8)), integerPart, fraction]
        if allowsExponent {
            let sign = optional(bytes(ByteSet("+-".utf8)))
            parts.append(optional(sequence([bytes(ByteSet("eE".utf8)), sign, plus(bytes(digit))])))
        }
        return sequence(parts)
    }
}

extension DFA {
    /// The language as a fragment of `automaton`: `nothing()` when it is empty.
    func embeddedFragment(into automaton: inout ByteNFA) -> Fragment {
        isEmptyLanguage ? automaton.nothing() : embed(into: &automaton)
    }
}

/// Further conditions on a number language, each applied as an automaton product:
/// multiples it must also be (a second `multipleOf`, as `allOf` merges them), values it must
/// leave out (`not` of an `enum`/`const`) and multiples it must not be (`not` of a
/// `multipleOf`, or of `"type": "integer"`, which is "not a multiple of 1").
///
/// An excluded value is subtracted from a language of exponent-free spellings: the spellings
/// of one value are then the regular set `text(\.0+)?` (a whole number, and `-0` for zero) or
/// `text0*`, whereas with exponents they would be infinite in a way no automaton counts
/// ("10e-1", "100e-2", …). The languages filtered therefore never allow exponents.
struct NumericFilters: Sendable {
    var requiredMultiples: [DecimalNumber] = []
    var excludedValues: [DecimalNumber] = []
    var excludedMultiples: [DecimalNumber] = []
    /// Only each value's shortest spelling: no trailing fraction zeros, no "-0" ("1.5", not
    /// "1.50"; "0.5", "-0.5", "0"). An integer language has no other.
    var writesEachValueOnce = false

    var isEmpty: Bool { requiredMultiples.isEmpty && excludedValues.isEmpty && excludedMultiples.isEmpty && !writesEachValueOnce }

    /// `language` restricted accordingly. `allowsFraction` is false for integer languages
    /// (whose only spelling of a value is its canonical one).
    func applied(to language: DFA, allowsFraction: Bool, stateLimit: Int) throws(GrammarError) -> DFA {
        func multiples(of value: DecimalNumber) throws(GrammarError) -> DFA {
            let divisibility = allowsFraction
                ? try Divisibility(numbersMultipleOf: value, stateLimit: stateLimit)
                : try Divisibility(integersMultipleOf: value, stateLimit: stateLimit)
            return try NumberLanguage.determinized(stateLimit: stateLimit) { divisibility.spellings(allowsFraction: allowsFraction, into: &$0) }
        }
        func combined(_ result: DFA, _ other: DFA, keep: Bool) throws(GrammarError) -> DFA {
            do {
                return keep ? try result.intersection(other, stateLimit: stateLimit) : try result.subtracting(other, stateLimit: stateLimit)
            } catch {
                throw error.budgetError ?? NumberLanguage.budgetError(stateLimit)
            }
        }
        var result = language
        for multiple in requiredMultiples where !result.isEmptyLanguage {
            result = try combined(result, try multiples(of: multiple), keep: true)
        }
        for value in excludedValues where !result.isEmptyLanguage {
            let spellings = try NumberLanguage.determinized(stateLimit: stateLimit) { Self.spellings(of: value, allowsFraction: allowsFraction, into: &$0) }
            result = try combined(result, spellings, keep: false)
        }
        for multiple in excludedMultiples where !result.isEmptyLanguage {
            result = try combined(result, try multiples(of: multiple), keep: false)
        }
        if writesEachValueOnce, allowsFraction, !result.isEmptyLanguage {
            result = try combined(result, try NumberLanguage.determinized(stateLimit: stateLimit) { $0.shortestNumberSyntax() }, keep: true)
        }
        return result
    }

    /// Every exponent-free spelling of `value` (a superset is harmless: the extra strings are
    /// not JSON numbers, and the language subtracted from has only JSON numbers).
    static func spellings(of value: DecimalNumber, allowsFraction: Bool, into automaton: inout ByteNFA) -> Fragment {
        let text = value.description
        guard !text.contains("e") else { return automaton.nothing() }  // beyond any exponent-free language's digits
        var parts: [Fragment] = []
        if value.isZero { parts.append(automaton.optional(automaton.literal("-".utf8))) }
        parts.append(automaton.literal(text.utf8))
        if allowsFraction {
            let zero = automaton.bytes(ByteSet([UInt8(ascii: "0")]))
            if value.isInteger {
                parts.append(automaton.optional(automaton.sequence([automaton.literal(".".utf8), automaton.plus(zero)])))
            } else {
                parts.append(automaton.star(zero))
            }
        }
        return automaton.sequence(parts)
    }
}
