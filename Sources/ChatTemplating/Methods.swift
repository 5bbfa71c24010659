import Foundation

// MARK: - Methods on values

extension Renderer {
    static let stringMethods: Set<String> = [
        "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith",
        "upper", "lower", "title", "capitalize", "swapcase", "replace", "find", "rfind", "index",
        "rindex", "count", "join", "format", "isdigit", "isalpha", "isalnum", "isspace", "isupper",
        "islower", "isnumeric", "isdecimal", "removeprefix", "removesuffix", "zfill", "center",
        "ljust", "rjust", "casefold", "partition", "rpartition",
    ]

    func callMethod(_ name: String, on receiver: RuntimeValue, with arguments: Arguments, at location: SourceLocation) throws(ChatTemplateError) -> RuntimeValue {
        switch receiver {
        case .string(let string):
            return try callStringMethod(name, on: string, with: arguments, at: location)
        case .dictionary(let dictionary):
            switch name {
            case "get":
                let bound = try bind(arguments, names: ["key", "default"], function: "get", at: location)
                guard let key = bound[0] else { throw .runtime("get expected at least 1 argument, got 0", at: location) }
                return dictionary.value(for: key) ?? bound[1] ?? .none
            case "items":
                _ = try bind(arguments, names: [], function: "items", at: location)
                return .list(dictionary.entries.map { .tuple([$0.0, $0.1]) })
            case "keys":
                _ = try bind(arguments, names: [], function: "keys", at: location)
                return .list(dictionary.keys)
            case "values":
                _ = try bind(arguments, names: [], function: "values", at: location)
                return .list(dictionary.values)
            case "copy":
                return receiver
            default:
                break
            }
        case .list(let items), .tuple(let items):
            switch name {
            case "index":
                let bound = try bind(arguments, names: ["value"], function: "index", at: location)
                guard let needle = bound[0] else { throw .runtime("index expected 1 argument", at: location) }
                if let found = items.firstIndex(where: { RuntimeValue.pythonEquals($0, needle) }) { return .integer(found) }
                throw .runtime("\(needle.pythonRepr()) is not in list", at: location)
            case "count":
                let bound = try bind(arguments, names: ["value"], function: "count", at: location)
                guard let needle = bound[0] else { throw .runtime("count expected 1 argument", at: location) }
                return .integer(items.filter { RuntimeValue.pythonEquals($0, needle) }.count)
            case "copy":
                return receiver
            default:
                break
            }
        case .loop(let loop):
            switch name {
            case "cycle":
                guard !arguments.positional.isEmpty else { throw .runtime("no items for cycling given", at: location) }
                return arguments.positional[loop.index0 % arguments.positional.count]
            case "changed":
                let changed = loop.lastChanged.map { previous in
                    previous.count != arguments.positional.count
                        || zip(previous, arguments.positional).contains { !RuntimeValue.pythonEquals($0, $1) }
                } ?? true
                loop.lastChanged = arguments.positional
                return .boolean(changed)
            default:
                break
            }
        default:
            break
        }
        throw .runtime("'\(receiver.typeName)' object has no method '\(name)'", at: location)
    }

    private func stringArgument(_ value: RuntimeValue?, function: String, at location: SourceLocation) throws(ChatTemplateError) -> String? {
        guard let value else { return nil }
        switch value {
        case .none: return nil
        case .string(let string): return string
        case .undefined(let undefined): throw undefined.error(at: location)
        default: throw .runtime("\(function) arg must be None or str", at: location)
        }
    }

