import Foundation

// MARK: - Runtime values

/// Why a value is undefined; reproduces Jinja's `UndefinedError` messages.
struct Undefined {
    enum Reason {
        /// A variable that does not exist: `'name' is undefined`.
        case name(String)
        /// A missing attribute: `'dict object' has no attribute 'role'`.
        case attribute(owner: String, name: String)
        /// A missing element: `list object has no element 5`.
        case element(owner: String, key: String)
        /// A custom hint (e.g. "No first item, sequence was empty.").
        case hint(String)
        /// An attribute the immutable sandbox forbids (`list.append`): using it is a `SecurityError`.
        case unsafe(String)
        /// `TemplateValue.undefined` passed in by the caller.
        case plain
    }

    var reason: Reason

    var message: String {
        switch reason {
        case .name(let name):
            return "\(RuntimeValue.pythonRepr(name)) is undefined"
        case let .attribute(owner, name):
            return "\(RuntimeValue.pythonRepr(owner)) has no attribute \(RuntimeValue.pythonRepr(name))"
        case let .element(owner, key):
            return "\(owner) has no element \(key)"
        case .hint(let hint), .unsafe(let hint):
            return hint
        case .plain:
            return "value is undefined"
        }
    }

    func error(at location: SourceLocation) -> ChatTemplateError {
        if case .unsafe(let message) = reason {
            return .sandboxViolation(message: message, line: location.line, column: location.column)
        }
        return .undefinedValue(message: message, line: location.line, column: location.column)
    }
}

/// A key of a Python dict, normalized the way Python hashes (`1 == 1.0 == True`).
enum HashKey: Hashable {
    case none
    case integer(Int)
    case double(Double)
    /// UTF-8 bytes: Python compares strings by code point, not by canonical equivalence.
    case string([UInt8])
    case tuple([HashKey])
}

/// An insertion-ordered Python dict.
struct Dictionary {
    private(set) var keys: [RuntimeValue] = []
    private(set) var values: [RuntimeValue] = []
    private var positions: [HashKey: Int] = [:]

    var count: Int { keys.count }

    static func hashKey(_ key: RuntimeValue, depth: Int = 0) -> HashKey? {
        switch key {
        case .none: return HashKey.none
        case .boolean(let value): return .integer(value ? 1 : 0)
        case .integer(let value): return .integer(value)
        case .double(let value):
            if value.rounded() == value, let exact = Int(exactly: value) { return .integer(exact) }
            return .double(value)
        case .string(let value): return .string(Array(value.utf8))
        case .tuple(let items):
            guard depth < RuntimeValue.maximumDataDepth else { return nil }
            var keys: [HashKey] = []
            for item in items {
                guard let key = hashKey(item, depth: depth + 1) else { return nil }
                keys.append(key)
            }
            return .tuple(keys)
        default:
            return nil
        }
    }

    /// Stores `value` under `key`; returns false if the key is unhashable (a list or dict).
    @discardableResult
    mutating func set(_ key: RuntimeValue, _ value: RuntimeValue) -> Bool {
        guard let hash = Self.hashKey(key) else { return false }
        if let position = positions[hash] {
            values[position] = value
        } else {
            positions[hash] = keys.count
            keys.append(key)
            values.append(value)
        }
        return true
    }

    mutating func set(_ key: String, _ value: RuntimeValue) {
        set(.string(key), value)
    }

    func value(for key: RuntimeValue) -> RuntimeValue? {
        guard let hash = Self.hashKey(key), let position = positions[hash] else { return nil }
        return values[position]
    }

    func value(for key: String) -> RuntimeValue? {
        guard let position = positions[.string(Array(key.utf8))] else { return nil }
        return values[position]
    }

    var entries: Zip2Sequence<[RuntimeValue], [RuntimeValue]> { zip(keys, values) }
}

/// The mutable object returned by `namespace()`.
final class Namespace {
    var attributes = Dictionary()
}

/// A macro value: its definition and the scope it was defined in.
struct TemplateMacro {
    let definition: MacroDefinition
    let scope: Scope
}

/// The `loop` variable of a `for` loop.
final class LoopState {
    let items: [RuntimeValue]
    var index0 = 0
    var lastChanged: [RuntimeValue]?

    init(items: [RuntimeValue]) { self.items = items }

    var length: Int { items.count }
}

/// A global function.
enum Builtin {
    case range
    case dictionary
    case namespace
    case raiseException
    case strftimeNow
    case unsupported(String)

