// MARK: Strings and numbers

extension SchemaCompiler {
    /// `"` content `"`, the content a terminal automaton of canonical JSON string text; with
    /// `minLength` or `maxLength`, a call of a rule whose frames count the characters
    /// (`LengthCounter`), so a bound costs no states however large it is.
    mutating func stringFragment(_ node: SchemaNode) throws(GrammarError) -> Fragment {
        let language = try quotedStringLanguage(node, boundingLength: false)
        guard node.minimumLength > 0 || node.maximumLength != nil, !language.isEmptyLanguage else {
            return language.embed(into: &grammar.automaton)
        }
        let bounds = LengthBounds(minimum: node.minimumLength, maximum: node.maximumLength)
        if let maximum = bounds.maximum, maximum < bounds.minimum { return grammar.automaton.nothing() }
        let isPlain = Self.hasOnlyLengthBounds(node)
        if isPlain, let known = countedStringRules[bounds] { return grammar.automaton.rule(known) }
        let name = "string-\(bounds.minimum)-" + (bounds.maximum.map(String.init) ?? "")
        let rule = grammar.declareRule(grammar.uniqueName(name))
        grammar.define(rule, as: language.embed(into: &grammar.automaton))
        grammar.rules[Int(rule)].lengthBounds = bounds
        if isPlain { countedStringRules[bounds] = rule }
        return grammar.automaton.rule(rule)
    }

    /// Whether the node's string keywords are length bounds only (no pattern, format or
    /// excluded string), so its strings are every string within them.
    static func hasOnlyLengthBounds(_ node: SchemaNode) -> Bool {
        node.patterns.isEmpty && node.formats.isEmpty && node.excludedPatterns.isEmpty && !node.excludedValues.contains(where: \.isString)
    }

    /// The quoted canonical JSON strings satisfying the node's string keywords: the first
    /// pattern (or any text), intersected with the other patterns and the formats, and
    /// bounded in length when `boundingLength` (an automaton unrolled to the bound, for
    /// languages combined with others as automata: property names).
    mutating func quotedStringLanguage(_ node: SchemaNode, boundingLength: Bool) throws(GrammarError) -> DFA {
        let bounds = boundingLength ? LengthBounds(minimum: node.minimumLength, maximum: node.maximumLength) : LengthBounds(minimum: 0, maximum: nil)
        guard Self.hasOnlyLengthBounds(node) else { return try constrainedStringLanguage(node, bounds: bounds) }
        if let known = boundedStringLanguages[bounds] { return known }
        let language = try constrainedStringLanguage(node, bounds: bounds)
        boundedStringLanguages[bounds] = language
        return language
    }

    private mutating func constrainedStringLanguage(_ node: SchemaNode, bounds: LengthBounds) throws(GrammarError) -> DFA {
        let isBounded = bounds.minimum > 0 || bounds.maximum != nil
        if isBounded {
            let bound = max(bounds.maximum ?? 0, bounds.minimum)
            guard bound <= options.repetitionLimit else {
                throw .budgetExceeded(what: "length bound of property names at \(node.pointer)", limit: options.repetitionLimit)
            }
        }
        var intersected: DFA? = nil
        var constraints: [(pattern: String, pointer: String, search: Bool)] = node.patterns.map { ($0.pattern, $0.pointer, true) }
        for (format, pointer) in node.formats {
            guard let pattern = Formats.pattern(for: format) else {
                let at = String(pointer.dropLast("/format".count))
                if options.unknownFormats == .annotate {
                    record(DroppedKeyword(keyword: "format", pointer: at, reason: "unknown format '\(format)', an annotation"))
                } else {
                    try report("format", at, "unknown format '\(format)'")
                }
                continue
            }
            constraints.append((pattern, pointer, false))
        }
        for constraint in constraints {
            guard let other = try patternLanguage(constraint.pattern, search: constraint.search, pointer: constraint.pointer) else { continue }
            if let current = intersected {
                intersected = try budgeted { () throws(DFA.TooLarge) in try current.intersection(other) }
            } else {
                intersected = other
            }
        }
        var language: DFA
        if let intersected {
            language = intersected
        } else {
            var characters = CharacterNFA()
            language = try quoted(characters.star(characters.symbol(.all)), of: characters)
        }
        // Complements (from `not`): strings matching an excluded pattern, excluded strings.
        for excluded in node.excludedPatterns where !language.isEmptyLanguage {
            guard let other = try patternLanguage(excluded.pattern, search: true, pointer: excluded.pointer) else { continue }
            language = try budgeted { () throws(DFA.TooLarge) in try language.subtracting(other) }
        }
        let excludedStrings = node.excludedValues.compactMap { value -> [UInt8]? in
            if case .string(let text) = value { return Lowering.jsonStringLiteral(text) }
            return nil
        }
        if !excludedStrings.isEmpty, !language.isEmptyLanguage {
            let literals = try literalsLanguage(excludedStrings)
            language = try budgeted { () throws(DFA.TooLarge) in try language.subtracting(literals) }
        }
        if isBounded {
            let unbounded = language
            let bounded = try budgeted { () throws(DFA.TooLarge) in
                try QuotedStringLength.bounded(unbounded, minimum: bounds.minimum, maximum: bounds.maximum, stateLimit: 1 << 16)
            }
            guard let bounded else { throw .invalidSchema(pointer: node.pointer, message: "string automaton is not over quoted JSON strings") }
            language = bounded
        }
        return language
    }

