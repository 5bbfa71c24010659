import Foundation

// MARK: - Filter and test names

/// The Jinja filters this interpreter implements.
enum FilterName: String, Sendable, CaseIterable {
    case abs, capitalize, center, `default`, dictsort, escape, first, float, format, indent, int,
         items, join, last, length, list, lower, map, max, min, reject, rejectattr, replace,
         reverse, round, safe, select, selectattr, sort, string, sum, title, tojson, trim,
         unique, upper, wordcount

    init?(jinjaName: String) {
        switch jinjaName {
        case "d": self = .default
        case "e": self = .escape
        case "count": self = .length
        default: self.init(rawValue: jinjaName)
        }
    }

    /// Built-in Jinja filters that are not implemented (using one is an `.unsupported` error).
    static let unsupportedNames: Set<String> = [
        "attr", "batch", "filesizeformat", "forceescape", "groupby", "pprint", "random", "slice",
        "striptags", "truncate", "urlencode", "urlize", "wordwrap", "xmlattr",
    ]
}

/// The Jinja tests (`x is …`).
enum TestName: String, Sendable {
    case boolean, callable, defined, divisibleby, equal, escaped, even, `false`, filter, float,
         greaterOrEqual, greater, `in`, integer, iterable, lessOrEqual, lower, less, mapping,
         notEqual, none, number, odd, sameas, sequence, string, test, `true`, undefined, upper

    init?(jinjaName: String) {
        switch jinjaName {
        case "boolean": self = .boolean
        case "callable": self = .callable
        case "defined": self = .defined
        case "divisibleby": self = .divisibleby
        case "eq", "equalto", "==": self = .equal
        case "escaped": self = .escaped
        case "even": self = .even
        case "false": self = .false
        case "filter": self = .filter
        case "float": self = .float
        case "ge", ">=": self = .greaterOrEqual
        case "gt", "greaterthan", ">": self = .greater
        case "in": self = .in
        case "integer": self = .integer
        case "iterable": self = .iterable
        case "le", "<=": self = .lessOrEqual
        case "lower": self = .lower
        case "lt", "lessthan", "<": self = .less
        case "mapping": self = .mapping
        case "ne", "!=": self = .notEqual
        case "none": self = .none
        case "number": self = .number
        case "odd": self = .odd
        case "sameas": self = .sameas
        case "sequence": self = .sequence
        case "string": self = .string
        case "test": self = .test
        case "true": self = .true
        case "undefined": self = .undefined
        case "upper": self = .upper
        default: return nil
        }
    }
}

// MARK: - Filters

extension Renderer {
    func applyFilter(
        _ filter: Callable<FilterName>, to value: RuntimeValue, arguments: CallArguments,
        in scope: Scope, at location: SourceLocation
    ) throws(ChatTemplateError) -> RuntimeValue {
        switch filter {
        case .missing(let name):
            throw .runtime("No filter named '\(name)' found.", at: location)
        case .unsupported(let name):
            throw .unsupported("the '\(name)' filter", at: location)
        case .known(let name):
            let evaluated = try evaluateArguments(arguments, in: scope, at: location)
            return try applyFilter(name, to: value, arguments: evaluated, at: location)
        }
    }

    private func filterArguments(
        _ arguments: Arguments, _ names: [String], filter: FilterName, at location: SourceLocation
    ) throws(ChatTemplateError) -> [RuntimeValue?] {
        try bind(arguments, names: names, function: filter.rawValue, at: location)
    }

    /// Jinja's `soft_str`: `str(value)`, with Undefined as "".
    private func text(_ value: RuntimeValue, at location: SourceLocation) throws(ChatTemplateError) -> String {
        try stringify(value, at: location)
    }

