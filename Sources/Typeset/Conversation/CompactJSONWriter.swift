import TypesetGrammar

/// Rewrites JSON text, as it arrives piece by piece, into the form ``JSONValue/compactText``
/// gives the value it denotes: whitespace between tokens dropped, each string's characters
/// escaped as `compactText` escapes them, numbers and literals as written. What it returns
/// for the pieces so far is always a prefix of `compactText` of the whole value, so it can
/// be streamed (a call's arguments, as the model writes them):
///
///     pieces   `{ "city"` ` : "Os` `lo\u00e9" }`
///     returns  `{"city"`  `:"Os`   `loé"}`
///
/// Held back until complete: a character whose UTF-8 bytes are split across pieces, an escape
/// sequence, a surrogate pair. The text must be a prefix of one JSON value whose objects
/// name each member once (a grammar's, as the call grammar holds a call to); a repeated
/// member, which reading keeps once, is not rewritten as read.
struct CompactJSONWriter {
    private var inString = false
    /// An escape sequence under way (from its backslash).
    private var escape: [UInt8] = []
    /// A character's UTF-8 bytes under way.
    private var character: [UInt8] = []
    /// The high half of a surrogate pair, waiting for its low half.
    private var highSurrogate: UInt16?
    /// Set when the text is not JSON as this writer reads it (a lone surrogate): nothing more
    /// is returned.
    private(set) var stopped = false

    /// Returns nothing more (the caller found the text is not what it streams).
    mutating func stop() { stopped = true }

    /// The compact text that `bytes` add.
    mutating func append(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var output: [UInt8] = []
        for byte in bytes where !stopped {
            guard inString else {
                switch byte {
                case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): break
                case UInt8(ascii: "\""):
                    inString = true
                    output.append(byte)
                default: output.append(byte)
                }
                continue
            }
            if !escape.isEmpty {
                escape.append(byte)
                takeEscape(into: &output)
            } else if highSurrogate != nil, byte != UInt8(ascii: "\\") {
                stopped = true   // a high surrogate not followed by an escape: not a pair
            } else if !character.isEmpty || byte >= 0x80 {
                character.append(byte)
                takeCharacter(into: &output)
            } else if byte == UInt8(ascii: "\\") {
                escape = [byte]
            } else if byte == UInt8(ascii: "\"") {
                inString = false
                output.append(byte)
            } else {
                output += Self.escaped(Unicode.Scalar(byte))
            }
        }
        return output
    }

    /// A complete escape sequence read: its character written.
    private mutating func takeEscape(into output: inout [UInt8]) {
        let simple: [UInt8: Unicode.Scalar] = [
            UInt8(ascii: "\""): "\"", UInt8(ascii: "\\"): "\\", UInt8(ascii: "/"): "/", UInt8(ascii: "b"): "\u{08}",
            UInt8(ascii: "f"): "\u{0C}", UInt8(ascii: "n"): "\n", UInt8(ascii: "r"): "\r", UInt8(ascii: "t"): "\t",
        ]
        if escape.count == 2, escape[1] != UInt8(ascii: "u") {
            defer { escape = [] }
            guard highSurrogate == nil, let scalar = simple[escape[1]] else { stopped = true; return }
            output += Self.escaped(scalar)
            return
        }
        guard escape.count == 6 else { return }
        defer { escape = [] }
        guard let unit = UInt16(String(decoding: escape[2...], as: UTF8.self), radix: 16) else { stopped = true; return }
        switch (highSurrogate, unit) {
        case (nil, 0xD800 ... 0xDBFF):
            highSurrogate = unit
        case (let high?, 0xDC00 ... 0xDFFF):
            highSurrogate = nil
            let value = 0x10000 + (UInt32(high - 0xD800) << 10) + UInt32(unit - 0xDC00)
            guard let scalar = Unicode.Scalar(value) else { stopped = true; return }
            output += Self.escaped(scalar)
        case (nil, _):
            guard let scalar = Unicode.Scalar(unit) else { stopped = true; return }   // a lone low surrogate
            output += Self.escaped(scalar)
        default:
            stopped = true   // a high surrogate followed by something else
        }
    }

    /// A complete UTF-8 character read: written.
    private mutating func takeCharacter(into output: inout [UInt8]) {
        let lead = character[0]
        let length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1
        guard character.count == length else { return }
        defer { character = [] }
        var decoded = String(decoding: character, as: UTF8.self).unicodeScalars.makeIterator()
        guard let scalar = decoded.next(), decoded.next() == nil, scalar != "\u{FFFD}" || character == [0xEF, 0xBF, 0xBD] else {
            stopped = true
            return
        }
        output += Self.escaped(scalar)
    }

    /// `scalar` as `compactText` writes it inside a string literal.
    private static func escaped(_ scalar: Unicode.Scalar) -> [UInt8] {
        Array(JSONValue.string(String(scalar)).compactText.utf8.dropFirst().dropLast())
    }
}
