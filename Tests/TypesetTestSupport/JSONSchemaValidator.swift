import Foundation

/// A small JSON Schema validator, written directly from the specification's validation rules
/// and independent of the grammar compiler: it checks a parsed instance against a schema by
/// recursion, where the compiler builds automata. Tests use it as the oracle for generated
/// values.
///
/// Keywords: `type`, `enum`, `const`, `properties`, `required`, `additionalProperties`,
/// `items`, `prefixItems`, `minItems`, `maxItems`, `minimum`, `maximum`, `exclusiveMinimum`,
/// `exclusiveMaximum`, `multipleOf`, `minLength`, `maxLength`, `pattern`, `format` (date,
/// date-time, uri), `anyOf`, `oneOf`, `allOf`, `not`, `if`/`then`/`else`,
/// `dependentRequired`, `dependentSchemas`, `dependencies`, `minProperties`,
/// `maxProperties`, `patternProperties`, `$ref` to `#/…` pointers and `$defs`.
/// Annotations are ignored. Any other keyword is reported as a failure, so a schema the
/// validator does not understand can never pass silently.
public struct JSONSchemaValidator {
    public let root: Any

    /// - Throws: when `schemaText` is not JSON.
    public init(schemaText: String) throws {
        root = try JSONSerialization.jsonObject(with: Data(schemaText.utf8), options: [.fragmentsAllowed])
    }

    /// The problems of `instanceText` (empty when it validates), as `pointer: message` lines.
    public func problems(in instanceText: String) -> [String] {
        guard let instance = try? JSONSerialization.jsonObject(with: Data(instanceText.utf8), options: [.fragmentsAllowed]) else {
            return ["the instance is not JSON: \(instanceText)"]
        }
        var problems: [String] = []
        validate(instance, against: root, at: "", into: &problems, depth: 0)
        return problems
    }

    private static let annotations: Set<String> = ["title", "description", "$schema", "$id", "default", "examples", "$comment", "$defs", "definitions"]