    func applyFilter(_ filter: FilterName, to value: RuntimeValue, arguments: Arguments, at location: SourceLocation) throws(ChatTemplateError) -> RuntimeValue {
        switch filter {
        case .abs:
            _ = try filterArguments(arguments, [], filter: filter, at: location)
            if case .undefined(let undefined) = value { throw undefined.error(at: location) }
            switch value.numericValue {
            case .integer(let number)?:
                guard number != Int.min else { throw .runtime("integer overflow", at: location) }
                return .integer(Swift.abs(number))
            case .double(let number)?:
                return .double(Swift.abs(number))
            case nil:
                throw .runtime("bad operand type for abs(): '\(value.typeName)'", at: location)
            }
        case .capitalize:
            _ = try filterArguments(arguments, [], filter: filter, at: location)
            return .string(Text.capitalize(try text(value, at: location)))
        case .center:
            let bound = try filterArguments(arguments, ["width"], filter: filter, at: location)
            let width = try integerArgument(bound[0], default: 80, name: "width", at: location)
            if width > limits.maximumOutputLength {
                throw .limit("a string grew beyond \(limits.maximumOutputLength) bytes", at: location)
            }
            return .string(try checked(Text.center(try text(value, at: location), width: width), at: location))
        case .default:
            let bound = try filterArguments(arguments, ["default_value", "boolean"], filter: filter, at: location)
            let useBoolean = bound[1]?.isTruthy ?? false
            if value.isUndefined || (useBoolean && !value.isTruthy) {
                return bound[0] ?? .string("")
            }
            return value
        case .dictsort:
            let bound = try filterArguments(arguments, ["case_sensitive", "by", "reverse"], filter: filter, at: location)
            guard case .dictionary(let dictionary) = value else {
                if case .undefined(let undefined) = value { throw undefined.error(at: location) }
                throw .runtime("You can only sort by either 'key' or 'value'", at: location)
            }
            let caseSensitive = bound[0]?.isTruthy ?? false
            var byValue = false
            if let by = bound[1] {
                switch by.pythonString() {
                case "key": byValue = false
                case "value": byValue = true
                default: throw .runtime("You can only sort by either 'key' or 'value'", at: location)
                }
            }
            let pairs: [RuntimeValue] = dictionary.entries.map { .tuple([$0.0, $0.1]) }
            let sorted = try sortValues(pairs, reverse: bound[2]?.isTruthy ?? false, at: location) { pair in
                guard case .tuple(let parts) = pair else { return pair }
                let key = parts[byValue ? 1 : 0]
                return caseSensitive ? key : Self.caseFolded(key)
            }
            return .list(sorted)
        case .escape:
            _ = try filterArguments(arguments, [], filter: filter, at: location)
            return .string(try checked(Text.escapeHTML(try text(value, at: location)), at: location))
        case .first:
            _ = try filterArguments(arguments, [], filter: filter, at: location)
            let items = try iterate(value, at: location)
            return items.first ?? .undefined(Undefined(reason: .hint("No first item, sequence was empty.")))
        case .last:
            _ = try filterArguments(arguments, [], filter: filter, at: location)
            let items = try iterate(value, at: location)
            return items.last ?? .undefined(Undefined(reason: .hint("No last item, sequence was empty.")))
        case .float:
            let bound = try filterArguments(arguments, ["default"], filter: filter, at: location)
            if case .undefined(let undefined) = value { throw undefined.error(at: location) }
            switch value {
            case .boolean, .integer, .double:
                return .double(value.numericValue?.doubleValue ?? 0)
            case .string(let string):
                if let parsed = Text.parsePythonFloat(string) { return .double(parsed) }
            default:
                break
            }
            return bound[0] ?? .double(0)
        case .format:
            if !arguments.positional.isEmpty && !arguments.keyword.isEmpty {
                throw .runtime("can't handle positional and keyword arguments at the same time", at: location)
            }
            var formatArguments: RuntimeValue = .tuple(arguments.positional)
            if !arguments.keyword.isEmpty {
                var dictionary = Dictionary()
                for (name, item) in arguments.keyword { dictionary.set(name, item) }
                formatArguments = .dictionary(dictionary)
            }
            return .string(try checked(try percentFormat(try text(value, at: location), formatArguments, at: location), at: location))
        case .indent:
            let bound = try filterArguments(arguments, ["width", "first", "blank"], filter: filter, at: location)
            let indentation: String
            if case .string(let custom)? = bound[0] {
                indentation = custom
            } else {
                let width = try integerArgument(bound[0], default: 4, name: "width", at: location)
                indentation = String(repeating: " ", count: max(0, min(width, limits.maximumOutputLength)))
            }
            let source = try text(value, at: location)
            var lineCount = 1
            for scalar in source.unicodeScalars where scalar == "\n" || scalar == "\r" { lineCount += 1 }
            let growth = indentation.utf8.count.multipliedReportingOverflow(by: lineCount)
            if growth.overflow || growth.partialValue + source.utf8.count > limits.maximumOutputLength {
                throw .limit("a string grew beyond \(limits.maximumOutputLength) bytes", at: location)
            }
            let result = Text.indent(source, indentation: indentation,
                                      first: bound[1]?.isTruthy ?? false, blank: bound[2]?.isTruthy ?? false)
            return .string(try checked(result, at: location))
        case .int:
            let bound = try filterArguments(arguments, ["default", "base"], filter: filter, at: location)
            let base = try integerArgument(bound[1], default: 10, name: "base", at: location)
            if case .undefined(let undefined) = value { throw undefined.error(at: location) }
            switch value {
            case .boolean, .integer:
                return .integer(value.integerIndex ?? 0)
            case .double(let number):
                if number.isFinite, let truncated = Int(exactly: number.rounded(.towardZero)) { return .integer(truncated) }
            case .string(let string):
                if let parsed = Text.parsePythonInteger(string, base: base) { return .integer(parsed) }
                if let parsed = Text.parsePythonFloat(string), parsed.isFinite,
                   let truncated = Int(exactly: parsed.rounded(.towardZero)) {
                    return .integer(truncated)
                }
            default:
                break
            }
            return bound[0] ?? .integer(0)
        case .items:
            _ = try filterArguments(arguments, [], filter: filter, at: location)
            switch value {
            case .undefined: return .list([])
            case .dictionary(let dictionary): return .list(dictionary.entries.map { .tuple([$0.0, $0.1]) })
            default: throw .runtime("Can only get item pairs from a mapping.", at: location)
            }
        case .join:
            let bound = try filterArguments(arguments, ["d", "attribute"], filter: filter, at: location)
            let separator = try bound[0].map { value throws(ChatTemplateError) in try text(value, at: location) } ?? ""
            var items = try iterate(value, at: location)
            if let attribute = bound[1] {
                items = try items.map { item throws(ChatTemplateError) in try attributePath(attribute, of: item, at: location) }
            }
            var pieces: [String] = []
            pieces.reserveCapacity(items.count)
            for item in items { pieces.append(try text(item, at: location)) }
            return .string(try checked(try joined(pieces, separator: separator, at: location), at: location))
        case .length:
            _ = try filterArguments(arguments, [], filter: filter, at: location)
            return .integer(try length(of: value, at: location))
        case .list:
            _ = try filterArguments(arguments, [], filter: filter, at: location)
            return .list(try iterate(value, at: location))
        case .lower:
            _ = try filterArguments(arguments, [], filter: filter, at: location)
            return .string(try text(value, at: location).lowercased())
        case .upper:
            _ = try filterArguments(arguments, [], filter: filter, at: location)
            return .string(try text(value, at: location).uppercased())
        case .map:
            return .list(try mapValues(value, arguments, at: location))
        case .max, .min:
            let bound = try filterArguments(arguments, ["case_sensitive", "attribute"], filter: filter, at: location)
            let caseSensitive = bound[0]?.isTruthy ?? false
            let items = try iterate(value, at: location)
            guard var best = items.first else {
                return .undefined(Undefined(reason: .hint("No aggregated item, sequence was empty.")))
            }
            var bestKey = try sortKey(best, attribute: bound[1], caseSensitive: caseSensitive, at: location)
            for item in items.dropFirst() {
                let key = try sortKey(item, attribute: bound[1], caseSensitive: caseSensitive, at: location)
                guard let less = RuntimeValue.pythonLess(key, bestKey) else {
                    throw .runtime("'<' not supported between instances of '\(key.typeName)' and '\(bestKey.typeName)'", at: location)
                }
                let better: Bool
                if filter == .min {
                    better = less
                } else if let greater = RuntimeValue.pythonLess(bestKey, key) {
                    better = greater
                } else {
                    better = false
                }
                if better {
                    best = item
                    bestKey = key
                }
            }
            return best
        case .reject, .select:
            let items = try iterate(value, at: location)
            var kept: [RuntimeValue] = []
            var testArguments = arguments
            let testName = testArguments.positional.isEmpty ? nil : testArguments.positional.removeFirst()
            for item in items {
                let passed: Bool
                if let testName {
                    passed = try applyTest(named: testName, to: item, arguments: testArguments, at: location)
                } else {
                    passed = item.isTruthy
                }
                if passed == (filter == .select) { kept.append(item) }
            }
            return .list(kept)
        case .rejectattr, .selectattr:
            let items = try iterate(value, at: location)
            var testArguments = arguments
            guard !testArguments.positional.isEmpty else {
                throw .runtime("\(filter.rawValue)() missing the attribute argument", at: location)
            }
            let attribute = testArguments.positional.removeFirst()
            let testName = testArguments.positional.isEmpty ? nil : testArguments.positional.removeFirst()
            var kept: [RuntimeValue] = []
            for item in items {
                let field = try attributePath(attribute, of: item, at: location)
                let passed: Bool
                if let testName {
                    passed = try applyTest(named: testName, to: field, arguments: testArguments, at: location)
                } else {
                    passed = field.isTruthy
                }
                if passed == (filter == .selectattr) { kept.append(item) }
            }
            return .list(kept)
        case .replace:
            let bound = try filterArguments(arguments, ["old", "new", "count"], filter: filter, at: location)
            guard let old = bound[0], let new = bound[1] else {
                throw .runtime("replace() missing required arguments 'old' and 'new'", at: location)
            }
            let count = try integerArgument(bound[2], default: -1, name: "count", at: location)
            guard let replaced = Text.replace(
                try text(value, at: location), try text(old, at: location), try text(new, at: location),
                count: count, maximumLength: limits.maximumOutputLength) else {
                throw .limit("a string grew beyond \(limits.maximumOutputLength) bytes", at: location)
            }
            return .string(try checked(replaced, at: location))
        case .reverse:
            _ = try filterArguments(arguments, [], filter: filter, at: location)
            if case .string(let string) = value {
                var view = String.UnicodeScalarView()
                view.append(contentsOf: string.unicodeScalars.reversed())
                return .string(String(view))
            }
            if case .undefined(let undefined) = value { throw undefined.error(at: location) }
            return .list(try iterate(value, at: location).reversed())
        case .round:
            let bound = try filterArguments(arguments, ["precision", "method"], filter: filter, at: location)
            let precision = try integerArgument(bound[0], default: 0, name: "precision", at: location)
            let method = try bound[1].map { value throws(ChatTemplateError) in try text(value, at: location) } ?? "common"
            guard ["common", "ceil", "floor"].contains(method) else {
                throw .runtime("method must be common, ceil or floor", at: location)
            }
            if case .undefined(let undefined) = value { throw undefined.error(at: location) }
            guard let number = value.numericValue else {
                throw .runtime("type \(value.typeName) doesn't define __round__ method", at: location)
            }
            let scale = Foundation.pow(10.0, Double(precision))
            if method == "common" {
                if case .integer(let integer) = number, precision >= 0 { return .integer(integer) }
                let double = number.doubleValue
                guard double.isFinite else { return .double(double) }
                if precision < 0 {
                    let factor = Foundation.pow(10.0, Double(-precision))
                    return .double((double / factor).rounded(.toNearestOrEven) * factor)
                }
                // Python rounds the exact binary value half-to-even, like C's printf.
                return .double(Double(String(format: "%.\(min(precision, 400))f", double)) ?? double)
            }
            let scaled = number.doubleValue * scale
            return .double((method == "ceil" ? scaled.rounded(.up) : scaled.rounded(.down)) / scale)
        case .safe:
            _ = try filterArguments(arguments, [], filter: filter, at: location)
            return value
        case .sort:
            let bound = try filterArguments(arguments, ["reverse", "case_sensitive", "attribute"], filter: filter, at: location)
            let caseSensitive = bound[1]?.isTruthy ?? false
            let items = try iterate(value, at: location)
            let attribute = bound[2]
            var keys: [RuntimeValue] = []
            for item in items { keys.append(try sortKey(item, attribute: attribute, caseSensitive: caseSensitive, at: location)) }
            let order = try stableOrder(keys, reverse: bound[0]?.isTruthy ?? false, at: location)
            return .list(order.map { items[$0] })
        case .string:
            _ = try filterArguments(arguments, [], filter: filter, at: location)
            if case .string = value { return value }
            return .string(try checked(try text(value, at: location), at: location))
        case .sum:
            let bound = try filterArguments(arguments, ["attribute", "start"], filter: filter, at: location)
            var total = bound[1] ?? .integer(0)
            for item in try iterate(value, at: location) {
                let addend = try bound[0].map { attribute throws(ChatTemplateError) in try attributePath(attribute, of: item, at: location) } ?? item
                total = try binary(.add, total, addend, at: location)
            }
            return total
        case .title:
            _ = try filterArguments(arguments, [], filter: filter, at: location)
            return .string(Text.jinjaTitle(try text(value, at: location)))
        case .tojson:
            let bound = try filterArguments(arguments, ["ensure_ascii", "indent", "separators", "sort_keys"], filter: filter, at: location)
            var options = PythonJSON.Options()
            options.ensureASCII = bound[0]?.isTruthy ?? false
            options.sortKeys = bound[3]?.isTruthy ?? false
            switch bound[1] {
            case nil, .none?:
                options.indent = nil
            case .string(let indentation)?:
                options.indent = indentation
            case let indentValue?:
                let width = try integerArgument(indentValue, default: 0, name: "indent", at: location)
                options.indent = String(repeating: " ", count: max(0, min(width, 256)))
            }
            if let separators = bound[2], !separators.isUndefined, !separators.isNone {
                let parts = try iterate(separators, at: location)
                guard parts.count == 2, case .string(let item) = parts[0], case .string(let key) = parts[1] else {
                    throw .runtime("separators must be a pair of strings", at: location)
                }
                options.itemSeparator = item
                options.keySeparator = key
            } else if options.indent != nil {
                options.itemSeparator = ","
            }
            let encoded: String
            do {
                options.maximumLength = limits.maximumOutputLength
                encoded = try PythonJSON.encode(value, options: options)
            } catch {
                throw error.isLimit ? .limit(error.message, at: location) : .runtime(error.message, at: location)
            }
            return .string(try checked(encoded, at: location))
        case .trim:
            let bound = try filterArguments(arguments, ["chars"], filter: filter, at: location)
            var characters: String?
            if let chars = bound[0], case .string(let set) = chars { characters = set }
            return .string(Text.strip(try text(value, at: location), characters: characters, leading: true, trailing: true))
        case .unique:
            let bound = try filterArguments(arguments, ["case_sensitive", "attribute"], filter: filter, at: location)
            let caseSensitive = bound[0]?.isTruthy ?? false
            var seen = Dictionary()
            var result: [RuntimeValue] = []
            for item in try iterate(value, at: location) {
                let key = try sortKey(item, attribute: bound[1], caseSensitive: caseSensitive, at: location)
                if seen.value(for: key) == nil {
                    guard seen.set(key, .none) else {
                        throw .runtime("unhashable type: '\(key.typeName)'", at: location)
                    }
                    result.append(item)
                }
            }
            return .list(result)
        case .wordcount:
            _ = try filterArguments(arguments, [], filter: filter, at: location)
            return .integer(Text.wordCount(try text(value, at: location)))
        }
    }