    /// The quoted strings a pattern matches (`search`: anywhere in them; else the whole
    /// content), leading lookaheads taken as intersections and differences
    /// (`RegularExpression.leadingLookaheads(in:)`); `nil` when a lenient compilation drops
    /// the pattern (a lookahead it drops alone, keeping a superset).
    mutating func patternLanguage(_ pattern: String, search: Bool, pointer: String) throws(GrammarError) -> DFA? {
        let split = RegularExpression.leadingLookaheads(in: pattern)
        var automaton = CharacterNFA()
        let main: Fragment?
        do {
            main = try characterLanguage(split?.main ?? pattern, search: search, pointer: pointer, into: &automaton)
        } catch .invalidRegex(_, let offset, let message) where split != nil {
            // Offsets into the pattern as written (the split removed the lookaheads after `^`).
            let removed = pattern.utf8.count - split!.main.utf8.count
            throw .invalidRegex(pattern: pattern, offset: offset == 0 ? 0 : offset + removed, message: message)
        }
        guard let main else { return nil }
        var language = try quoted(main, of: automaton)
        for lookahead in split?.lookaheads ?? [] {
            var scratch = CharacterNFA()
            let body: Fragment?
            do {
                body = try characterLanguage("^(?:" + lookahead.body + ")", search: true, pointer: pointer, into: &scratch)
            } catch .invalidRegex(_, let offset, let message) {
                throw .invalidRegex(pattern: pattern, offset: lookahead.offset + max(0, offset - 4), message: message)
            }
            guard let body else { continue }
            let other = try quoted(body, of: scratch)
            language = try budgeted { () throws(DFA.TooLarge) in
                lookahead.negative ? try language.subtracting(other) : try language.intersection(other)
            }
        }
        return language
    }

    /// A pattern's character automaton; `nil` when a lenient compilation drops it.
    mutating func characterLanguage(_ pattern: String, search: Bool, pointer: String, into automaton: inout CharacterNFA) throws(GrammarError) -> Fragment? {
        do {
            return try RegularExpression.build(pattern, search: search, into: &automaton, repetitionLimit: options.repetitionLimit)
        } catch {
            if case .invalidRegex(_, _, let message) = error, options.lenient {
                try report(pointer.hasSuffix("/format") ? "format" : "pattern", pointer, message)
                return nil
            }
            throw error
        }
    }

    /// The quoted JSON strings whose contents `content` (characters) matches, determinized
    /// over characters before they are spelled in bytes (see `CharacterDFA`).
    mutating func quoted(_ content: Fragment, of characters: CharacterNFA) throws(GrammarError) -> DFA {
        var fans = spellingFans
        defer { spellingFans = fans }
        return try budgeted { () throws(DFA.TooLarge) in
            try CharacterDFA(content, of: characters).quotedJSONStrings(fans: &fans)
        }
    }

    /// Numbers (or integers) within the node's bounds and `multipleOf`, each value in its
    /// shortest spelling only while ``writesNumbersOnce`` holds.
    mutating func numberFragment(_ node: SchemaNode, integer: Bool) throws(GrammarError) -> Fragment {
        do {
            return try numberLanguage(node, integer: integer, writesEachValueOnce: writesNumbersOnce).embeddedFragment(into: &grammar.automaton)
        } catch {
            if case .unsupportedKeyword(let keyword, _, let reason) = error {
                try report(keyword, node.pointer, reason)
                return try numberFragment({ var copy = node; copy.multipleOf = []; return copy }(), integer: integer)
            }
            throw error
        }
    }