    private func callStringMethod(_ name: String, on string: String, with arguments: Arguments, at location: SourceLocation) throws(ChatTemplateError) -> RuntimeValue {
        switch name {
        case "strip", "lstrip", "rstrip":
            let bound = try bind(arguments, names: ["chars"], function: name, at: location)
            let characters = try stringArgument(bound[0], function: name, at: location)
            return .string(Text.strip(string, characters: characters, leading: name != "rstrip", trailing: name != "lstrip"))
        case "split", "rsplit":
            let bound = try bind(arguments, names: ["sep", "maxsplit"], function: name, at: location)
            let separator = try stringArgument(bound[0], function: name, at: location)
            let maximum = bound[1]?.integerIndex ?? -1
            if separator == "" { throw .runtime("empty separator", at: location) }
            let parts = Text.split(string, separator: separator, maximumSplits: maximum, fromEnd: name == "rsplit")
            return .list(parts.map { .string($0) })
        case "splitlines":
            let bound = try bind(arguments, names: ["keepends"], function: name, at: location)
            return .list(Text.splitLines(string, keepEnds: bound[0]?.isTruthy ?? false).map { .string($0) })
        case "startswith", "endswith":
            let bound = try bind(arguments, names: ["prefix", "start", "end"], function: name, at: location)
            guard let affix = bound[0] else { throw .runtime("\(name)() takes at least 1 argument (0 given)", at: location) }
            var candidates: [String] = []
            switch affix {
            case .string(let single): candidates = [single]
            case .tuple(let items):
                for item in items {
                    guard case .string(let candidate) = item else {
                        throw .runtime("tuple for \(name) must only contain str, not \(item.typeName)", at: location)
                    }
                    candidates.append(candidate)
                }
            default:
                throw .runtime("\(name) first arg must be str or a tuple of str, not \(affix.typeName)", at: location)
            }
            var scalars = Array(string.unicodeScalars)
            let count = scalars.count
            func clamp(_ value: Int) -> Int { value < 0 ? max(value + count, 0) : min(value, count) }
            let start = clamp(bound[1]?.integerIndex ?? 0)
            let end = clamp(bound[2]?.integerIndex ?? count)
            scalars = start <= end ? Array(scalars[start..<end]) : []
            for candidate in candidates {
                let affixScalars = Array(candidate.unicodeScalars)
                if name == "startswith" ? scalars.starts(with: affixScalars)
                    : scalars.reversed().starts(with: affixScalars.reversed()) {
                    return .boolean(true)
                }
            }
            return .boolean(false)
        case "upper":
            return .string(string.uppercased())
        case "lower", "casefold":
            return .string(string.lowercased())
        case "title":
            return .string(Text.pythonTitle(string))
        case "capitalize":
            return .string(Text.capitalize(string))
        case "swapcase":
            var result = ""
            for character in string {
                let text = String(character)
                result += text == text.uppercased() ? text.lowercased() : text.uppercased()
            }
            return .string(result)
        case "replace":
            let bound = try bind(arguments, names: ["old", "new", "count"], function: name, at: location)
            guard let old = try stringArgument(bound[0], function: name, at: location),
                  let new = try stringArgument(bound[1], function: name, at: location) else {
                throw .runtime("replace() arguments must be str", at: location)
            }
            let count = bound[2]?.integerIndex ?? -1
            guard let replaced = Text.replace(string, old, new, count: count, maximumLength: limits.maximumOutputLength) else {
                throw .limit("a string grew beyond \(limits.maximumOutputLength) bytes", at: location)
            }
            return .string(try checked(replaced, at: location))
        case "find", "rfind", "index", "rindex", "count":
            let bound = try bind(arguments, names: ["sub"], function: name, at: location)
            guard let needle = try stringArgument(bound[0], function: name, at: location) else {
                throw .runtime("\(name)() argument must be str", at: location)
            }
            let haystack = Array(string.unicodeScalars)
            let pattern = Array(needle.unicodeScalars)
            if name == "count" {
                return .integer(pattern.isEmpty ? haystack.count + 1 : Text.occurrences(of: pattern, in: haystack).count)
            }
            let fromEnd = name.hasPrefix("r")
            let found = pattern.isEmpty ? (fromEnd ? haystack.count : 0)
                : Text.occurrences(of: pattern, in: haystack, maximumCount: 1, fromEnd: fromEnd).first
            if let found { return .integer(found) }
            if name.hasSuffix("index") { throw .runtime("substring not found", at: location) }
            return .integer(-1)
        case "join":
            let bound = try bind(arguments, names: ["iterable"], function: name, at: location)
            guard let iterable = bound[0] else { throw .runtime("join() takes exactly one argument (0 given)", at: location) }
            var pieces: [String] = []
            for (index, item) in try iterate(iterable, at: location).enumerated() {
                guard case .string(let piece) = item else {
                    throw .runtime("sequence item \(index): expected str instance, \(item.typeName) found", at: location)
                }
                pieces.append(piece)
            }
            return .string(try checked(try joined(pieces, separator: string, at: location), at: location))
        case "format":
            return .string(try checked(try braceFormat(string, arguments, at: location), at: location))
        case "isdigit", "isdecimal", "isnumeric":
            return .boolean(!string.isEmpty && string.unicodeScalars.allSatisfy {
                guard let type = $0.properties.numericType else { return false }
                if name == "isdecimal" { return type == .decimal }
                if name == "isdigit" { return type == .decimal || type == .digit }
                return true
            })
        case "isalpha":
            return .boolean(!string.isEmpty && string.unicodeScalars.allSatisfy { $0.properties.isAlphabetic })
        case "isalnum":
            return .boolean(!string.isEmpty && string.unicodeScalars.allSatisfy {
                $0.properties.isAlphabetic || $0.properties.numericType != nil
            })
        case "isspace":
            return .boolean(!string.isEmpty && string.unicodeScalars.allSatisfy(Lexer.isPythonWhitespace))
        case "isupper":
            return .boolean(Text.isUpper(string))
        case "islower":
            return .boolean(Text.isLower(string))
        case "removeprefix":
            let bound = try bind(arguments, names: ["prefix"], function: name, at: location)
            let prefix = try stringArgument(bound[0], function: name, at: location) ?? ""
            let matches = string.unicodeScalars.starts(with: prefix.unicodeScalars)
            return .string(matches ? String(String.UnicodeScalarView(string.unicodeScalars.dropFirst(prefix.unicodeScalars.count))) : string)
        case "removesuffix":
            let bound = try bind(arguments, names: ["suffix"], function: name, at: location)
            let suffix = try stringArgument(bound[0], function: name, at: location) ?? ""
            let matches = string.unicodeScalars.reversed().starts(with: suffix.unicodeScalars.reversed())
            return .string(matches ? String(String.UnicodeScalarView(string.unicodeScalars.dropLast(suffix.unicodeScalars.count))) : string)
        case "zfill", "center", "ljust", "rjust":
            let bound = try bind(arguments, names: ["width", "fillchar"], function: name, at: location)
            let width = min(bound[0]?.integerIndex ?? 0, limits.maximumOutputLength)
            let fill = try stringArgument(bound[1], function: name, at: location) ?? (name == "zfill" ? "0" : " ")
            if fill.unicodeScalars.count != 1 {
                throw .runtime("The fill character must be exactly one character long", at: location)
            }
            let length = string.unicodeScalars.count
            guard width > length else { return .string(string) }
            let padding = width - length
            switch name {
            case "center": return .string(Text.center(string, width: width, fill: fill))
            case "ljust": return .string(string + String(repeating: fill, count: padding))
            case "rjust": return .string(String(repeating: fill, count: padding) + string)
            default:
                if let sign = string.unicodeScalars.first, sign == "-" || sign == "+" {
                    return .string(String(sign) + String(repeating: "0", count: padding) + String(string.unicodeScalars.dropFirst()))
                }
                return .string(String(repeating: "0", count: padding) + string)
            }
        case "partition", "rpartition":
            let bound = try bind(arguments, names: ["sep"], function: name, at: location)
            guard let separator = try stringArgument(bound[0], function: name, at: location), !separator.isEmpty else {
                throw .runtime("empty separator", at: location)
            }
            let parts = Text.split(string, separator: separator, maximumSplits: 1, fromEnd: name == "rpartition")
            if parts.count == 2 {
                return .tuple([.string(parts[0]), .string(separator), .string(parts[1])])
            }
            return name == "partition"
                ? .tuple([.string(string), .string(""), .string("")])
                : .tuple([.string(""), .string(""), .string(string)])
        default:
            throw .runtime("'str' object has no method '\(name)'", at: location)
        }
    }