    // MARK: Filter helpers

    private func integerArgument(_ value: RuntimeValue?, default defaultValue: Int, name: String, at location: SourceLocation) throws(ChatTemplateError) -> Int {
        guard let value else { return defaultValue }
        if case .none = value { return defaultValue }
        guard let integer = value.integerIndex else {
            throw .runtime("'\(value.typeName)' object cannot be interpreted as an integer (argument '\(name)')", at: location)
        }
        return integer
    }

    func length(of value: RuntimeValue, at location: SourceLocation) throws(ChatTemplateError) -> Int {
        switch value {
        case .undefined: return 0
        case .string(let string): return string.unicodeScalars.count
        case .list(let items), .tuple(let items): return items.count
        case .dictionary(let dictionary): return dictionary.count
        case .namespace(let namespace): return namespace.attributes.count
        case .loop(let loop): return loop.length
        default: throw .runtime("object of type '\(value.typeName)' has no len()", at: location)
        }
    }

    static func caseFolded(_ value: RuntimeValue) -> RuntimeValue {
        if case .string(let string) = value { return .string(string.lowercased()) }
        return value
    }

    /// Jinja's `make_attrgetter`: a dotted path where numeric parts are indexes.
    func attributePath(_ path: RuntimeValue, of item: RuntimeValue, at location: SourceLocation) throws(ChatTemplateError) -> RuntimeValue {
        guard case .string(let string) = path else {
            return try self.item(path, of: item, at: location)
        }
        var current = item
        for part in string.split(separator: ".", omittingEmptySubsequences: false) {
            let key: RuntimeValue = Int(part).map { .integer($0) } ?? .string(String(part))
            current = try self.item(key, of: current, at: location)
        }
        return current
    }