    /// The numbers (or integers) `node` admits, as a trimmed, minimal automaton: the language
    /// ``numberFragment(_:integer:)`` writes (with `writesEachValueOnce` for its flag).
    func numberLanguage(_ node: SchemaNode, integer: Bool, writesEachValueOnce: Bool) throws(GrammarError) -> DFA {
        var keywords = try numericKeywords(node, integer: integer)
        keywords.filters.writesEachValueOnce = writesEachValueOnce && !integer
        if integer {
            return try NumberLanguage.integerLanguage(minimum: keywords.minimum, exclusiveMinimum: keywords.exclusiveMinimum,
                                                      maximum: keywords.maximum, exclusiveMaximum: keywords.exclusiveMaximum,
                                                      multipleOf: keywords.multiple, filters: keywords.filters)
        }
        return try NumberLanguage.numberLanguage(minimum: keywords.minimum, exclusiveMinimum: keywords.exclusiveMinimum,
                                                 maximum: keywords.maximum, exclusiveMaximum: keywords.exclusiveMaximum,
                                                 multipleOf: keywords.multiple, filters: keywords.filters,
                                                 digitLimits: options.boundsNumberDigits ? .double : nil)
    }

    /// A node's numeric keywords as the number languages take them: the tightest bound of
    /// each kind, one divisor (the others as filters), the excluded values and multiples.
    private func numericKeywords(_ node: SchemaNode, integer: Bool) throws(GrammarError) -> NumericKeywords {
        func tightest(_ texts: [String], lower: Bool) throws(GrammarError) -> DecimalNumber? {
            var best: DecimalNumber? = nil
            for text in texts {
                guard let value = DecimalNumber(text) else { throw .invalidSchema(pointer: node.pointer, message: "bad number \(text)") }
                if let current = best { best = lower ? max(current, value) : min(current, value) } else { best = value }
            }
            return best
        }
        var keywords = NumericKeywords()
        if node.multipleOf.count > 1 {
            // Several divisors: one that is a multiple of all the others, or all of them.
            let divisors = node.multipleOf.compactMap { DecimalNumber($0) }
            keywords.multiple = divisors.first { candidate in divisors.allSatisfy { candidate.isMultiple(of: $0) } }
            if keywords.multiple == nil {
                keywords.multiple = divisors.first
                keywords.filters.requiredMultiples = Array(divisors.dropFirst())
            }
        } else if let only = node.multipleOf.first {
            keywords.multiple = DecimalNumber(only)
        }
        keywords.minimum = try tightest(node.minimum, lower: true)
        keywords.exclusiveMinimum = try tightest(node.exclusiveMinimum, lower: true)
        keywords.maximum = try tightest(node.maximum, lower: false)
        keywords.exclusiveMaximum = try tightest(node.exclusiveMaximum, lower: false)
        if integer, options.boundsIntegersToInteroperableRange {
            let limit = DecimalNumber("9007199254740991")!
            if keywords.minimum == nil, keywords.exclusiveMinimum == nil { keywords.minimum = -limit }
            if keywords.maximum == nil, keywords.exclusiveMaximum == nil { keywords.maximum = limit }
        }
        for value in node.excludedValues {
            if case .number(let text) = value, let decimal = DecimalNumber(text) { keywords.filters.excludedValues.append(decimal) }
        }
        for text in node.excludedMultiples {
            guard let decimal = DecimalNumber(text), decimal.isPositive else { throw .invalidSchema(pointer: node.pointer, message: "bad multipleOf \(text)") }
            keywords.filters.excludedMultiples.append(decimal)
        }
        return keywords
    }
}

/// The numeric keywords of a schema node, read for ``NumberLanguage``.
private struct NumericKeywords {
    var minimum: DecimalNumber? = nil
    var exclusiveMinimum: DecimalNumber? = nil
    var maximum: DecimalNumber? = nil
    var exclusiveMaximum: DecimalNumber? = nil
    var multiple: DecimalNumber? = nil
    var filters = NumericFilters()
}

/// Regular expressions (whole-match) for the `format`s the compiler enforces. Each accepts
/// a subset of the format's valid strings — never an invalid one — documented per format.
enum Formats {
    static func pattern(for format: String) -> String? {
        switch format {
        case "date": return date
        case "time": return time
        case "date-time": return date + "[Tt]" + time
        case "duration": return duration
        case "email": return email
        case "uuid": return "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
        case "uri": return uri
        case "uri-reference": return uriReference
        case "iri": return iri
        case "iri-reference": return iriReference
        case "json-pointer": return jsonPointer
        case "relative-json-pointer": return "(?:0|[1-9][0-9]*)(?:#|" + jsonPointer + ")"
        case "ipv4": return ipv4
        case "ipv6": return ipv6
        case "hostname": return hostname
        default: return nil
        }
    }

    /// RFC 3339 full-date with the real day count of each month (leap years by the
    /// Gregorian rule).
    static let date: String = {
        let common = "[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))"
        let leapYear = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
        return "(?:" + common + "|" + leapYear + "-02-29)"
    }()

    /// RFC 3339 full-time with an offset. Leap seconds (`:60`) are left out: their validity
    /// depends on the offset.
    static let time = "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"

