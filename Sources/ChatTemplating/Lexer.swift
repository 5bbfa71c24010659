// MARK: - Tokens

/// One lexical token of a template.
struct Token: Sendable {
    enum Kind: Sendable, Equatable {
        /// Raw text between tags (already whitespace-controlled).
        case text(String)
        case variableBegin
        case variableEnd
        case blockBegin
        case blockEnd
        case name(String)
        case string(String)
        case integer(Int)
        case float(Double)
        /// An operator or punctuation: `+ - * / // % ** ~ == != < <= > >= = . : | , ( ) [ ] { } ;`.
        case symbol(String)
        case endOfTemplate
    }

    var kind: Kind
    var location: SourceLocation
}

// MARK: - Lexer

/// Splits a template into tokens, applying Jinja's whitespace control exactly as
/// `Environment(trim_blocks=True, lstrip_blocks=True)` does:
///
/// - `{%- … -%}`, `{{- … -}}`, `{#- … -#}`: strip all whitespace before / after the tag.
/// - trim_blocks: the first newline after a block or comment tag is removed (unless `+%}`).
/// - lstrip_blocks: spaces and tabs between the start of a line and a block or comment
///   tag are removed (unless `{%+`).
/// - The newline sequences `\r\n` and `\r` become `\n`, and one trailing newline at the
///   end of the template is dropped (`keep_trailing_newline=False`).
struct Lexer {
    private let scalars: [Unicode.Scalar]
    private let lineStarts: [Int]
    private var position = 0
    private var lineStarting = true
    private(set) var tokens: [Token] = []

    private static let trimBlocks = true
    private static let lstripBlocks = true

    init(source: String) {
        var normalized: [Unicode.Scalar] = []
        normalized.reserveCapacity(source.unicodeScalars.count)
        var previousWasCarriageReturn = false
        for scalar in source.unicodeScalars {
            if scalar == "\r" {
                normalized.append("\n")
                previousWasCarriageReturn = true
                continue
            }
            if scalar == "\n" && previousWasCarriageReturn {
                previousWasCarriageReturn = false
                continue
            }
            previousWasCarriageReturn = false
            normalized.append(scalar)
        }
        if normalized.last == "\n" {
            normalized.removeLast()
        }
        scalars = normalized
        var starts = [0]
        for (index, scalar) in normalized.enumerated() where scalar == "\n" {
            starts.append(index + 1)
        }
        lineStarts = starts
    }