    // MARK: Formatting

    /// Python's printf-style `format % arguments` for `%s %r %d %i %f %%` (what templates use).
    func percentFormat(_ format: String, _ arguments: RuntimeValue, at location: SourceLocation) throws(ChatTemplateError) -> String {
        var positional: [RuntimeValue]
        var mapping: Dictionary?
        switch arguments {
        case .tuple(let items): positional = items
        case .dictionary(let dictionary):
            positional = [arguments]
            mapping = dictionary
        default: positional = [arguments]
        }
        var result = ""
        var scalars = format.unicodeScalars.makeIterator()
        var nextArgument = 0
        while let scalar = scalars.next() {
            guard scalar == "%" else {
                result.unicodeScalars.append(scalar)
                continue
            }
            guard var conversion = scalars.next() else {
                throw .runtime("incomplete format", at: location)
            }
            var value: RuntimeValue?
            if conversion == "(" {
                var key = ""
                while let next = scalars.next(), next != ")" { key.unicodeScalars.append(next) }
                guard let mapping else { throw .runtime("format requires a mapping", at: location) }
                guard let found = mapping.value(for: key) else { throw .runtime("KeyError: \(RuntimeValue.pythonRepr(key))", at: location) }
                value = found
                guard let next = scalars.next() else { throw .runtime("incomplete format", at: location) }
                conversion = next
            }
            if conversion == "%" {
                result += "%"
                continue
            }
            if value == nil {
                guard nextArgument < positional.count else {
                    throw .runtime("not enough arguments for format string", at: location)
                }
                value = positional[nextArgument]
                nextArgument += 1
            }
            guard let value else { continue }
            switch conversion {
            case "s": result += try stringify(value, at: location)
            case "r", "a":
                if case .string(let string) = value {
                    result += RuntimeValue.pythonRepr(string)
                } else {
                    result += try stringify(value, at: location)
                }
            case "d", "i":
                guard let number = value.numericValue else {
                    throw .runtime("%\(conversion) format: a real number is required, not \(value.typeName)", at: location)
                }
                switch number {
                case .integer(let integer): result += String(integer)
                case .double(let double):
                    guard double.isFinite, let truncated = Int(exactly: double.rounded(.towardZero)) else {
                        throw .runtime("cannot convert float to integer", at: location)
                    }
                    result += String(truncated)
                }
            case "f", "F":
                guard let number = value.numericValue else {
                    throw .runtime("must be real number, not \(value.typeName)", at: location)
                }
                result += String(format: "%.6f", number.doubleValue)
            default:
                throw .unsupported("the printf conversion '%\(conversion)'", at: location)
            }
            if result.utf8.count > limits.maximumOutputLength {
                throw .limit("a string grew beyond \(limits.maximumOutputLength) bytes", at: location)
            }
        }
        if nextArgument < positional.count && mapping == nil {
            throw .runtime("not all arguments converted during string formatting", at: location)
        }
        return result
    }

