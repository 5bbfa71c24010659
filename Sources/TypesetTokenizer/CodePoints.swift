// Code points as llama.cpp's tokenizer sees them: how bytes decode (leniently), how each code
// point is classified, and how the classes collapse to one byte for pattern matching.

// MARK: - Classes

/// The classification of one code point that the pre-tokenizers need: one general-category
/// group (exactly one of the first eight bits) plus the White_Space property.
///
/// Bit values follow llama.cpp's `unicode_cpt_flags`, so that `rawValue != 0` means "a code
/// point inside the current piece" in the splitters (positions past a piece's end read as 0).
struct CodePointClass: OptionSet, Sendable {
    let rawValue: UInt16

    static let undefined = CodePointClass(rawValue: 0x0001)   // Cn, or beyond U+10FFFF
    static let number = CodePointClass(rawValue: 0x0002)      // \p{N}
    static let letter = CodePointClass(rawValue: 0x0004)      // \p{L}
    static let separator = CodePointClass(rawValue: 0x0008)   // \p{Z}
    static let accentMark = CodePointClass(rawValue: 0x0010)  // \p{M}
    static let punctuation = CodePointClass(rawValue: 0x0020) // \p{P}
    static let symbol = CodePointClass(rawValue: 0x0040)      // \p{S}
    static let control = CodePointClass(rawValue: 0x0080)     // \p{C} (Cc, Cf, Cs, Co)
    static let whitespace = CodePointClass(rawValue: 0x0100)  // \s (White_Space)

    static let categoryMask: UInt16 = 0x00FF

    /// The class of `codePoint`. Table lookup below U+10000; the standard library's Unicode
    /// properties above (rare in text: emoji, historic scripts, CJK extensions).
    @inline(__always)
    static func of(_ codePoint: UInt32) -> CodePointClass {
        if codePoint < 0x10000 { return CodePointClass(rawValue: _basicPlane[Int(codePoint)]) }
        return _classify(codePoint)
    }

    private static let _basicPlane: [UInt16] = (0 ..< 0x10000).map { _classify(UInt32($0)).rawValue }

    private static func _classify(_ codePoint: UInt32) -> CodePointClass {
        guard codePoint <= 0x10FFFF else { return .undefined }
        guard let scalar = Unicode.Scalar(codePoint) else { return .control }  // surrogates: Cs
        var result: CodePointClass
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter:
            result = .letter
        case .nonspacingMark, .spacingMark, .enclosingMark:
            result = .accentMark
        case .decimalNumber, .letterNumber, .otherNumber:
            result = .number
        case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation,
             .initialPunctuation, .finalPunctuation, .otherPunctuation:
            result = .punctuation
        case .mathSymbol, .currencySymbol, .modifierSymbol, .otherSymbol:
            result = .symbol
        case .spaceSeparator, .lineSeparator, .paragraphSeparator:
            result = .separator
        case .control, .format, .surrogate, .privateUse:
            result = .control
        case .unassigned:
            result = .undefined
        @unknown default:
            result = .undefined
        }
        if scalar.properties.isWhitespace { result.insert(.whitespace) }
        return result
    }

    /// The one-byte stand-in llama.cpp matches category patterns against: ASCII stays itself,
    /// other whitespace becomes U+000B, and every other code point becomes the byte of its
    /// category (0xD1 number, 0xD2 letter, 0xD3 punctuation, 0xD4 mark, 0xD5 symbol, 0xD0 rest).
    @inline(__always)
    static func collapsed(_ codePoint: UInt32, _ codePointClass: CodePointClass) -> UInt32 {
        if codePoint < 0x80 { return codePoint }
        if codePointClass.contains(.whitespace) { return 0x0B }
        switch codePointClass.rawValue & categoryMask {
        case number.rawValue: return 0xD1
        case letter.rawValue: return 0xD2
        case punctuation.rawValue: return 0xD3
        case accentMark.rawValue: return 0xD4
        case symbol.rawValue: return 0xD5
        default: return 0xD0
        }
    }
}

// MARK: - Lenient UTF-8

/// Text decoded into code points the way llama.cpp decodes it before pre-tokenizing, and
/// encoded back: each malformed byte becomes U+FFFD, and well-formed-looking sequences are
/// accepted without checking for overlong forms or surrogates (so `C0 80` reads as U+0000 and
/// is re-encoded as one byte). The BPE words are slices of `bytes`, the re-encoded text.
struct DecodedText {
    var codePoints: [UInt32] = []
    var classes: [CodePointClass] = []
    /// `byteOffsets[i]` is where code point `i` starts in `bytes`; one extra entry at the end.
    var byteOffsets: [Int32] = []
    var bytes: [UInt8] = []