    /// The 1-based line and column of a scalar offset.
    func location(of offset: Int) -> SourceLocation {
        var low = 0
        var high = lineStarts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if lineStarts[middle] <= offset {
                low = middle
            } else {
                high = middle - 1
            }
        }
        return SourceLocation(line: low + 1, column: offset - lineStarts[low] + 1)
    }

    static func tokenize(_ source: String) throws(ChatTemplateError) -> [Token] {
        var lexer = Lexer(source: source)
        try lexer.run()
        return lexer.tokens
    }

    // MARK: Root state

    private mutating func run() throws(ChatTemplateError) {
        let count = scalars.count
        while position < count {
            guard let tagStart = nextTagStart(from: position) else {
                emitText(from: position, to: count)
                position = count
                break
            }
            let opener = scalars[tagStart + 1]
            var afterOpener = tagStart + 2
            var sign: Unicode.Scalar?
            if afterOpener < count, scalars[afterOpener] == "-" || scalars[afterOpener] == "+" {
                sign = scalars[afterOpener]
                afterOpener += 1
            }
            let rawBlockEnd = opener == "%" ? matchRawBegin(at: afterOpener) : nil

            // Whitespace control on the text before the tag.
            var textEnd = tagStart
            if sign == "-" {
                while textEnd > position, Self.isPythonWhitespace(scalars[textEnd - 1]) {
                    textEnd -= 1
                }
            } else if sign != "+", Self.lstripBlocks, opener != "{" {
                textEnd = lstrippedEnd(textStart: position, tagStart: tagStart, lineStarting: lineStarting)
            }
            emitText(from: position, to: textEnd)
            lineStarting = false

            if let rawBlockEnd {
                try lexRaw(tagStart: tagStart, contentStart: rawBlockEnd)
                continue
            }
            switch opener {
            case "#":
                try lexComment(tagStart: tagStart, bodyStart: afterOpener)
            case "%":
                tokens.append(Token(kind: .blockBegin, location: location(of: tagStart)))
                position = afterOpener
                try lexTagBody(tagStart: tagStart, isBlock: true)
            default:
                tokens.append(Token(kind: .variableBegin, location: location(of: tagStart)))
                position = afterOpener
                try lexTagBody(tagStart: tagStart, isBlock: false)
            }
        }
        tokens.append(Token(kind: .endOfTemplate, location: location(of: count)))
    }

    private func nextTagStart(from start: Int) -> Int? {
        var index = start
        let last = scalars.count - 1
        while index < last {
            if scalars[index] == "{" {
                let next = scalars[index + 1]
                if next == "{" || next == "%" || next == "#" {
                    return index
                }
            }
            index += 1
        }
        return nil
    }

    private mutating func emitText(from start: Int, to end: Int) {
        guard end > start else { return }
        var text = String.UnicodeScalarView()
        text.append(contentsOf: scalars[start..<end])
        tokens.append(Token(kind: .text(String(text)), location: location(of: start)))
    }

    // MARK: Comments and raw blocks

    private mutating func lexComment(tagStart: Int, bodyStart: Int) throws(ChatTemplateError) {
        var index = bodyStart
        let count = scalars.count
        while index < count {
            if let end = matchTagEnd(at: index, closer: "#", allowPlus: true) {
                position = end
                lineStarting = end > 0 && scalars[end - 1] == "\n"
                return
            }
            index += 1
        }
        throw .syntax("Missing end of comment tag", at: location(of: tagStart))
    }

    /// Jinja's lstrip_blocks rule: if only spaces and tabs separate the tag from the start of
    /// its line, the text ends at the line start. `lineStarting` says whether the previous
    /// token ended with a newline (the text then starts a line even without a newline in it).
    private func lstrippedEnd(textStart: Int, tagStart: Int, lineStarting: Bool) -> Int {
        var lineStart = tagStart
        while lineStart > textStart, scalars[lineStart - 1] != "\n" {
            lineStart -= 1
        }
        guard lineStart > textStart || lineStarting else { return tagStart }
        for index in lineStart..<tagStart where scalars[index] != " " && scalars[index] != "\t" {
            return tagStart
        }
        return lineStart
    }

    /// If a `{% raw %}` tag starts here (just after `{%` and its sign), the offset after it.
    private func matchRawBegin(at start: Int) -> Int? {
        var index = skipWhitespace(from: start)
        guard matchWord("raw", at: index) else { return nil }
        index = skipWhitespace(from: index + 3)
        let count = scalars.count
        if index + 2 < count, scalars[index] == "-", scalars[index + 1] == "%", scalars[index + 2] == "}" {
            return skipWhitespace(from: index + 3)
        }
        if index + 1 < count, scalars[index] == "%", scalars[index + 1] == "}" {
            return index + 2
        }
        return nil
    }

    private mutating func lexRaw(tagStart: Int, contentStart: Int) throws(ChatTemplateError) {
        let count = scalars.count
        let startsLine = contentStart > 0 && scalars[contentStart - 1] == "\n"
        var index = contentStart
        while index + 1 < count {
            if scalars[index] == "{", scalars[index + 1] == "%" {
                var cursor = index + 2
                var sign: Unicode.Scalar?
                if cursor < count, scalars[cursor] == "-" || scalars[cursor] == "+" {
                    sign = scalars[cursor]
                    cursor += 1
                }
                cursor = skipWhitespace(from: cursor)
                if matchWord("endraw", at: cursor) {
                    cursor = skipWhitespace(from: cursor + 6)
                    if let end = matchTagEnd(at: cursor, closer: "%", allowPlus: true) {
                        var textEnd = index
                        if sign == "-" {
                            while textEnd > contentStart, Self.isPythonWhitespace(scalars[textEnd - 1]) {
                                textEnd -= 1
                            }
                        } else if sign != "+" {
                            textEnd = lstrippedEnd(textStart: contentStart, tagStart: index, lineStarting: startsLine)
                        }
                        emitText(from: contentStart, to: textEnd)
                        position = end
                        lineStarting = end > 0 && scalars[end - 1] == "\n"
                        return
                    }
                }
            }
            index += 1
        }
        throw .syntax("Missing end of raw directive", at: location(of: tagStart))
    }

    private func matchWord(_ word: String, at start: Int) -> Bool {
        var index = start
        for scalar in word.unicodeScalars {
            guard index < scalars.count, scalars[index] == scalar else { return false }
            index += 1
        }
        if index < scalars.count, Self.isIdentifierContinue(scalars[index]) {
            return false
        }
        return true
    }

    private func skipWhitespace(from start: Int) -> Int {
        var index = start
        while index < scalars.count, Self.isPythonWhitespace(scalars[index]) {
            index += 1
        }
        return index
    }

    /// Matches a tag end (`+%}`, `-%}` plus whitespace, `%}` plus one newline; same for `#`),
    /// returning the offset after it.
    private func matchTagEnd(at index: Int, closer: Unicode.Scalar, allowPlus: Bool) -> Int? {
        let count = scalars.count
        if allowPlus, index + 2 < count, scalars[index] == "+", scalars[index + 1] == closer, scalars[index + 2] == "}" {
            return index + 3
        }
        if index + 2 < count, scalars[index] == "-", scalars[index + 1] == closer, scalars[index + 2] == "}" {
            return skipWhitespace(from: index + 3)
        }
        if index + 1 < count, scalars[index] == closer, scalars[index + 1] == "}" {
            var end = index + 2
            if closer != "}", Self.trimBlocks, end < count, scalars[end] == "\n" {
                end += 1
            }
            return end
        }
        return nil
    }

    // MARK: Inside {{ }} and {% %}

    private mutating func lexTagBody(tagStart: Int, isBlock: Bool) throws(ChatTemplateError) {
        let count = scalars.count
        var balancing: [(closer: Unicode.Scalar, location: SourceLocation)] = []
        while true {
            guard position < count else {
                let closer = isBlock ? "%}" : "}}"
                throw .syntax("unexpected end of template, missing '\(closer)' to close the tag", at: location(of: tagStart))
            }
            if balancing.isEmpty,
               let end = matchTagEnd(at: position, closer: isBlock ? "%" : "}", allowPlus: isBlock) {
                tokens.append(Token(kind: isBlock ? .blockEnd : .variableEnd, location: location(of: position)))
                position = end
                lineStarting = end > 0 && scalars[end - 1] == "\n"
                return
            }
            let scalar = scalars[position]
            if Self.isPythonWhitespace(scalar) {
                position += 1
                continue
            }
            let start = position
            let startLocation = location(of: start)
            if scalar.properties.numericType == .decimal && scalar.isASCII {
                try lexNumber(startLocation: startLocation)
                continue
            }
            if Self.isIdentifierStart(scalar) {
                while position < count, Self.isIdentifierContinue(scalars[position]) {
                    position += 1
                }
                var name = String.UnicodeScalarView()
                name.append(contentsOf: scalars[start..<position])
                tokens.append(Token(kind: .name(String(name)), location: startLocation))
                continue
            }
            if scalar == "'" || scalar == "\"" {
                try lexString(quote: scalar, startLocation: startLocation)
                continue
            }
            guard let symbol = matchSymbol(at: position) else {
                throw .syntax("unexpected character '\(Character(scalar))'", at: startLocation)
            }
            position += symbol.unicodeScalars.count
            switch symbol {
            case "(": balancing.append((")", startLocation))
            case "[": balancing.append(("]", startLocation))
            case "{": balancing.append(("}", startLocation))
            case ")", "]", "}":
                guard let expected = balancing.popLast() else {
                    throw .syntax("unexpected '\(symbol)'", at: startLocation)
                }
                if String(expected.closer) != symbol {
                    throw .syntax("unexpected '\(symbol)', expected '\(expected.closer)'", at: startLocation)
                }
            default:
                break
            }
            tokens.append(Token(kind: .symbol(symbol), location: startLocation))
        }
    }

    private static let symbols: [String] = [
        "//", "**", "==", "!=", ">=", "<=",
        "+", "-", "/", "*", "%", "~", "[", "]", "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";",
    ]

    private func matchSymbol(at index: Int) -> String? {
        for symbol in Self.symbols {
            var cursor = index
            var matched = true
            for scalar in symbol.unicodeScalars {
                guard cursor < scalars.count, scalars[cursor] == scalar else {
                    matched = false
                    break
                }
                cursor += 1
            }
            if matched { return symbol }
        }
        return nil
    }

    // MARK: Numbers

    private func isDigit(_ index: Int, hex: Bool = false) -> Bool {
        guard index < scalars.count else { return false }
        let value = scalars[index].value
        if value >= 0x30 && value <= 0x39 { return true }
        if hex {
            return (value >= 0x41 && value <= 0x46) || (value >= 0x61 && value <= 0x66)
        }
        return false
    }

    /// Reads `(\d+_)*\d+` from `index`, returning the end offset, or nil if no digit there.
    private func scanDigits(from index: Int) -> Int? {
        guard isDigit(index) else { return nil }
        var cursor = index
        while true {
            while isDigit(cursor) { cursor += 1 }
            if cursor < scalars.count, scalars[cursor] == "_", isDigit(cursor + 1) {
                cursor += 1
                continue
            }
            return cursor
        }
    }

    private func text(_ range: Range<Int>) -> String {
        var view = String.UnicodeScalarView()
        for scalar in scalars[range] where scalar != "_" {
            view.append(scalar)
        }
        return String(view)
    }

    private mutating func lexNumber(startLocation: SourceLocation) throws(ChatTemplateError) {
        let start = position
        // Floats: digits, then a fraction and/or an exponent; never right after a '.'.
        let previousIsDot = start > 0 && scalars[start - 1] == "."
        if !previousIsDot, let integerEnd = scanDigits(from: start) {
            var cursor = integerEnd
            var isFloat = false
            if cursor < scalars.count, scalars[cursor] == ".", let fractionEnd = scanDigits(from: cursor + 1) {
                cursor = fractionEnd
                isFloat = true
            }
            if cursor < scalars.count, scalars[cursor] == "e" || scalars[cursor] == "E" {
                var exponentStart = cursor + 1
                if exponentStart < scalars.count, scalars[exponentStart] == "+" || scalars[exponentStart] == "-" {
                    exponentStart += 1
                }
                if let exponentEnd = scanDigits(from: exponentStart) {
                    cursor = exponentEnd
                    isFloat = true
                }
            }
            if isFloat {
                let literal = text(start..<cursor)
                guard let value = Double(literal) else {
                    throw .syntax("invalid number '\(literal)'", at: startLocation)
                }
                tokens.append(Token(kind: .float(value), location: startLocation))
                position = cursor
                return
            }
        }
        // Integers: 0b…, 0o…, 0x…, [1-9](_?\d)*, 0(_?0)*.
        if scalars[start] == "0", start + 1 < scalars.count {
            let marker = scalars[start + 1]
            let radix: Int?
            switch marker {
            case "b", "B": radix = 2
            case "o", "O": radix = 8
            case "x", "X": radix = 16
            default: radix = nil
            }
            if let radix {
                var cursor = start + 2
                var digits = ""
                while cursor < scalars.count {
                    if scalars[cursor] == "_", cursor + 1 < scalars.count,
                       Int(String(scalars[cursor + 1]), radix: radix) != nil {
                        cursor += 1
                        continue
                    }
                    guard Int(String(scalars[cursor]), radix: radix) != nil else { break }
                    digits.unicodeScalars.append(scalars[cursor])
                    cursor += 1
                }
                if !digits.isEmpty {
                    guard let value = Int(digits, radix: radix) else {
                        throw .unsupported("integer literal too large for 64 bits", at: startLocation)
                    }
                    tokens.append(Token(kind: .integer(value), location: startLocation))
                    position = cursor
                    return
                }
            }
        }
        var cursor = start
        if scalars[start] == "0" {
            cursor += 1
            while true {
                if cursor < scalars.count, scalars[cursor] == "0" {
                    cursor += 1
                } else if cursor + 1 < scalars.count, scalars[cursor] == "_", scalars[cursor + 1] == "0" {
                    cursor += 2
                } else {
                    break
                }
            }
            tokens.append(Token(kind: .integer(0), location: startLocation))
            position = cursor
            return
        }
        cursor = scanDigits(from: start) ?? start + 1
        let literal = text(start..<cursor)
        guard let value = Int(literal) else {
            throw .unsupported("integer literal '\(literal)' does not fit in 64 bits", at: startLocation)
        }
        tokens.append(Token(kind: .integer(value), location: startLocation))
        position = cursor
    }

    // MARK: Strings

    /// Reads a quoted string and decodes Python `unicode-escape` sequences, as Jinja does.
    private mutating func lexString(quote: Unicode.Scalar, startLocation: SourceLocation) throws(ChatTemplateError) {
        let count = scalars.count
        var cursor = position + 1
        var value = String.UnicodeScalarView()
        while true {
            guard cursor < count else {
                throw .syntax("unterminated string literal", at: startLocation)
            }
            let scalar = scalars[cursor]
            if scalar == quote {
                cursor += 1
                break
            }
            if scalar != "\\" {
                value.append(scalar)
                cursor += 1
                continue
            }
            guard cursor + 1 < count else {
                throw .syntax("unterminated string literal", at: startLocation)
            }
            let escaped = scalars[cursor + 1]
            cursor += 2
            switch escaped {
            case "\n": break
            case "\\": value.append("\\")
            case "'": value.append("'")
            case "\"": value.append("\"")
            case "a": value.append("\u{07}")
            case "b": value.append("\u{08}")
            case "f": value.append("\u{0C}")
            case "n": value.append("\n")
            case "r": value.append("\r")
            case "t": value.append("\t")
            case "v": value.append("\u{0B}")
            case "0"..."7":
                var code = Int(escaped.value - 0x30)
                var digits = 1
                while digits < 3, cursor < count, scalars[cursor].value >= 0x30, scalars[cursor].value <= 0x37 {
                    code = code * 8 + Int(scalars[cursor].value - 0x30)
                    cursor += 1
                    digits += 1
                }
                guard let decoded = Unicode.Scalar(UInt32(code)) else {
                    throw .syntax("invalid octal escape in string literal", at: startLocation)
                }
                value.append(decoded)
            case "x", "u", "U":
                let width = escaped == "x" ? 2 : (escaped == "u" ? 4 : 8)
                guard cursor + width <= count else {
                    throw .syntax("truncated \\\(escaped) escape in string literal", at: startLocation)
                }
                var hex = ""
                hex.unicodeScalars.append(contentsOf: scalars[cursor..<(cursor + width)])
                guard let code = UInt32(hex, radix: 16), let decoded = Unicode.Scalar(code) else {
                    throw .syntax("invalid \\\(escaped) escape in string literal", at: startLocation)
                }
                value.append(decoded)
                cursor += width
            case "N":
                guard cursor < count, scalars[cursor] == "{" else {
                    throw .syntax("malformed \\N character escape", at: startLocation)
                }
                var nameEnd = cursor + 1
                while nameEnd < count, scalars[nameEnd] != "}", scalars[nameEnd] != quote {
                    nameEnd += 1
                }
                guard nameEnd < count, scalars[nameEnd] == "}" else {
                    throw .syntax("malformed \\N character escape", at: startLocation)
                }
                var name = ""
                name.unicodeScalars.append(contentsOf: scalars[(cursor + 1)..<nameEnd])
                guard let decoded = Self.scalar(named: name) else {
                    throw .syntax("unknown Unicode character name '\(name)'", at: startLocation)
                }
                value.append(decoded)
                cursor = nameEnd + 1
            default:
                value.append("\\")
                value.append(escaped)
            }
        }
        tokens.append(Token(kind: .string(String(value)), location: startLocation))
        position = cursor
    }

    private static func scalar(named name: String) -> Unicode.Scalar? {
        // Linear search is fine: `\N{…}` is vanishingly rare in chat templates.
        let wanted = name.uppercased()
        for value in UInt32(0x20)...UInt32(0x2FFFF) {
            if let scalar = Unicode.Scalar(value), scalar.properties.name == wanted {
                return scalar
            }
        }
        return nil
    }

    // MARK: Character classes

    /// Python's `str.isspace()`.
    static func isPythonWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09...0x0D, 0x1C...0x20, 0x85, 0xA0:
            return true
        default:
            return scalar.value > 0xFF && scalar.properties.isWhitespace
        }
    }

    static func isIdentifierStart(_ scalar: Unicode.Scalar) -> Bool {
        scalar == "_" || (scalar.isASCII ? scalar.properties.isAlphabetic : scalar.properties.isXIDStart)
    }

    static func isIdentifierContinue(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII {
            return scalar == "_" || scalar.properties.isAlphabetic || (scalar.value >= 0x30 && scalar.value <= 0x39)
        }
        return scalar.properties.isXIDContinue
    }
}