    private func validate(_ value: Any, against schema: Any, at pointer: String, into problems: inout [String], depth: Int) {
        guard depth < 64 else { problems.append("\(pointer): schema recursion too deep"); return }
        if let flag = schema as? Bool {
            if !flag { problems.append("\(pointer): false schema") }
            return
        }
        guard let schema = schema as? [String: Any] else { problems.append("\(pointer): schema is not an object"); return }
        func fail(_ message: String) { problems.append("\(pointer): \(message)") }
        for (keyword, rule) in schema {
            switch keyword {
            case _ where Self.annotations.contains(keyword): continue
            case "$ref":
                guard let reference = rule as? String, let target = resolve(reference) else { fail("unresolvable $ref \(rule)"); continue }
                validate(value, against: target, at: pointer, into: &problems, depth: depth + 1)
            case "type":
                let names = (rule as? [String]) ?? [(rule as? String) ?? ""]
                if !names.contains(where: { Self.has(value, type: $0) }) { fail("expected type \(names), found \(value)") }
            case "enum":
                if !((rule as? [Any]) ?? []).contains(where: { Self.equal($0, value) }) { fail("\(value) not in enum") }
            case "const":
                if !Self.equal(rule, value) { fail("\(value) is not the constant \(rule)") }
            case "properties":
                guard let object = value as? [String: Any], let properties = rule as? [String: Any] else { continue }
                for (name, subschema) in properties {
                    if let member = object[name] { validate(member, against: subschema, at: pointer + "/" + name, into: &problems, depth: depth + 1) }
                }
            case "required":
                guard let object = value as? [String: Any] else { continue }
                for name in (rule as? [String]) ?? [] where object[name] == nil { fail("missing required property \(name)") }
            case "additionalProperties":
                guard let object = value as? [String: Any] else { continue }
                let declared = Set(((schema["properties"] as? [String: Any]) ?? [:]).keys)
                let patterns = ((schema["patternProperties"] as? [String: Any]) ?? [:]).keys
                for (name, member) in object where !declared.contains(name) && !patterns.contains(where: { Self.search($0, in: name) }) {
                    validate(member, against: rule, at: pointer + "/" + name, into: &problems, depth: depth + 1)
                }
            case "patternProperties":
                guard let object = value as? [String: Any], let patterns = rule as? [String: Any] else { continue }
                for (pattern, subschema) in patterns {
                    for (name, member) in object where Self.search(pattern, in: name) {
                        validate(member, against: subschema, at: pointer + "/" + name, into: &problems, depth: depth + 1)
                    }
                }
            case "items":
                guard let array = value as? [Any] else { continue }
                let skip = ((schema["prefixItems"] as? [Any]) ?? []).count
                for (index, item) in array.enumerated() where index >= skip {
                    validate(item, against: rule, at: pointer + "/\(index)", into: &problems, depth: depth + 1)
                }
            case "prefixItems":
                guard let array = value as? [Any], let prefix = rule as? [Any] else { continue }
                for (index, item) in zip(array, prefix).map({ $0 }).enumerated() {
                    validate(item.0, against: item.1, at: pointer + "/\(index)", into: &problems, depth: depth + 1)
                }
            case "contains":
                guard let array = value as? [Any] else { continue }
                let matching = array.indices.filter { index in
                    var inner: [String] = []
                    validate(array[index], against: rule, at: pointer + "/\(index)", into: &inner, depth: depth + 1)
                    return inner.isEmpty
                }.count
                let least = (schema["minContains"] as? NSNumber)?.intValue ?? 1
                if matching < least { fail("\(matching) items match contains, at least \(least) needed") }
                if let most = (schema["maxContains"] as? NSNumber)?.intValue, matching > most { fail("\(matching) items match contains, at most \(most) allowed") }
            case "minContains", "maxContains":
                continue  // read with `contains`
            case "minItems", "maxItems":
                guard let array = value as? [Any], let bound = (rule as? NSNumber)?.intValue else { continue }
                if keyword == "minItems" ? array.count < bound : array.count > bound { fail("\(array.count) items violates \(keyword) \(bound)") }
            case "minLength", "maxLength":
                guard let string = value as? String, let bound = (rule as? NSNumber)?.intValue else { continue }
                let length = string.unicodeScalars.count
                if keyword == "minLength" ? length < bound : length > bound { fail("length \(length) violates \(keyword) \(bound)") }
            case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
                guard !Self.isBoolean(value), let number = (value as? NSNumber)?.doubleValue, let bound = (rule as? NSNumber)?.doubleValue else { continue }
                let ok: Bool
                switch keyword {
                case "minimum": ok = number >= bound
                case "maximum": ok = number <= bound
                case "exclusiveMinimum": ok = number > bound
                default: ok = number < bound
                }
                if !ok { fail("\(number) violates \(keyword) \(bound)") }
            case "multipleOf":
                guard !Self.isBoolean(value), let number = (value as? NSNumber)?.doubleValue, let factor = (rule as? NSNumber)?.doubleValue else { continue }
                let quotient = number / factor
                if abs(quotient - quotient.rounded()) > 1e-9 { fail("\(number) is not a multiple of \(factor)") }
            case "pattern":
                guard let string = value as? String, let pattern = rule as? String else { continue }
                guard let expression = try? NSRegularExpression(pattern: pattern) else { fail("bad pattern \(pattern)"); continue }
                if expression.firstMatch(in: string, range: NSRange(string.startIndex..., in: string)) == nil { fail("\(string) does not match \(pattern)") }
            case "format":
                guard let string = value as? String, let format = rule as? String else { continue }
                if !Self.matches(string, format: format) { fail("\(string) is not a valid \(format)") }
            case "anyOf", "oneOf", "allOf":
                let alternatives = (rule as? [Any]) ?? []
                // A failure that rests on a keyword the validator does not know says so, as
                // it would outside the combinator (a mutated name inside an alternative).
                var unknown: [String] = []
                let passing = alternatives.filter { alternative in
                    var nested: [String] = []
                    validate(value, against: alternative, at: pointer, into: &nested, depth: depth + 1)
                    unknown += nested.filter { $0.contains("does not know keyword") }
                    return nested.isEmpty
                }.count
                let failed: Bool
                switch keyword {
                case "anyOf": failed = passing == 0; if failed { fail("no anyOf alternative matches") }
                case "oneOf": failed = passing != 1; if failed { fail("\(passing) oneOf alternatives match") }
                default: failed = passing != alternatives.count; if failed { fail("an allOf member fails") }
                }
                if failed { problems += unknown }
            case "not":
                if passes(value, rule, at: pointer, depth: depth) { fail("matches the 'not' schema") }
            case "if":
                let branch = passes(value, rule, at: pointer, depth: depth) ? schema["then"] : schema["else"]
                if let branch { validate(value, against: branch, at: pointer, into: &problems, depth: depth + 1) }
            case "then", "else":
                continue  // read with "if"
            case "dependentRequired", "dependentSchemas", "dependencies":
                guard let object = value as? [String: Any], let entries = rule as? [String: Any] else { continue }
                for (name, dependency) in entries where object[name] != nil {
                    if let names = dependency as? [String] {
                        for other in names where object[other] == nil { fail("\(name) requires \(other)") }
                    } else {
                        validate(value, against: dependency, at: pointer, into: &problems, depth: depth + 1)
                    }
                }
            case "minProperties", "maxProperties":
                guard let object = value as? [String: Any], let bound = (rule as? NSNumber)?.intValue else { continue }
                if keyword == "minProperties" ? object.count < bound : object.count > bound { fail("\(object.count) properties violates \(keyword) \(bound)") }
            default:
                fail("the validator does not know keyword \(keyword)")
            }
        }
    }

