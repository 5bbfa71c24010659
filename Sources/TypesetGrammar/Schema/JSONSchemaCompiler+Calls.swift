// MARK: Function calls in Python syntax

/// Function calls as Liquid's LFM models write them: a Python list of calls with keyword
/// arguments, values as Python literals.
///
///     [get_weather(city="Paris", unit="celsius"), get_time(zone="CET")]
///      └ name ┘└ arguments: the parameter schema's object, spelled (name=value, …) ┘
///
/// The schema is a call schema, `{"properties": {"name": {"const": N}, "arguments": A}}` or
/// an `anyOf` of them. A call's arguments follow `A` as an object's members would: in
/// declaration order, required ones present, values held to their schemas; only declared
/// parameters can be named. Values are JSON but for `True`, `False` and `None`.
extension SchemaCompiler {
    /// The root rule: `[` call (`,` ` `? call)* `]`, a single call unless `several`.
    mutating func pythonCallList(several: Bool) throws(GrammarError) -> Int32 {
        var calls: [(name: String, arguments: Subschema)] = []
        if let alternatives = document["anyOf"], case .array(let items) = alternatives {
            for (index, item) in items.enumerated() { calls.append(try Self.call(item, pointer: "#/anyOf/\(index)")) }
        } else {
            calls.append(try Self.call(document, pointer: "#"))
        }
        let call = grammar.declareRule("call")
        var alternatives: [Fragment] = []
        for (name, arguments) in calls {
            guard PythonIdentifier.isValid(name) else {
                throw .invalidSchema(pointer: arguments.pointer, message: "'\(name)' is not a Python identifier, so no call to it can be written")
            }
            guard let node = try resolvedNode(arguments, depth: 0) else { continue }
            let keywords = try keywordArguments(node)
            alternatives.append(grammar.automaton.sequence([grammar.automaton.literal(Array(name.utf8)), keywords]))
        }
        grammar.define(call, as: alternatives.isEmpty ? grammar.automaton.nothing() : grammar.automaton.union(alternatives))
        return grammar.addRule("root") { automaton in
            var parts = [automaton.literal(Array("[".utf8)), automaton.rule(call)]
            if several {
                let separator = automaton.sequence([automaton.literal(Array(",".utf8)), automaton.optional(automaton.literal(Array(" ".utf8)))])
                parts.append(automaton.star(automaton.sequence([separator, automaton.rule(call)])))
            }
            parts.append(automaton.literal(Array("]".utf8)))
            return automaton.sequence(parts)
        }
    }

    /// The name and the arguments' schema of one call schema.
    private static func call(_ schema: JSONValue, pointer: String) throws(GrammarError) -> (name: String, arguments: Subschema) {
        guard case .string(let name)? = schema["properties"]?["name"]?["const"], let arguments = schema["properties"]?["arguments"] else {
            throw .invalidSchema(pointer: pointer, message: "a call schema needs properties 'name' (with a 'const') and 'arguments'")
        }
        return (name, Subschema(value: arguments, pointer: pointer + "/properties/arguments"))
    }

    /// `(name=value, …)` for an object schema of named parameters.
    private mutating func keywordArguments(_ node: SchemaNode) throws(GrammarError) -> Fragment {
        let combinator = !node.anyOf.isEmpty ? "anyOf" : !node.oneOf.isEmpty ? "oneOf" : !node.negations.isEmpty ? "not"
            : !node.conditionals.isEmpty ? "if" : !node.dependencies.isEmpty ? "dependentSchemas" : node.values != nil ? "enum" : nil
        if let combinator {
            throw .unsupportedKeyword(keyword: combinator, pointer: node.pointer, reason: "a call's keyword arguments must follow one object schema")
        }
        if let types = node.types, !types.contains(.object) {
            throw .invalidSchema(pointer: node.pointer, message: "a call's arguments must be an object")
        }
        for name in node.properties.map(\.name) + node.required where !PythonIdentifier.isValid(name) {
            throw .invalidSchema(pointer: node.pointer, message: "parameter '\(name)' is not a Python identifier, so it cannot be a keyword argument")
        }
        return try objectFragment(node, style: .keywordArguments)
    }
}

/// Python's identifiers, in ASCII: what a call's function and keyword names must be, for the
/// call grammar and for the reader of what it writes.
package enum PythonIdentifier {
    /// Whether `name` is one: a letter or `_`, then letters, digits and `_`.
    package static func isValid(_ name: String) -> Bool {
        guard let first = name.utf8.first, allows(first, first: true) else { return false }
        return name.utf8.allSatisfy { allows($0, first: false) }
    }

    /// Whether `byte` may stand in an identifier (`first`: at its start, where digits may not).
    package static func allows(_ byte: UInt8, first: Bool) -> Bool {
        switch byte {
        case UInt8(ascii: "_"), UInt8(ascii: "a") ... UInt8(ascii: "z"), UInt8(ascii: "A") ... UInt8(ascii: "Z"): true
        case UInt8(ascii: "0") ... UInt8(ascii: "9"): !first
        default: false
        }
    }
}
