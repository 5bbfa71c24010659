/// Location-independent identifiers of a schema document, for `$ref`s such as `#name`:
/// `"$anchor": "name"` (2019-09 and later), `"$id": "#name"` (draft-06 and -07) and
/// `"id": "#name"` (draft-04).
///
/// Only places where a schema can stand are searched (`properties` values, `items`, `anyOf`
/// members…), so an `enum` value or a property *named* `id` is never taken for an anchor. A
/// name defined twice resolves to nothing (the `$ref` is then an `unresolvedReference`).
enum SchemaAnchors {
    ///
    /// - Throws: `.budgetExceeded` when the walk runs past the current compilation's budget.
    static func collect(in document: JSONValue) throws(GrammarError) -> [String: Subschema] {
        var found: [String: Subschema] = [:]
        var duplicated: Set<String> = []
        // The reference tokens down to the schema being visited; joined into a pointer only
        // for an anchor, so a document without anchors builds no strings.
        var path: [String] = []
        var visited = 0
        let meter = CompilationMeter.current
        func define(_ name: String, _ schema: JSONValue) {
            let pointer = "#" + path.map { "/" + JSONPointer.escape($0) }.joined()
            if found[name] != nil { duplicated.insert(name) } else { found[name] = Subschema(value: schema, pointer: pointer) }
        }
        func visit(_ value: JSONValue, _ tokens: String...) throws(GrammarError) {
            guard case .object(let members) = value else { return }
            visited += 1
            if visited & 4095 == 0 { try meter?.check("looking for anchors in the schema") }
            path += tokens
            defer { path.removeLast(tokens.count) }
            for (keyword, child) in members {
                switch (keyword, child) {
                case ("$anchor", .string(let name)):
                    define(name, value)
                case ("$id", .string(let identifier)), ("id", .string(let identifier)):
                    if identifier.hasPrefix("#"), identifier.count > 1 { define(String(identifier.dropFirst()), value) }
                case ("properties", .object(let named)), ("patternProperties", .object(let named)), ("$defs", .object(let named)),
                     ("definitions", .object(let named)), ("dependentSchemas", .object(let named)), ("dependencies", .object(let named)):
                    for (name, schema) in named { try visit(schema, keyword, name) }
                case ("anyOf", .array(let list)), ("oneOf", .array(let list)), ("allOf", .array(let list)),
                     ("prefixItems", .array(let list)), ("items", .array(let list)):
                    for (index, schema) in list.enumerated() { try visit(schema, keyword, String(index)) }
                case ("additionalProperties", _), ("items", _), ("additionalItems", _), ("not", _), ("if", _), ("then", _),
                     ("else", _), ("contains", _), ("propertyNames", _), ("unevaluatedItems", _), ("unevaluatedProperties", _):
                    try visit(child, keyword)
                default:
                    break
                }
            }
        }
        try visit(document)
        for name in duplicated { found[name] = nil }
        return found
    }
}