    mutating func decode(_ text: UnsafeBufferPointer<UInt8>) {
        codePoints.removeAll(keepingCapacity: true)
        classes.removeAll(keepingCapacity: true)
        byteOffsets.removeAll(keepingCapacity: true)
        bytes.removeAll(keepingCapacity: true)
        codePoints.reserveCapacity(text.count)
        classes.reserveCapacity(text.count)
        byteOffsets.reserveCapacity(text.count + 1)
        bytes.reserveCapacity(text.count + 8)
        var offset = 0
        let count = text.count
        while offset < count {
            let (codePoint, length) = _decodeLeniently(text, at: offset)
            offset += length
            byteOffsets.append(Int32(bytes.count))
            codePoints.append(codePoint)
            classes.append(.of(codePoint))
            _appendUTF8(codePoint, to: &bytes)
        }
        byteOffsets.append(Int32(bytes.count))
    }
}

/// One code point from `text` at `offset`, and how many bytes it took. Malformed input yields
/// U+FFFD for one byte; a code point beyond U+10FFFF (from lead bytes F4–F7) also yields U+FFFD
/// for one byte (llama.cpp fails on these; see docs/tokenizer.md).
@inline(__always)
func _decodeLeniently(_ text: UnsafeBufferPointer<UInt8>, at offset: Int) -> (UInt32, Int) {
    let lead = UInt32(text[offset])
    if lead & 0x80 == 0 { return (lead, 1) }
    let remaining = text.count - offset
    @inline(__always) func continuation(_ index: Int) -> UInt32? {
        let byte = UInt32(text[offset + index])
        return byte & 0xC0 == 0x80 ? byte & 0x3F : nil
    }
    if lead & 0x40 == 0 { return (0xFFFD, 1) }
    if lead & 0x20 == 0 {
        guard remaining > 1, let c1 = continuation(1) else { return (0xFFFD, 1) }
        return ((lead & 0x1F) << 6 | c1, 2)
    }
    if lead & 0x10 == 0 {
        guard remaining > 2, let c1 = continuation(1), let c2 = continuation(2) else { return (0xFFFD, 1) }
        return ((lead & 0x0F) << 12 | c1 << 6 | c2, 3)
    }
    if lead & 0x08 == 0 {
        guard remaining > 3, let c1 = continuation(1), let c2 = continuation(2), let c3 = continuation(3) else {
            return (0xFFFD, 1)
        }
        let codePoint = (lead & 0x07) << 18 | c1 << 12 | c2 << 6 | c3
        return codePoint <= 0x10FFFF ? (codePoint, 4) : (0xFFFD, 1)
    }
    return (0xFFFD, 1)
}

/// Appends the UTF-8 encoding of `codePoint` (surrogates included, as llama.cpp does).
@inline(__always)
func _appendUTF8(_ codePoint: UInt32, to bytes: inout [UInt8]) {
    switch codePoint {
    case 0 ..< 0x80:
        bytes.append(UInt8(codePoint))
    case 0x80 ..< 0x800:
        bytes.append(UInt8(0xC0 | codePoint >> 6))
        bytes.append(UInt8(0x80 | codePoint & 0x3F))
    case 0x800 ..< 0x10000:
        bytes.append(UInt8(0xE0 | codePoint >> 12))
        bytes.append(UInt8(0x80 | (codePoint >> 6) & 0x3F))
        bytes.append(UInt8(0x80 | codePoint & 0x3F))
    default:
        bytes.append(UInt8(0xF0 | codePoint >> 18))
        bytes.append(UInt8(0x80 | (codePoint >> 12) & 0x3F))
        bytes.append(UInt8(0x80 | (codePoint >> 6) & 0x3F))
        bytes.append(UInt8(0x80 | codePoint & 0x3F))
    }
}

/// The length SentencePiece-style splitting gives a character starting with `lead`, from the
/// lead byte's high nibble alone (continuation bytes count as one-byte characters).
@inline(__always)
func _utf8SequenceLength(lead: UInt8) -> Int {
    switch lead >> 4 {
    case 0xC, 0xD: 2
    case 0xE: 3
    case 0xF: 4
    default: 1
    }
}