    /// Whether `pattern` (ECMAScript, unanchored) matches somewhere in `text`.
    private static func search(_ pattern: String, in text: String) -> Bool {
        guard let expression = try? NSRegularExpression(pattern: pattern) else { return false }
        return expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    private func passes(_ value: Any, _ schema: Any, at pointer: String, depth: Int) -> Bool {
        var nested: [String] = []
        validate(value, against: schema, at: pointer, into: &nested, depth: depth + 1)
        return nested.isEmpty
    }

    private func resolve(_ reference: String) -> Any? {
        guard reference.hasPrefix("#") else { return nil }
        var current: Any = root
        for part in reference.dropFirst().split(separator: "/") {
            let key = part.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            if let object = current as? [String: Any], let next = object[key] { current = next }
            else if let array = current as? [Any], let index = Int(key), array.indices.contains(index) { current = array[index] }
            else { return nil }
        }
        return current
    }

    private static func isBoolean(_ value: Any) -> Bool {
        guard let number = value as? NSNumber else { return false }
        return String(cString: number.objCType) == "c"
    }

    private static func has(_ value: Any, type name: String) -> Bool {
        switch name {
        case "null": return value is NSNull
        case "boolean": return isBoolean(value)
        case "string": return value is String
        case "array": return value is [Any]
        case "object": return value is [String: Any]
        case "number": return !isBoolean(value) && value is NSNumber
        case "integer":
            guard !isBoolean(value), let number = value as? NSNumber else { return false }
            return number.doubleValue.rounded() == number.doubleValue
        default: return false
        }
    }

    private static func equal(_ a: Any, _ b: Any) -> Bool {
        switch (a, b) {
        case (is NSNull, is NSNull): return true
        case (let x as String, let y as String): return x == y
        case (let x as [Any], let y as [Any]): return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1) }
        case (let x as [String: Any], let y as [String: Any]):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { equal(value, $0) } ?? false }
        case (let x as NSNumber, let y as NSNumber):
            return isBoolean(x) == isBoolean(y) && x.doubleValue == y.doubleValue
        default: return false
        }
    }

    private static func matches(_ string: String, format: String) -> Bool {
        func full(_ pattern: String) -> Bool {
            string.range(of: "^(?:" + pattern + ")$", options: .regularExpression) != nil
        }
        switch format {
        case "date":
            guard full("[0-9]{4}-[0-9]{2}-[0-9]{2}") else { return false }
            let parts = string.split(separator: "-").compactMap { Int($0) }
            let (year, month, day) = (parts[0], parts[1], parts[2])
            guard (1 ... 12).contains(month) else { return false }
            let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
            let days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
            return (1 ... days).contains(day)
        case "date-time":
            return full("[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})")
        case "uri":
            return full("[A-Za-z][A-Za-z0-9+.-]*:[^\\s]*")
        default:
            return false
        }
    }
}
