// The incremental JSON reader: for text that arrives in pieces (a model's output, token by
// token) it validates every byte as it comes and can show the value read so far at any moment.
// `JSONValue(parsing:)` is this reader given the whole text at once.

// MARK: - Partial values

/// A JSON value as far as it has arrived: the value read so far, closed where it is cut (a
/// string streamed in part reads as its text so far; numbers and literals appear only once
/// complete), and which of its parts are still open.
///
/// Only the last value of an open container can itself be open, so the open parts form one
/// path down from the root, given as child indices (element index, or member index in order):
///
///     text so far            value              openPath
///     {"name": "Bri          {"name":"Bri"}     [0]    the object, and its member 0
///     [1, 2                  [1,2]              []     the array (its elements are complete)
///     [1, 2]                 [1,2]              nil    complete
///
/// Invariant: snapshots of one parse only grow. A later snapshot extends an earlier one
/// (strings by appending scalars, containers by gaining members or extending their last one),
/// and a complete part never changes.
public struct PartialJSONValue: Sendable, Equatable {
    /// The value so far.
    public var value: JSONValue
    /// `nil` when the value is complete; otherwise the path of open children below the open
    /// root (empty when the root is the only open part).
    public var openPath: [Int]?

    public init(_ value: JSONValue, openPath: [Int]? = nil) {
        self.value = value
        self.openPath = openPath
    }

    /// Whether the value, and everything in it, has arrived to its end.
    public var isComplete: Bool { openPath == nil }

    /// Child `index` of this array or object (element, or member in order) with its own
    /// openness: open only if it lies on the open path.
    ///
    /// Precondition: `index` is a valid child index.
    public func child(_ index: Int) -> PartialJSONValue {
        let childValue: JSONValue
        switch value {
        case .array(let items): childValue = items[index]
        case .object(let members): childValue = members[index].1
        default: preconditionFailure("a \(value.typeName) has no children")
        }
        guard let openPath, openPath.first == index else { return PartialJSONValue(childValue) }
        return PartialJSONValue(childValue, openPath: Array(openPath.dropFirst()))
    }
}

// MARK: - Parser

/// Reads one JSON text (RFC 8259) byte by byte, in pieces split anywhere.
///
/// The parser keeps a stack of the containers under construction and the token being read, so
/// `append` costs O(bytes appended) amortized and never re-reads earlier input; nothing recurses,
/// so deep input cannot overflow the call stack. Errors are reported at the first byte that cannot
/// continue a valid JSON text (for `\u` escapes: the first hex digit that makes an unpaired
/// surrogate certain) and are sticky: once thrown, every later `append` or `finish` rethrows it.
///
/// A member name that repeats keeps its first position and takes the last value, as Python's
/// `json` module and JavaScript's `JSON.parse` read it.
public struct IncrementalJSONParser: Sendable {
    /// What to do with a `\u` escape of a surrogate that is not half of a pair.
    public enum LoneSurrogates: Sendable {
        /// Reject it (the default: a model writing one has gone wrong).
        case reject
        /// Read it as U+FFFD, as Swift strings must (what Python's `json` accepts; for
        /// reading documents written elsewhere).
        case replace
    }

    /// A container whose closing bracket has not arrived.
    private struct Frame: Sendable {
        let isObject: Bool
        /// Complete elements (arrays) or complete member values (objects).
        var values: [JSONValue] = []
        /// Names of the complete members, parallel to `values` (objects only).
        var names: [String] = []
        /// Where each name is in `names` (objects only).
        var nameIndices: [String: Int] = [:]
        /// The name of the member whose value is being read (objects only).
        var pendingName: String?

        /// The index a member named `name` takes: its first position when the name repeats.
        func memberIndex(_ name: String) -> Int { nameIndices[name] ?? names.count }

        /// Adds a complete element or member value.
        mutating func add(_ value: JSONValue) {
            guard isObject else { return values.append(value) }
            let name = pendingName ?? ""
            pendingName = nil
            if let index = nameIndices[name] { values[index] = value; return }
            nameIndices[name] = names.count
            names.append(name)
            values.append(value)
        }