    private func sortKey(_ item: RuntimeValue, attribute: RuntimeValue?, caseSensitive: Bool, at location: SourceLocation) throws(ChatTemplateError) -> RuntimeValue {
        var key = item
        if let attribute, !attribute.isUndefined, !attribute.isNone {
            key = try attributePath(attribute, of: item, at: location)
        }
        return caseSensitive ? key : Self.caseFolded(key)
    }

    /// A stable sort order of `keys` using Python comparisons (merge sort, typed throws).
    func stableOrder(_ keys: [RuntimeValue], reverse: Bool, at location: SourceLocation) throws(ChatTemplateError) -> [Int] {
        var order = Array(keys.indices)
        var buffer = order
        func precedes(_ a: Int, _ b: Int) throws(ChatTemplateError) -> Bool {
            // Python's sort with reverse=True keeps stability by reversing, sorting, reversing.
            let (left, right) = reverse ? (keys[b], keys[a]) : (keys[a], keys[b])
            guard let less = RuntimeValue.pythonLess(left, right) else {
                throw .runtime("'<' not supported between instances of '\(left.typeName)' and '\(right.typeName)'", at: location)
            }
            return less
        }
        var width = 1
        while width < order.count {
            var start = 0
            while start < order.count {
                let middle = min(start + width, order.count)
                let end = min(start + 2 * width, order.count)
                var i = start, j = middle, k = start
                while i < middle && j < end {
                    if try precedes(order[j], order[i]) {
                        buffer[k] = order[j]; j += 1
                    } else {
                        buffer[k] = order[i]; i += 1
                    }
                    k += 1
                }
                while i < middle { buffer[k] = order[i]; i += 1; k += 1 }
                while j < end { buffer[k] = order[j]; j += 1; k += 1 }
                start += 2 * width
            }
            swap(&order, &buffer)
            width *= 2
        }
        return order
    }