    var name: String {
        switch self {
        case .range: return "range"
        case .dictionary: return "dict"
        case .namespace: return "namespace"
        case .raiseException: return "raise_exception"
        case .strftimeNow: return "strftime_now"
        case .unsupported(let name): return name
        }
    }
}

indirect enum RuntimeValue {
    case undefined(Undefined)
    case none
    case boolean(Bool)
    case integer(Int)
    case double(Double)
    case string(String)
    case list([RuntimeValue])
    case tuple([RuntimeValue])
    case dictionary(Dictionary)
    case namespace(Namespace)
    case macro(TemplateMacro)
    case builtin(Builtin)
    /// A method looked up on a value (`text.strip`, `message.items`, `loop.cycle`).
    case method(RuntimeValue, String)
    case loop(LoopState)

    /// Deepest nesting of lists/dicts that printing, `tojson` and comparisons will walk.
    static let maximumDataDepth = 256

    static func undefinedName(_ name: String) -> RuntimeValue { .undefined(Undefined(reason: .name(name))) }

    // MARK: Bridging

    init(_ value: TemplateValue, depth: Int) {
        if depth > Self.maximumDataDepth {
            self = .undefined(Undefined(reason: .hint("value nested deeper than \(Self.maximumDataDepth) levels")))
            return
        }
        switch value {
        case .undefined: self = .undefined(Undefined(reason: .plain))
        case .none: self = .none
        case .boolean(let value): self = .boolean(value)
        case .integer(let value): self = .integer(value)
        case .double(let value): self = .double(value)
        case .string(let value): self = .string(value)
        case .array(let items): self = .list(items.map { RuntimeValue($0, depth: depth + 1) })
        case .object(let entries):
            var dictionary = Dictionary()
            for entry in entries {
                dictionary.set(entry.key, RuntimeValue(entry.value, depth: depth + 1))
            }
            self = .dictionary(dictionary)
        }
    }

    // MARK: Python semantics

    /// Python truthiness.
    var isTruthy: Bool {
        switch self {
        case .undefined, .none: return false
        case .boolean(let value): return value
        case .integer(let value): return value != 0
        case .double(let value): return value != 0
        case .string(let value): return !value.isEmpty
        case .list(let items), .tuple(let items): return !items.isEmpty
        case .dictionary(let dictionary): return dictionary.count > 0
        case .namespace, .macro, .builtin, .method, .loop: return true
        }
    }

    var isUndefined: Bool {
        if case .undefined = self { return true }
        return false
    }

    var isNone: Bool {
        if case .none = self { return true }
        return false
    }

    /// The Python type name used in error messages (`'int' object is not iterable`).
    var typeName: String {
        switch self {
        case .undefined: return "Undefined"
        case .none: return "NoneType"
        case .boolean: return "bool"
        case .integer: return "int"
        case .double: return "float"
        case .string: return "str"
        case .list: return "list"
        case .tuple: return "tuple"
        case .dictionary: return "dict"
        case .namespace: return "Namespace"
        case .macro: return "Macro"
        case .builtin: return "function"
        case .method: return "builtin_function_or_method"
        case .loop: return "LoopContext"
        }
    }

    /// Jinja's `object_type_repr`, used in "has no attribute" messages.
    var objectTypeDescription: String {
        switch self {
        case .none: return "None"
        case .namespace: return "jinja2.utils.Namespace object"
        case .macro: return "jinja2.runtime.Macro object"
        case .loop: return "jinja2.runtime.LoopContext object"
        case .undefined: return "jinja2.runtime.Undefined object"
        default: return "\(typeName) object"
        }
    }

    // MARK: str() and repr()

    /// Python `str(value)` as Jinja prints it (`Undefined` prints as nothing).
    func pythonString() -> String {
        switch self {
        case .undefined: return ""
        case .string(let value): return value
        default: return pythonRepr()
        }
    }

    /// Python `str(value)`, or nil if it would exceed `maximumLength` UTF-8 bytes.
    func pythonString(maximumLength: Int) -> String? {
        switch self {
        case .undefined: return ""
        case .string(let value): return value
        default:
            var output = ""
            return writeRepr(into: &output, depth: 0, maximumLength: maximumLength) ? output : nil
        }
    }

    /// Python `repr(value)` (unbounded; for small values and messages).
    func pythonRepr() -> String {
        var output = ""
        _ = writeRepr(into: &output, depth: 0, maximumLength: Int.max)
        return output
    }

    /// Appends Python `repr(value)`; returns false as soon as the output passes `maximumLength`.
    /// Containers nested deeper than ``maximumDataDepth`` print as `...`.
    func writeRepr(into output: inout String, depth: Int, maximumLength: Int) -> Bool {
        if depth > Self.maximumDataDepth {
            output += "..."
            return true
        }
        switch self {
        case .undefined: output += "Undefined"
        case .none: output += "None"
        case .boolean(let value): output += value ? "True" : "False"
        case .integer(let value): output += String(value)
        case .double(let value): output += Self.pythonFloatRepr(value)
        case .string(let value): output += Self.pythonRepr(value)
        case .list(let items), .tuple(let items):
            let isTuple: Bool
            if case .tuple = self { isTuple = true } else { isTuple = false }
            output += isTuple ? "(" : "["
            for (index, item) in items.enumerated() {
                if index > 0 { output += ", " }
                guard item.writeRepr(into: &output, depth: depth + 1, maximumLength: maximumLength) else { return false }
            }
            if isTuple && items.count == 1 { output += "," }
            output += isTuple ? ")" : "]"
        case .dictionary(let dictionary):
            output += "{"
            for (index, (key, value)) in dictionary.entries.enumerated() {
                if index > 0 { output += ", " }
                guard key.writeRepr(into: &output, depth: depth + 1, maximumLength: maximumLength) else { return false }
                output += ": "
                guard value.writeRepr(into: &output, depth: depth + 1, maximumLength: maximumLength) else { return false }
            }
            output += "}"
        case .namespace(let namespace):
            output += "<Namespace "
            guard RuntimeValue.dictionary(namespace.attributes).writeRepr(into: &output, depth: depth + 1, maximumLength: maximumLength) else {
                return false
            }
            output += ">"
        case .macro(let macro):
            output += "<Macro '\(macro.definition.name)'>"
        case .builtin(let builtin):
            output += "<function \(builtin.name)>"
        case .method(let receiver, let name):
            output += "<built-in method \(name) of \(receiver.typeName) object>"
        case .loop(let loop):
            output += "<LoopContext \(loop.index0 + 1)/\(loop.length)>"
        }
        return output.utf8.count <= maximumLength
    }

    /// Python's `repr()` of a string: single quotes unless the text has a single quote and no
    /// double quote; escapes backslashes, the quote, and non-printable characters.
    static func pythonRepr(_ text: String) -> String {
        let hasSingle = text.unicodeScalars.contains("'")
        let hasDouble = text.unicodeScalars.contains("\"")
        let quote: Unicode.Scalar = hasSingle && !hasDouble ? "\"" : "'"
        var result = String.UnicodeScalarView()
        result.append(quote)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": result.append(contentsOf: "\\\\".unicodeScalars)
            case "\n": result.append(contentsOf: "\\n".unicodeScalars)
            case "\r": result.append(contentsOf: "\\r".unicodeScalars)
            case "\t": result.append(contentsOf: "\\t".unicodeScalars)
            default:
                if scalar == quote {
                    result.append("\\")
                    result.append(scalar)
                } else if isPrintable(scalar) {
                    result.append(scalar)
                } else {
                    let hex = String(scalar.value, radix: 16)
                    let escaped: String
                    if scalar.value < 0x100 {
                        escaped = "\\x" + String(repeating: "0", count: 2 - hex.count) + hex
                    } else if scalar.value < 0x10000 {
                        escaped = "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                    } else {
                        escaped = "\\U" + String(repeating: "0", count: 8 - hex.count) + hex
                    }
                    result.append(contentsOf: escaped.unicodeScalars)
                }
            }
        }
        result.append(quote)
        return String(result)
    }

    /// Python's `str.isprintable()` for one character.
    static func isPrintable(_ scalar: Unicode.Scalar) -> Bool {
        if scalar == " " { return true }
        switch scalar.properties.generalCategory {
        case .control, .format, .surrogate, .privateUse, .unassigned,
             .lineSeparator, .paragraphSeparator, .spaceSeparator:
            return false
        default:
            return true
        }
    }

    /// Python's `repr(float)`: the shortest round-tripping digits, exponent form when the
    /// decimal exponent is below -4 or at least 16.
    static func pythonFloatRepr(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        // Swift's description yields the shortest round-trip digits; normalize the layout.
        let description = "\(value)"
        var mantissa = description
        var exponent = 0
        if let e = description.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            mantissa = String(description[..<e])
            exponent = Int(description[description.index(after: e)...]) ?? 0
        }
        var negative = false
        if mantissa.hasPrefix("-") {
            negative = true
            mantissa.removeFirst()
        }
        var integerPart = mantissa
        var fractionPart = ""
        if let dot = mantissa.firstIndex(of: ".") {
            integerPart = String(mantissa[..<dot])
            fractionPart = String(mantissa[mantissa.index(after: dot)...])
        }
        var digits = integerPart + fractionPart
        var pointPosition = integerPart.count + exponent  // digits before the decimal point
        while digits.count > 1, digits.hasPrefix("0") {
            digits.removeFirst()
            pointPosition -= 1
        }
        while digits.count > 1, digits.hasSuffix("0") {
            digits.removeLast()
        }
        if digits == "0" {
            return negative ? "-0.0" : "0.0"
        }
        let decimalExponent = pointPosition - 1
        var result = negative ? "-" : ""
        if decimalExponent < -4 || decimalExponent >= 16 {
            result += String(digits.prefix(1))
            if digits.count > 1 {
                result += "." + digits.dropFirst()
            }
            let magnitude = abs(decimalExponent)
            result += (decimalExponent < 0 ? "e-" : "e+") + (magnitude < 10 ? "0" : "") + String(magnitude)
        } else if pointPosition <= 0 {
            result += "0." + String(repeating: "0", count: -pointPosition) + digits
        } else if pointPosition >= digits.count {
            result += digits + String(repeating: "0", count: pointPosition - digits.count) + ".0"
        } else {
            let split = digits.index(digits.startIndex, offsetBy: pointPosition)
            result += digits[..<split] + "." + digits[split...]
        }
        return result
    }

    // MARK: Equality and ordering

    /// Python `==`.
    static func pythonEquals(_ left: RuntimeValue, _ right: RuntimeValue, depth: Int = 0) -> Bool {
        if depth > maximumDataDepth { return false }
        switch (left, right) {
        case (.undefined, .undefined), (.none, .none):
            return true
        case let (.string(a), .string(b)):
            return a.utf8.elementsEqual(b.utf8)
        case let (.list(a), .list(b)), let (.tuple(a), .tuple(b)):
            guard a.count == b.count else { return false }
            for (x, y) in zip(a, b) where !pythonEquals(x, y, depth: depth + 1) {
                return false
            }
            return true
        case let (.dictionary(a), .dictionary(b)):
            guard a.count == b.count else { return false }
            for (key, value) in a.entries {
                guard let other = b.value(for: key), pythonEquals(value, other, depth: depth + 1) else { return false }
            }
            return true
        case let (.namespace(a), .namespace(b)):
            return a === b
        case let (.loop(a), .loop(b)):
            return a === b
        case let (.macro(a), .macro(b)):
            return a.definition === b.definition
        default:
            if let a = left.numericValue, let b = right.numericValue {
                switch (a, b) {
                case let (.integer(x), .integer(y)): return x == y
                default: return a.doubleValue == b.doubleValue
                }
            }
            return false
        }
    }

    enum Number {
        case integer(Int)
        case double(Double)

        var doubleValue: Double {
            switch self {
            case .integer(let value): return Double(value)
            case .double(let value): return value
            }
        }
    }

    /// Booleans, integers and floats as Python numbers.
    var numericValue: Number? {
        switch self {
        case .boolean(let value): return .integer(value ? 1 : 0)
        case .integer(let value): return .integer(value)
        case .double(let value): return .double(value)
        default: return nil
        }
    }

    /// Python ordering (`<`); nil when Python raises `TypeError`.
    static func pythonLess(_ left: RuntimeValue, _ right: RuntimeValue, depth: Int = 0) -> Bool? {
        if depth > maximumDataDepth { return nil }
        if let a = left.numericValue, let b = right.numericValue {
            switch (a, b) {
            case let (.integer(x), .integer(y)): return x < y
            default: return a.doubleValue < b.doubleValue
            }
        }
        switch (left, right) {
        case let (.string(a), .string(b)):
            return a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars) { $0.value < $1.value }
        case let (.list(a), .list(b)), let (.tuple(a), .tuple(b)):
            for (x, y) in zip(a, b) where !pythonEquals(x, y, depth: depth + 1) {
                return pythonLess(x, y, depth: depth + 1)
            }
            return a.count < b.count
        default:
            return nil
        }
    }
}
