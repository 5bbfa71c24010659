/// Lowering of character-level automata to bytes: UTF-8 for raw text, and the JSON string
/// encoding for the inside of JSON strings.
enum Lowering {
    /// The UTF-8 byte sequences of the scalars in `low ... high`, as chains of byte ranges.
    ///
    /// The range is split until every piece has one encoded length and its continuation
    /// bytes span whole ranges, so each piece is one chain: `[E0-EF][80-BF][80-BF]`.
    static func utf8Sequences(_ low: UInt32, _ high: UInt32) -> [[ClosedRange<UInt8>]] {
        let boundaries: [UInt32] = [0x7F, 0x7FF, 0xFFFF]
        for boundary in boundaries where low <= boundary && high > boundary {
            return utf8Sequences(low, boundary) + utf8Sequences(boundary + 1, high)
        }
        let length = high <= 0x7F ? 1 : high <= 0x7FF ? 2 : high <= 0xFFFF ? 3 : 4
        for index in 1 ..< max(length, 1) {
            let mask: UInt32 = (1 << (6 * UInt32(index))) - 1
            if low & ~mask != high & ~mask {
                if low & mask != 0 { return utf8Sequences(low, low | mask) + utf8Sequences((low | mask) + 1, high) }
                if high & mask != mask { return utf8Sequences(low, (high & ~mask) - 1) + utf8Sequences(high & ~mask, high) }
            }
        }
        let first = encode(low), last = encode(high)
        return [zip(first, last).map { $0 ... $1 }]
    }

    static func encode(_ scalar: UInt32) -> [UInt8] {
        switch scalar {
        case 0 ... 0x7F: return [UInt8(scalar)]
        case 0x80 ... 0x7FF: return [UInt8(0xC0 | scalar >> 6), UInt8(0x80 | scalar & 0x3F)]
        case 0x800 ... 0xFFFF:
            return [UInt8(0xE0 | scalar >> 12), UInt8(0x80 | (scalar >> 6) & 0x3F), UInt8(0x80 | scalar & 0x3F)]
        default:
            return [UInt8(0xF0 | scalar >> 18), UInt8(0x80 | (scalar >> 12) & 0x3F),
                    UInt8(0x80 | (scalar >> 6) & 0x3F), UInt8(0x80 | scalar & 0x3F)]
        }
    }

    /// Any one scalar of `set`, written in UTF-8.
    static func utf8(_ set: CodePointSet, into automaton: inout ByteNFA) -> Fragment {
        var pieces: [Fragment] = []
        for range in set.subtracting(CodePointSet([CodePointSet.surrogates])).ranges {
            for chain in utf8Sequences(range.lowerBound, range.upperBound) {
                pieces.append(automaton.sequence(chain.map { automaton.bytes(ByteSet($0)) }))
            }
        }
        return pieces.isEmpty ? automaton.nothing() : automaton.union(pieces)
    }

    /// Scalars that must be escaped inside a JSON string.
    static let mustEscape = CodePointSet([0x00 ... 0x1F, 0x22 ... 0x22, 0x5C ... 0x5C])

    /// Any one scalar of `set` as it appears inside a JSON string, in the one spelling
    /// `json.dumps(…, ensure_ascii=False)` and `JSONEncoder` agree on: raw UTF-8, except `\"`,
    /// `\\`, `\b \f \n \r \t` and `\u00xx` (lowercase hex) for the other control characters.
    ///
    /// One spelling per scalar keeps string languages exact under intersection and
    /// difference (a property name excluded from additional properties cannot come back
    /// escaped), and keeps lengths countable one scalar at a time.
    static func jsonStringCharacter(_ set: CodePointSet, into automaton: inout ByteNFA) -> Fragment {
        var pieces: [Fragment] = []
        let raw = set.subtracting(mustEscape)
        if !raw.isEmpty { pieces.append(utf8(raw, into: &automaton)) }
        var escapes: [Fragment] = []
        for range in set.intersection(mustEscape).ranges {
            for scalar in range {
                escapes.append(automaton.literal(escapeTail(scalar)))
            }
        }
        if !escapes.isEmpty {
            pieces.append(automaton.sequence([automaton.literal([0x5C]), automaton.union(escapes)]))
        }
        return pieces.isEmpty ? automaton.nothing() : automaton.union(pieces)
    }

    /// What follows the backslash in the escape of `scalar` (which must be escaped).
    static func escapeTail(_ scalar: UInt32) -> [UInt8] {
        switch scalar {
        case 0x22: return Array("\"".utf8)
        case 0x5C: return Array("\\".utf8)
        case 0x08: return Array("b".utf8)
        case 0x0C: return Array("f".utf8)
        case 0x0A: return Array("n".utf8)
        case 0x0D: return Array("r".utf8)
        case 0x09: return Array("t".utf8)
        default: return Array(("u00" + String(scalar, radix: 16).leftPadded(to: 2)).utf8)
        }
    }

    /// The canonical JSON string literal of `text`, quotes included (see `jsonStringCharacter`).
    static func jsonStringLiteral(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = [0x22]
        bytes.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            if scalar.value >= 0x20, scalar.value < 0x7F, scalar.value != 0x22, scalar.value != 0x5C {
                bytes.append(UInt8(scalar.value))  // printable ASCII, the usual name: as it is
            } else if mustEscape.contains(scalar.value) {
                bytes.append(0x5C)
                bytes += escapeTail(scalar.value)
            } else {
                bytes += encode(scalar.value)
            }
        }
        bytes.append(0x22)
        return bytes
    }

    /// Lowers a character automaton fragment to bytes, each character edge written by `character`.
    static func lower(_ part: Fragment, of characters: CharacterNFA, into automaton: inout ByteNFA,
                      character: (CodePointSet, inout ByteNFA) -> Fragment) -> Fragment {
        var cache: [CodePointSet: Fragment] = [:]
        return automaton.embed(part, of: characters) { target, set in
            if let built = cache[set] { return target.duplicate(built) }
            let built = character(set, &target)
            cache[set] = built
            return target.duplicate(built)
        }
    }
}