    /// Python's `str.format` for `{}`, `{0}`, `{name}` and `{{`/`}}` (no format specifications).
    private func braceFormat(_ format: String, _ arguments: Arguments, at location: SourceLocation) throws(ChatTemplateError) -> String {
        var result = ""
        var iterator = format.unicodeScalars.makeIterator()
        var automatic = 0
        while let scalar = iterator.next() {
            if scalar == "}" {
                guard iterator.next() == "}" else { throw .runtime("Single '}' encountered in format string", at: location) }
                result += "}"
                continue
            }
            guard scalar == "{" else {
                result.unicodeScalars.append(scalar)
                continue
            }
            var field = ""
            var closed = false
            while let next = iterator.next() {
                if next == "{" && field.isEmpty {
                    result += "{"
                    closed = true
                    field = "\u{0}"
                    break
                }
                if next == "}" {
                    closed = true
                    break
                }
                field.unicodeScalars.append(next)
            }
            guard closed else { throw .runtime("expected '}' before end of string", at: location) }
            if field == "\u{0}" { continue }
            if field.contains(":") || field.contains("!") || field.contains(".") || field.contains("[") {
                throw .unsupported("format specifications in str.format", at: location)
            }
            let value: RuntimeValue
            if field.isEmpty {
                guard automatic < arguments.positional.count else {
                    throw .runtime("Replacement index \(automatic) out of range for positional args tuple", at: location)
                }
                value = arguments.positional[automatic]
                automatic += 1
            } else if let index = Int(field) {
                guard index >= 0 && index < arguments.positional.count else {
                    throw .runtime("Replacement index \(index) out of range for positional args tuple", at: location)
                }
                value = arguments.positional[index]
            } else {
                guard let found = arguments.keyword.first(where: { $0.name == field })?.value else {
                    throw .runtime("KeyError: \(RuntimeValue.pythonRepr(field))", at: location)
                }
                value = found
            }
            result += try stringify(value, at: location)
            if result.utf8.count > limits.maximumOutputLength {
                throw .limit("a string grew beyond \(limits.maximumOutputLength) bytes", at: location)
            }
        }
        return result
    }