    /// ISO 8601 durations as RFC 3339 appendix A writes them (`P3Y6M4DT12H30M5S`, `P4W`).
    static let duration: String = {
        let time = "T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)"
        let day = "[0-9]+D(?:" + time + ")?"
        let month = "[0-9]+M(?:" + day + "|" + time + ")?"
        let year = "[0-9]+Y(?:" + month + "|" + day + "|" + time + ")?"
        return "P(?:[0-9]+W|" + year + "|" + month + "|" + day + "|" + time + ")"
    }()

    /// A dot-atom local part and a domain of letter-digit-hyphen labels (no quoted local
    /// parts, no address literals).
    static let email = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@" + label + "(?:\\." + label + ")*"

    static let label = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"

    /// RFC 1123 host names: labels of at most 62 characters, at most four of them (so the
    /// whole name stays under 253 characters without counting).
    static let hostname = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,60}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,60}[A-Za-z0-9])?){0,3}"

    static let ipv4 = "(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"

    /// RFC 4291 text forms: eight groups, or fewer around one `::` (no embedded IPv4).
    static let ipv6: String = {
        let group = "[0-9A-Fa-f]{1,4}"
        func groups(_ count: Int) -> String {
            count == 0 ? "" : group + String(repeating: ":" + group, count: count - 1)
        }
        var forms = [groups(8)]
        for before in 0 ... 7 {
            for after in 0 ... (7 - before) {
                forms.append(groups(before) + "::" + groups(after))
            }
        }
        return "(?:" + forms.joined(separator: "|") + ")"
    }()

    /// RFC 3986 absolute URIs: scheme, optional authority (user info, registered-name or
    /// IPv4 host, numeric port), path, query and fragment, with percent-escapes. IP-literal
    /// hosts (`[::1]`) are left out.
    static let uri = reference(absolute: true, international: false)

    /// RFC 3986 URI references: an absolute URI, or a relative reference (a network path
    /// `//host/…`, an absolute path, a relative path whose first segment has no `:`, or
    /// nothing) with a query and a fragment.
    static let uriReference = reference(absolute: false, international: false)

    /// RFC 3987 IRIs and IRI references: as URIs, with the characters U+00A0 to U+D7FF,
    /// U+F900 to U+FDCF and U+FDF0 to U+FFEF unescaped (the other `ucschar`s and the private
    /// ranges of the query are left out).
    static let iri = reference(absolute: true, international: true)
    static let iriReference = reference(absolute: false, international: true)

    /// RFC 6901 JSON pointers: `/`-separated tokens with `~0` and `~1` escapes.
    static let jsonPointer = "(?:/(?:[^/~]|~[01])*)*"

    static func reference(absolute: Bool, international: Bool) -> String {
        let unicode = international ? "\\u00A0-\\uD7FF\\uF900-\\uFDCF\\uFDF0-\\uFFEF" : ""
        let unreserved = "A-Za-z0-9\\-._~" + unicode
        let subDelimiters = "!$&'()*+,;="
        let percent = "%[0-9A-Fa-f]{2}"
        let pchar = "(?:[" + unreserved + subDelimiters + ":@]|" + percent + ")"
        let segmentNoColon = "(?:[" + unreserved + subDelimiters + "@]|" + percent + ")+"
        let userInfo = "(?:(?:[" + unreserved + subDelimiters + ":]|" + percent + ")*@)?"
        let host = "(?:[" + unreserved + subDelimiters + "]|" + percent + ")*"
        let authority = "//" + userInfo + host + "(?::[0-9]*)?"
        let pathAbsoluteOrEmpty = "(?:/" + pchar + "*)*"
        let pathRootless = pchar + "+(?:/" + pchar + "*)*"
        let pathAbsolute = "/(?:" + pchar + "+(?:/" + pchar + "*)*)?"
        let pathNoScheme = segmentNoColon + "(?:/" + pchar + "*)*"
        let tail = "(?:[" + unreserved + subDelimiters + ":@/?]|" + percent + ")*"
        let queryAndFragment = "(?:\\?" + tail + ")?(?:#" + tail + ")?"
        let absoluteForm = "[A-Za-z][A-Za-z0-9+.\\-]*:(?:" + authority + pathAbsoluteOrEmpty + "|" + pathAbsolute + "|" + pathRootless + ")?"
            + queryAndFragment
        guard !absolute else { return absoluteForm }
        let relative = "(?:" + authority + pathAbsoluteOrEmpty + "|" + pathAbsolute + "|" + pathNoScheme + ")?" + queryAndFragment
        return "(?:" + absoluteForm + "|" + relative + ")"
    }
}

/// A string's length bounds in characters (`minLength`, `maxLength`).
struct LengthBounds: Hashable, Sendable {
    var minimum: Int
    var maximum: Int?
}