    private func sortValues(_ values: [RuntimeValue], reverse: Bool, at location: SourceLocation, key: (RuntimeValue) -> RuntimeValue) throws(ChatTemplateError) -> [RuntimeValue] {
        let order = try stableOrder(values.map(key), reverse: reverse, at: location)
        return order.map { values[$0] }
    }

    private func mapValues(_ value: RuntimeValue, _ arguments: Arguments, at location: SourceLocation) throws(ChatTemplateError) -> [RuntimeValue] {
        let items = try iterate(value, at: location)
        if let attribute = arguments.keyword.first(where: { $0.name == "attribute" })?.value {
            let defaultValue = arguments.keyword.first(where: { $0.name == "default" })?.value
            var result: [RuntimeValue] = []
            for item in items {
                var field = try attributePath(attribute, of: item, at: location)
                if field.isUndefined, let defaultValue { field = defaultValue }
                result.append(field)
            }
            return result
        }
        var rest = arguments
        guard !rest.positional.isEmpty else {
            throw .runtime("map requires a filter argument", at: location)
        }
        let nameValue = rest.positional.removeFirst()
        guard case .string(let name) = nameValue, let filter = FilterName(jinjaName: name) else {
            if FilterName.unsupportedNames.contains(nameValue.pythonString()) {
                throw .unsupported("the '\(nameValue.pythonString())' filter", at: location)
            }
            throw .runtime("No filter named \(nameValue.pythonRepr()).", at: location)
        }
        var result: [RuntimeValue] = []
        for item in items {
            result.append(try applyFilter(filter, to: item, arguments: rest, at: location))
        }
        return result
    }