    /// `separator.join(pieces)`, refusing results longer than the output limit before building them.
    func joined(_ pieces: [String], separator: String, at location: SourceLocation) throws(ChatTemplateError) -> String {
        var total = separator.utf8.count.multipliedReportingOverflow(by: max(pieces.count - 1, 0))
        for piece in pieces where !total.overflow {
            total = total.partialValue.addingReportingOverflow(piece.utf8.count)
        }
        if total.overflow || total.partialValue > limits.maximumOutputLength {
            throw .limit("a string grew beyond \(limits.maximumOutputLength) bytes", at: location)
        }
        return pieces.joined(separator: separator)
    }

    /// Python `str(value)` for output, refusing results longer than the output limit.
    func stringify(_ value: RuntimeValue, at location: SourceLocation) throws(ChatTemplateError) -> String {
        guard let text = value.pythonString(maximumLength: limits.maximumOutputLength) else {
            throw .limit("a string grew beyond \(limits.maximumOutputLength) bytes", at: location)
        }
        return text
    }
}

// MARK: - Python string algorithms

enum Text {
    /// `str.strip([chars])`, `lstrip`, `rstrip`.
    static func strip(_ string: String, characters: String?, leading: Bool, trailing: Bool) -> String {
        let scalars = Array(string.unicodeScalars)
        let set = characters.map { Set($0.unicodeScalars) }
        func strippable(_ scalar: Unicode.Scalar) -> Bool {
            if let set { return set.contains(scalar) }
            return Lexer.isPythonWhitespace(scalar)
        }
        var start = 0
        var end = scalars.count
        if leading { while start < end, strippable(scalars[start]) { start += 1 } }
        if trailing { while end > start, strippable(scalars[end - 1]) { end -= 1 } }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars[start..<end])
        return String(view)
    }

    /// Start offsets of non-overlapping occurrences of `pattern` in `text`, scanning left to
    /// right (or right to left, then listed from the right), at most `maximumCount`.
    /// Knuth–Morris–Pratt, so crafted inputs cannot make a search quadratic.
    static func occurrences(
        of pattern: [Unicode.Scalar], in text: [Unicode.Scalar], maximumCount: Int = .max, fromEnd: Bool = false
    ) -> [Int] {
        guard !pattern.isEmpty, pattern.count <= text.count, maximumCount > 0 else { return [] }
        if fromEnd {
            let found = occurrences(of: pattern.reversed(), in: text.reversed(), maximumCount: maximumCount)
            return found.map { text.count - $0 - pattern.count }
        }
        var failure = [Int](repeating: 0, count: pattern.count)
        var matched = 0
        for index in 1..<max(pattern.count, 1) {
            while matched > 0 && pattern[index] != pattern[matched] { matched = failure[matched - 1] }
            if pattern[index] == pattern[matched] { matched += 1 }
            failure[index] = matched
        }
        var result: [Int] = []
        matched = 0
        for (index, scalar) in text.enumerated() {
            while matched > 0 && scalar != pattern[matched] { matched = failure[matched - 1] }
            if scalar == pattern[matched] { matched += 1 }
            if matched == pattern.count {
                result.append(index - pattern.count + 1)
                if result.count >= maximumCount { break }
                matched = 0
            }
        }
        return result
    }

    /// Python `part in text` (by code point).
    static func contains(_ text: String, _ part: String) -> Bool {
        if part.isEmpty { return true }
        return !occurrences(of: Array(part.unicodeScalars), in: Array(text.unicodeScalars), maximumCount: 1).isEmpty
    }

    private static func make(_ slice: ArraySlice<Unicode.Scalar>) -> String {
        var view = String.UnicodeScalarView()
        view.append(contentsOf: slice)
        return String(view)
    }

    /// `str.split(sep, maxsplit)` / `str.rsplit`.
    static func split(_ string: String, separator: String?, maximumSplits: Int, fromEnd: Bool) -> [String] {
        let scalars = Array(string.unicodeScalars)
        var parts: [String] = []
        var splits = 0
        let unlimited = maximumSplits < 0
        guard let separator else {
            // Runs of whitespace; no empty strings.
            if fromEnd {
                var end = scalars.count
                while true {
                    while end > 0, Lexer.isPythonWhitespace(scalars[end - 1]) { end -= 1 }
                    if end == 0 { break }
                    if !unlimited && splits >= maximumSplits {
                        parts.append(make(scalars[0..<end]))
                        break
                    }
                    var start = end
                    while start > 0, !Lexer.isPythonWhitespace(scalars[start - 1]) { start -= 1 }
                    parts.append(make(scalars[start..<end]))
                    splits += 1
                    end = start
                }
                return parts.reversed()
            }
            var start = 0
            while true {
                while start < scalars.count, Lexer.isPythonWhitespace(scalars[start]) { start += 1 }
                if start == scalars.count { break }
                if !unlimited && splits >= maximumSplits {
                    var end = scalars.count
                    while end > start, Lexer.isPythonWhitespace(scalars[end - 1]) { end -= 1 }
                    parts.append(make(scalars[start..<end]))
                    break
                }
                var end = start
                while end < scalars.count, !Lexer.isPythonWhitespace(scalars[end]) { end += 1 }
                parts.append(make(scalars[start..<end]))
                splits += 1
                start = end
            }
            return parts
        }
        let pattern = Array(separator.unicodeScalars)
        guard !pattern.isEmpty else { return [string] }
        let found = occurrences(of: pattern, in: scalars, maximumCount: unlimited ? .max : maximumSplits, fromEnd: fromEnd)
        let positions = fromEnd ? Array(found.reversed()) : found
        var start = 0
        for position in positions {
            parts.append(make(scalars[start..<position]))
            start = position + pattern.count
        }
        parts.append(make(scalars[start..<scalars.count]))
        return parts
    }

    private static let lineBreaks: Set<UInt32> = [0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029]

    /// `str.splitlines(keepends)`.
    static func splitLines(_ string: String, keepEnds: Bool) -> [String] {
        let scalars = Array(string.unicodeScalars)
        var lines: [String] = []
        var start = 0
        var index = 0
        while index < scalars.count {
            if lineBreaks.contains(scalars[index].value) {
                var end = index + 1
                if scalars[index] == "\r", end < scalars.count, scalars[end] == "\n" { end += 1 }
                var view = String.UnicodeScalarView()
                view.append(contentsOf: scalars[start..<(keepEnds ? end : index)])
                lines.append(String(view))
                start = end
                index = end
            } else {
                index += 1
            }
        }
        if start < scalars.count {
            var view = String.UnicodeScalarView()
            view.append(contentsOf: scalars[start..<scalars.count])
            lines.append(String(view))
        }
        return lines
    }

    /// `str.replace(old, new, count)`, or nil if the result would pass `maximumLength` UTF-8 bytes.
    static func replace(_ string: String, _ old: String, _ new: String, count: Int, maximumLength: Int) -> String? {
        let scalars = Array(string.unicodeScalars)
        let pattern = Array(old.unicodeScalars)
        let limit = count < 0 ? Int.max : count
        let positions: [Int]
        if pattern.isEmpty {
            positions = Array(0...scalars.count).prefix(limit).map { $0 }
        } else {
            positions = occurrences(of: pattern, in: scalars, maximumCount: limit)
        }
        let growth = new.utf8.count.multipliedReportingOverflow(by: positions.count)
        if growth.overflow || growth.partialValue > maximumLength + string.utf8.count { return nil }
        var result = String.UnicodeScalarView()
        var start = 0
        for position in positions {
            result.append(contentsOf: scalars[start..<position])
            result.append(contentsOf: new.unicodeScalars)
            start = position + pattern.count
        }
        if start < scalars.count { result.append(contentsOf: scalars[start..<scalars.count]) }
        let text = String(result)
        return text.utf8.count > maximumLength ? nil : text
    }

    /// `str.capitalize()`: first character upper-cased, the rest lower-cased.
    static func capitalize(_ string: String) -> String {
        guard let first = string.unicodeScalars.first else { return "" }
        return String(first).uppercased() + String(string.unicodeScalars.dropFirst()).lowercased()
    }

    private static func isCased(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isCased
    }

    /// `str.title()`: a letter after a non-cased character starts a word.
    static func pythonTitle(_ string: String) -> String {
        var result = ""
        var previousCased = false
        for scalar in string.unicodeScalars {
            let text = String(scalar)
            result += previousCased ? text.lowercased() : text.uppercased()
            previousCased = isCased(scalar)
        }
        return result
    }

    /// Jinja's `title` filter: words start after spaces, `-`, `(`, `{`, `[`, `<`.
    static func jinjaTitle(_ string: String) -> String {
        var result = ""
        var atWordStart = true
        for scalar in string.unicodeScalars {
            let isBoundary = Lexer.isPythonWhitespace(scalar) || "-({[<".unicodeScalars.contains(scalar)
            if isBoundary {
                result.unicodeScalars.append(scalar)
                atWordStart = true
            } else {
                result += atWordStart ? String(scalar).uppercased() : String(scalar).lowercased()
                atWordStart = false
            }
        }
        return result
    }

    static func isLower(_ string: String) -> Bool {
        var hasCased = false
        for scalar in string.unicodeScalars where isCased(scalar) {
            if scalar.properties.isUppercase || scalar.properties.generalCategory == .titlecaseLetter { return false }
            hasCased = true
        }
        return hasCased
    }

    static func isUpper(_ string: String) -> Bool {
        var hasCased = false
        for scalar in string.unicodeScalars where isCased(scalar) {
            if scalar.properties.isLowercase || scalar.properties.generalCategory == .titlecaseLetter { return false }
            hasCased = true
        }
        return hasCased
    }

    /// `str.center(width, fill)`.
    static func center(_ string: String, width: Int, fill: String = " ") -> String {
        let length = string.unicodeScalars.count
        guard width > length else { return string }
        let padding = width - length
        let left = padding / 2 + (padding & width & 1)
        return String(repeating: fill, count: left) + string + String(repeating: fill, count: padding - left)
    }

    /// Jinja's `indent` filter.
    static func indent(_ string: String, indentation: String, first: Bool, blank: Bool) -> String {
        let lines = splitLines(string + "\n", keepEnds: false)
        var result: String
        if blank {
            result = lines.joined(separator: "\n" + indentation)
        } else {
            result = lines.first ?? ""
            let rest = lines.dropFirst()
            if !rest.isEmpty {
                result += "\n" + rest.map { $0.isEmpty ? $0 : indentation + $0 }.joined(separator: "\n")
            }
        }
        if first { result = indentation + result }
        return result
    }

    /// markupsafe's `escape`.
    static func escapeHTML(_ string: String) -> String {
        var result = ""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&#34;"
            case "'": result += "&#39;"
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Jinja's `wordcount`: the number of `\w+` runs.
    static func wordCount(_ string: String) -> Int {
        var count = 0
        var inWord = false
        for scalar in string.unicodeScalars {
            let isWord = scalar == "_" || scalar.properties.isAlphabetic || scalar.properties.numericType != nil
            if isWord && !inWord { count += 1 }
            inWord = isWord
        }
        return count
    }

    /// Python `int(text, base)`: whitespace, sign, underscores between digits, optional prefix.
    static func parsePythonInteger(_ text: String, base: Int) -> Int? {
        var body = strip(text, characters: nil, leading: true, trailing: true)
        var negative = false
        if body.hasPrefix("-") || body.hasPrefix("+") {
            negative = body.hasPrefix("-")
            body.removeFirst()
        }
        var radix = base
        let lower = body.lowercased()
        for (prefix, prefixRadix) in [("0x", 16), ("0o", 8), ("0b", 2)] where lower.hasPrefix(prefix) {
            if base == prefixRadix || base == 0 {
                radix = prefixRadix
                body = String(body.dropFirst(2))
                if body.hasPrefix("_") { body.removeFirst() }
            }
        }
        if radix == 0 { radix = 10 }
        guard radix >= 2 && radix <= 36, !body.isEmpty, !body.hasPrefix("_"), !body.hasSuffix("_"),
              !body.contains("__") else { return nil }
        let digits = body.replacingOccurrences(of: "_", with: "")
        guard let magnitude = Int(digits, radix: radix), digits.allSatisfy({ $0 != "+" && $0 != "-" }) else { return nil }
        return negative ? -magnitude : magnitude
    }

    /// Python `float(text)`.
    static func parsePythonFloat(_ text: String) -> Double? {
        var body = strip(text, characters: nil, leading: true, trailing: true).lowercased()
        var sign = 1.0
        if body.hasPrefix("-") || body.hasPrefix("+") {
            sign = body.hasPrefix("-") ? -1 : 1
            body.removeFirst()
        }
        switch body {
        case "inf", "infinity": return sign * .infinity
        case "nan": return .nan
        default: break
        }
        guard !body.isEmpty, !body.hasPrefix("_"), !body.hasSuffix("_"), !body.contains("__") else { return nil }
        let cleaned = body.replacingOccurrences(of: "_", with: "")
        guard cleaned.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "." || $0 == "e" || $0 == "+" || $0 == "-") }),
              cleaned.contains(where: { $0.isNumber }),
              let value = Double(cleaned) else { return nil }
        return sign * value
    }
}