        /// The container as far as it has arrived, with `child` (the value being read, open) in
        /// its place.
        func snapshot(with child: PartialJSONValue?) -> PartialJSONValue {
            guard isObject else {
                guard let child else { return PartialJSONValue(.array(values), openPath: []) }
                return PartialJSONValue(.array(values + [child.value]), openPath: [values.count] + (child.openPath ?? []))
            }
            var members = Array(zip(names, values))
            guard let child, let pendingName else { return PartialJSONValue(.object(members), openPath: []) }
            let index = memberIndex(pendingName)
            if index < members.count { members[index].1 = child.value } else { members.append((pendingName, child.value)) }
            return PartialJSONValue(.object(members), openPath: [index] + (child.openPath ?? []))
        }
    }

    /// What the next byte outside a token may be (whitespace aside).
    private enum Expectation: Sendable { case value, valueOrClose, nameOrClose, name, colon, commaOrClose, end }

    /// Where a number is in `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    private enum NumberPhase: Sendable {
        case sign, zero, integer, dot, fraction, exponentMark, exponentSign, exponent

        /// Whether the text so far is a whole number.
        var isComplete: Bool { [.zero, .integer, .fraction, .exponent].contains(self) }
    }

    /// Progress through an escape sequence inside a string.
    private enum Escape: Sendable, Equatable {
        case none, backslash
        /// After `\u` and `digits` hex digits; `high` is the high surrogate this escape must complete.
        case hex(digits: Int, value: UInt32, high: UInt32?)
        /// After a high surrogate escape, waiting for the `\u` of its low surrogate.
        case pairing(high: UInt32, sawBackslash: Bool)
    }

    /// The token being read.
    private enum Token: Sendable {
        case none
        case string(isName: Bool)
        case number(NumberPhase)
        case literal(expected: [UInt8], matched: Int, value: JSONValue)
    }

    private static let trueBytes = Array("true".utf8), falseBytes = Array("false".utf8), nullBytes = Array("null".utf8)

    /// The most containers that may be open at once.
    public let maximumDepth: Int
    public let loneSurrogates: LoneSurrogates
    private var frames: [Frame] = []
    private var expectation = Expectation.value
    private var token = Token.none
    /// The decoded text of the string being read (complete scalars only), or the number's text.
    private var text = ""
    private var escape = Escape.none
    /// UTF-8 continuation bytes still due for `partialScalar`, and the range the next one must be in.
    private var continuationBytes = 0
    private var partialScalar: UInt32 = 0
    private var continuationRange: ClosedRange<UInt8> = 0x80 ... 0xBF
    /// The top-level value once complete.
    public private(set) var value: JSONValue?
    /// Bytes consumed so far: the offset of the next byte.
    private var offset = 0
    private var failure: GrammarError?
    private var isFinished = false

    /// - Parameters:
    ///   - maximumDepth: the most containers that may be open at once; deeper input throws.
    ///   - loneSurrogates: what a `\u` escape of an unpaired surrogate does.
    public init(maximumDepth: Int = 512, loneSurrogates: LoneSurrogates = .reject) {
        self.maximumDepth = maximumDepth
        self.loneSurrogates = loneSurrogates
    }

    /// Consumes more bytes of one JSON text (RFC 8259, whitespace allowed anywhere JSON allows it).
    ///
    /// - Throws: ``GrammarError/invalidJSON(offset:message:)`` at the first byte that cannot
    ///   continue a valid JSON text, or when nesting exceeds `maximumDepth`.
    /// - Complexity: O(`bytes.count`) amortized.
    public mutating func append(_ bytes: some Sequence<UInt8>) throws(GrammarError) {
        if let failure { throw failure }
        if isFinished { throw fail("input after finish()") }
        for byte in bytes {
            try consume(byte)
            offset += 1
        }
    }

    /// Marks the end of input: throws if the text is not a complete JSON value (a top-level
    /// number is completed here).
    ///
    /// - Throws: ``GrammarError/invalidJSON(offset:message:)``.
    public mutating func finish() throws(GrammarError) {
        if let failure { throw failure }
        isFinished = true
        if case .number(let phase) = token {
            guard phase.isComplete else { throw fail("unexpected end of input in a number") }
            endNumber()
        }
        guard value != nil else { throw fail("unexpected end of input") }
    }

    /// The value so far, `nil` before its first byte (or while only a number/literal prefix
    /// has arrived at top level).
    ///
    /// - Complexity: O(size of the value).
    public var snapshot: PartialJSONValue? {
        if let value { return PartialJSONValue(value) }
        var partial: PartialJSONValue?
        if case .string(isName: false) = token { partial = PartialJSONValue(.string(text), openPath: []) }
        for frame in frames.reversed() { partial = frame.snapshot(with: partial) }
        return partial
    }

    /// Whether a complete top-level value has been read (trailing whitespace allowed after it;
    /// anything else throws).
    public var isComplete: Bool { value != nil }

    // MARK: Bytes

    /// The error for the current byte (or the end of input), remembered so that later calls rethrow it.
    private mutating func fail(_ message: String) -> GrammarError {
        let error = GrammarError.invalidJSON(offset: offset, message: message)
        failure = error
        return error
    }

    /// Takes the byte at `offset`: continues the current token, or the structure when there is none.
    private mutating func consume(_ byte: UInt8) throws(GrammarError) {
        switch token {
        case .none: try consumeStructure(byte)
        case .string(let isName): try consumeString(byte, isName: isName)
        case .number(let phase):
            guard try !continueNumber(phase, with: byte) else { return }
            endNumber()
            try consumeStructure(byte)
        case let .literal(expected, matched, value):
            guard matched < expected.count, expected[matched] == byte else {
                throw fail("expected '\(String(decoding: expected, as: UTF8.self))'")
            }
            if matched + 1 < expected.count {
                token = .literal(expected: expected, matched: matched + 1, value: value)
            } else {
                token = .none
                deliver(value)
            }
        }
    }

    // MARK: Structure

    /// Takes a byte outside any token: whitespace, punctuation or the first byte of a value or name.
    private mutating func consumeStructure(_ byte: UInt8) throws(GrammarError) {
        if byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { return }
        switch expectation {
        case .value, .valueOrClose:
            if expectation == .valueOrClose, byte == UInt8(ascii: "]") { return closeContainer() }
            try startValue(byte)
        case .nameOrClose, .name:
            if expectation == .nameOrClose, byte == UInt8(ascii: "}") { return closeContainer() }
            guard byte == UInt8(ascii: "\"") else { throw fail("expected a member name") }
            startString(isName: true)
        case .colon:
            guard byte == UInt8(ascii: ":") else { throw fail("expected ':'") }
            expectation = .value
        case .commaOrClose:
            let isObject = frames.last?.isObject ?? false
            if byte == UInt8(ascii: ",") {
                expectation = isObject ? .name : .value
            } else if byte == UInt8(ascii: isObject ? "}" : "]") {
                closeContainer()
            } else {
                throw fail(isObject ? "expected ',' or '}'" : "expected ',' or ']'")
            }
        case .end:
            throw fail("unexpected text after the value")
        }
    }

    private mutating func startValue(_ byte: UInt8) throws(GrammarError) {
        switch byte {
        case UInt8(ascii: "\""): startString(isName: false)
        case UInt8(ascii: "["), UInt8(ascii: "{"):
            guard frames.count < maximumDepth else { throw fail("nesting deeper than \(maximumDepth)") }
            let isObject = byte == UInt8(ascii: "{")
            frames.append(Frame(isObject: isObject))
            expectation = isObject ? .nameOrClose : .valueOrClose
        case UInt8(ascii: "-"), UInt8(ascii: "0") ... UInt8(ascii: "9"):
            text = String(Unicode.Scalar(byte))
            token = .number(byte == UInt8(ascii: "-") ? .sign : byte == UInt8(ascii: "0") ? .zero : .integer)
        case UInt8(ascii: "t"): token = .literal(expected: Self.trueBytes, matched: 1, value: .bool(true))
        case UInt8(ascii: "f"): token = .literal(expected: Self.falseBytes, matched: 1, value: .bool(false))
        case UInt8(ascii: "n"): token = .literal(expected: Self.nullBytes, matched: 1, value: .null)
        default: throw fail("expected a value")
        }
    }

    private mutating func closeContainer() {
        guard let frame = frames.popLast() else { return }
        deliver(frame.isObject ? .object(Array(zip(frame.names, frame.values))) : .array(frame.values))
    }

    /// Puts a complete value into the open container (or makes it the top-level value).
    private mutating func deliver(_ complete: JSONValue) {
        guard let top = frames.indices.last else { (value, expectation) = (complete, .end); return }
        frames[top].add(complete)
        expectation = .commaOrClose
    }

    // MARK: Numbers and literals

    /// Adds `byte` to the number and returns `true`, or returns `false` when the number ended before it.
    private mutating func continueNumber(_ phase: NumberPhase, with byte: UInt8) throws(GrammarError) -> Bool {
        let isDigit = (UInt8(ascii: "0") ... UInt8(ascii: "9")).contains(byte)
        let isDot = byte == UInt8(ascii: "."), isExponent = byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
        let next: NumberPhase?
        switch phase {
        case .sign:
            guard isDigit else { throw fail("expected a digit") }
            next = byte == UInt8(ascii: "0") ? .zero : .integer
        case .zero:
            guard !isDigit else { throw fail("leading zero in a number") }
            next = isDot ? .dot : isExponent ? .exponentMark : nil
        case .integer: next = isDigit ? .integer : isDot ? .dot : isExponent ? .exponentMark : nil
        case .fraction: next = isDigit ? .fraction : isExponent ? .exponentMark : nil
        case .exponent: next = isDigit ? .exponent : nil
        case .dot, .exponentSign:
            guard isDigit else { throw fail(phase == .dot ? "expected a digit after '.'" : "expected an exponent digit") }
            next = phase == .dot ? .fraction : .exponent
        case .exponentMark:
            guard isDigit || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") else { throw fail("expected an exponent") }
            next = isDigit ? .exponent : .exponentSign
        }
        guard let next else { return false }
        text.unicodeScalars.append(Unicode.Scalar(byte))
        token = .number(next)
        return true
    }

    /// Delivers the number read so far; its phase must be complete.
    private mutating func endNumber() {
        token = .none
        let number = text
        text = ""
        deliver(.number(number))
    }

    // MARK: Strings

    private mutating func startString(isName: Bool) {
        token = .string(isName: isName)
        text = ""
        escape = .none
        continuationBytes = 0
    }

    private mutating func consumeString(_ byte: UInt8, isName: Bool) throws(GrammarError) {
        if continuationBytes > 0 { return try continueScalar(byte) }
        if escape != .none { return try continueEscape(byte, isName: isName) }
        switch byte {
        case UInt8(ascii: "\""): endString(isName: isName)
        case UInt8(ascii: "\\"): escape = .backslash
        case ..<0x20: throw fail("control character in a string")
        case ..<0x80: try appendScalar(UInt32(byte))
        default: try startScalar(byte)
        }
    }

    private mutating func endString(isName: Bool) {
        token = .none
        let string = text
        text = ""
        guard isName else { return deliver(.string(string)) }
        if let top = frames.indices.last { frames[top].pendingName = string }
        expectation = .colon
    }

    /// Starts a multi-byte UTF-8 sequence, rejecting overlong forms, surrogates and values past U+10FFFF
    /// through the range allowed for the first continuation byte.
    private mutating func startScalar(_ lead: UInt8) throws(GrammarError) {
        switch lead {
        case 0xC2 ... 0xDF: (continuationBytes, continuationRange) = (1, 0x80 ... 0xBF)
        case 0xE0: (continuationBytes, continuationRange) = (2, 0xA0 ... 0xBF)
        case 0xED: (continuationBytes, continuationRange) = (2, 0x80 ... 0x9F)
        case 0xE1 ... 0xEF: (continuationBytes, continuationRange) = (2, 0x80 ... 0xBF)
        case 0xF0: (continuationBytes, continuationRange) = (3, 0x90 ... 0xBF)
        case 0xF1 ... 0xF3: (continuationBytes, continuationRange) = (3, 0x80 ... 0xBF)
        case 0xF4: (continuationBytes, continuationRange) = (3, 0x80 ... 0x8F)
        default: throw fail("invalid UTF-8")
        }
        partialScalar = UInt32(lead) & (0x7F >> UInt32(continuationBytes + 1))
    }

    private mutating func continueScalar(_ byte: UInt8) throws(GrammarError) {
        guard continuationRange.contains(byte) else { throw fail("invalid UTF-8") }
        partialScalar = partialScalar << 6 | UInt32(byte & 0x3F)
        continuationBytes -= 1
        continuationRange = 0x80 ... 0xBF
        if continuationBytes == 0 { try appendScalar(partialScalar) }
    }

    private mutating func continueEscape(_ byte: UInt8, isName: Bool) throws(GrammarError) {
        switch escape {
        case .none: return
        case .backslash:
            if byte == UInt8(ascii: "u") { escape = .hex(digits: 0, value: 0, high: nil); return }
            guard let scalar = Self.simpleEscapes[byte] else { throw fail("invalid escape") }
            escape = .none
            try appendScalar(scalar)
        case let .pairing(high, sawBackslash):
            guard byte == UInt8(ascii: sawBackslash ? "u" : "\\") else {
                guard loneSurrogates == .replace else { throw fail("unpaired high surrogate (strings here must be Unicode scalars)") }
                // The high surrogate stands alone: a replacement character, then the byte
                // read as it would have been without it.
                try appendScalar(0xFFFD)
                escape = sawBackslash ? .backslash : .none
                return try consumeString(byte, isName: isName)
            }
            escape = sawBackslash ? .hex(digits: 0, value: 0, high: high) : .pairing(high: high, sawBackslash: true)
        case let .hex(digits, value, high):
            try continueHex(byte, digits: digits + 1, value: value, high: high)
        }
    }

    private static let simpleEscapes: [UInt8: UInt32] = [
        UInt8(ascii: "\""): 0x22, UInt8(ascii: "\\"): 0x5C, UInt8(ascii: "/"): 0x2F, UInt8(ascii: "b"): 0x08,
        UInt8(ascii: "f"): 0x0C, UInt8(ascii: "n"): 0x0A, UInt8(ascii: "r"): 0x0D, UInt8(ascii: "t"): 0x09,
    ]

    /// Takes hex digit number `digits` (1...4) of a `\u` escape. Throws as soon as the digits so far
    /// decide that the code unit is a low surrogate without a high one, or not the low surrogate due.
    private mutating func continueHex(_ byte: UInt8, digits: Int, value: UInt32, high: UInt32?) throws(GrammarError) {
        guard let digit = Character(Unicode.Scalar(byte)).hexDigitValue.map(UInt32.init) else {
            throw fail("invalid hex digit in a \\u escape")
        }
        let value = value << 4 | digit
        if loneSurrogates == .reject {
            let shift = UInt32(4 * (4 - digits))
            let lowest = value << shift, highest = lowest | ((1 << shift) - 1)
            if high == nil, lowest >= 0xDC00, highest <= 0xDFFF { throw fail("unpaired low surrogate (strings here must be Unicode scalars)") }
            if high != nil, highest < 0xDC00 || lowest > 0xDFFF { throw fail("unpaired high surrogate (strings here must be Unicode scalars)") }
        }
        guard digits == 4 else { escape = .hex(digits: digits, value: value, high: high); return }
        escape = .none
        let isLow = (0xDC00 ... 0xDFFF).contains(value)
        if let high, isLow {
            return try appendScalar(0x10000 + ((high - 0xD800) << 10) + (value - 0xDC00))
        }
        // Only `.replace` gets here with a lone surrogate: the high one before this escape, or this low one.
        if high != nil { try appendScalar(0xFFFD) }
        if (0xD800 ... 0xDBFF).contains(value) {
            escape = .pairing(high: value, sawBackslash: false)
        } else {
            try appendScalar(isLow ? 0xFFFD : value)
        }
    }

    private mutating func appendScalar(_ value: UInt32) throws(GrammarError) {
        guard let scalar = Unicode.Scalar(value) else { throw fail("invalid code point") }
        text.unicodeScalars.append(scalar)
    }
}