    // MARK: Tests

    func applyTest(
        _ test: Callable<TestName>, to value: RuntimeValue, arguments: CallArguments,
        in scope: Scope, at location: SourceLocation
    ) throws(ChatTemplateError) -> Bool {
        switch test {
        case .missing(let name), .unsupported(let name):
            throw .runtime("No test named '\(name)' found.", at: location)
        case .known(let name):
            let evaluated = try evaluateArguments(arguments, in: scope, at: location)
            return try applyTest(name, to: value, arguments: evaluated, at: location)
        }
    }

    private func applyTest(named name: RuntimeValue, to value: RuntimeValue, arguments: Arguments, at location: SourceLocation) throws(ChatTemplateError) -> Bool {
        guard case .string(let string) = name, let test = TestName(jinjaName: string) else {
            throw .runtime("No test named \(name.pythonRepr()).", at: location)
        }
        return try applyTest(test, to: value, arguments: arguments, at: location)
    }

    func applyTest(_ test: TestName, to value: RuntimeValue, arguments: Arguments, at location: SourceLocation) throws(ChatTemplateError) -> Bool {
        func argument() throws(ChatTemplateError) -> RuntimeValue {
            if let first = arguments.positional.first { return first }
            if let first = arguments.keyword.first { return first.value }
            throw .runtime("the '\(test.rawValue)' test needs an argument", at: location)
        }
        switch test {
        case .boolean:
            if case .boolean = value { return true }
            return false
        case .callable:
            switch value {
            case .macro, .builtin, .method: return true
            default: return false
            }
        case .defined:
            return !value.isUndefined
        case .undefined:
            return value.isUndefined
        case .divisibleby:
            let divisor = try argument()
            let remainder = try binary(.modulo, value, divisor, at: location)
            return RuntimeValue.pythonEquals(remainder, .integer(0))
        case .equal:
            return RuntimeValue.pythonEquals(value, try argument())
        case .notEqual:
            return !RuntimeValue.pythonEquals(value, try argument())
        case .escaped:
            return false
        case .even, .odd:
            let remainder = try binary(.modulo, value, .integer(2), at: location)
            return RuntimeValue.pythonEquals(remainder, .integer(test == .even ? 0 : 1))
        case .false:
            if case .boolean(false) = value { return true }
            return false
        case .true:
            if case .boolean(true) = value { return true }
            return false
        case .filter:
            guard case .string(let name) = value else { return false }
            return FilterName(jinjaName: name) != nil || FilterName.unsupportedNames.contains(name)
        case .test:
            guard case .string(let name) = value else { return false }
            return TestName(jinjaName: name) != nil
        case .float:
            if case .double = value { return true }
            return false
        case .integer:
            if case .integer = value { return true }
            return false
        case .number:
            return value.numericValue != nil
        case .string:
            if case .string = value { return true }
            return false
        case .mapping:
            if case .dictionary = value { return true }
            return false
        case .none:
            if case .none = value { return true }
            return false
        case .iterable:
            switch value {
            case .undefined, .string, .list, .tuple, .dictionary, .loop: return true
            default: return false
            }
        case .sequence:
            switch value {
            case .undefined, .string, .list, .tuple, .dictionary: return true
            default: return false
            }
        case .in:
            return try contains(try argument(), value, at: location)
        case .greater, .greaterOrEqual, .less, .lessOrEqual:
            let other = try argument()
            let (a, b) = test == .less || test == .lessOrEqual ? (value, other) : (other, value)
            if case .undefined(let undefined) = a { throw undefined.error(at: location) }
            if case .undefined(let undefined) = b { throw undefined.error(at: location) }
            guard let less = RuntimeValue.pythonLess(a, b) else {
                throw .runtime("comparison not supported between instances of '\(value.typeName)' and '\(other.typeName)'", at: location)
            }
            if test == .less || test == .greater { return less }
            return less || RuntimeValue.pythonEquals(a, b)
        case .lower:
            return Text.isLower(value.pythonString())
        case .upper:
            return Text.isUpper(value.pythonString())
        case .sameas:
            let other = try argument()
            switch (value, other) {
            case (.none, .none): return true
            case let (.boolean(a), .boolean(b)): return a == b
            case let (.integer(a), .integer(b)): return a == b && a >= -5 && a <= 256
            case let (.namespace(a), .namespace(b)): return a === b
            default: return false
            }
        }
    }
}

