/// Location-independent identifiers of a schema document, for `$ref`s such as `#name`:
/// `"$anchor": "name"` (2019-09 and later), `"$id": "#name"` (draft-06 and -07) and
/// `"id": "#name"` (draft-04).
///
/// Only places where a schema can stand are searched (`properties` values, `items`, `anyOf`
/// members…), so an `enum` value or a property *named* `id` is never taken for an anchor. A
/// name defined twice resolves to nothing (the `$ref` is then an `unresolvedReference`).
enum SchemaAnchors {
    static func collect(in document: JSONValue) -> [String: Subschema] {
        var found: [String: Subschema] = [:]
        var duplicated: Set<String> = []
        func define(_ name: String, _ schema: Subschema) {
            if found[name] != nil { duplicated.insert(name) } else { found[name] = schema }
        }
        func visit(_ value: JSONValue, _ pointer: String) {
            guard case .object(let members) = value else { return }
            for (keyword, child) in members {
                switch (keyword, child) {
                case ("$anchor", .string(let name)):
                    define(name, Subschema(value: value, pointer: pointer))
                case ("$id", .string(let identifier)), ("id", .string(let identifier)):
                    if identifier.hasPrefix("#"), identifier.count > 1 {
                        define(String(identifier.dropFirst()), Subschema(value: value, pointer: pointer))
                    }
                case ("properties", .object(let named)), ("patternProperties", .object(let named)), ("$defs", .object(let named)),
                     ("definitions", .object(let named)), ("dependentSchemas", .object(let named)), ("dependencies", .object(let named)):
                    for (name, schema) in named { visit(schema, pointer + "/" + keyword + "/" + JSONPointer.escape(name)) }
                case ("anyOf", .array(let list)), ("oneOf", .array(let list)), ("allOf", .array(let list)),
                     ("prefixItems", .array(let list)), ("items", .array(let list)):
                    for (index, schema) in list.enumerated() { visit(schema, pointer + "/" + keyword + "/\(index)") }
                case ("additionalProperties", _), ("items", _), ("additionalItems", _), ("not", _), ("if", _), ("then", _),
                     ("else", _), ("contains", _), ("propertyNames", _), ("unevaluatedItems", _), ("unevaluatedProperties", _):
                    visit(child, pointer + "/" + keyword)
                default:
                    break
                }
            }
        }
        visit(document, "#")
        for name in duplicated { found[name] = nil }
        return found
    }
}
