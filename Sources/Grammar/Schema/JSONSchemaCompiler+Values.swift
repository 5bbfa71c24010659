// MARK: Checking enum and const values

extension SchemaCompiler {
    /// Whether `value` satisfies `node`: `true`, `false`, or `nil` when this compiler cannot
    /// tell. An `enum`/`const` value is kept only on `true`, so an undecidable one is left
    /// out of the grammar (a valid value lost, never an invalid one admitted).
    mutating func admits(_ value: JSONValue, _ node: SchemaNode, depth: Int) throws(GrammarError) -> Bool? {
        guard depth <= options.referenceDepthLimit else { return nil }
        if let values = node.values, !values.contains(value) { return false }
        if node.excludes(value) { return false }
        if !node.anyOf.isEmpty || !node.oneOf.isEmpty {
            var rest = node
            let isOneOf = rest.anyOf.isEmpty
            let alternatives = isOneOf ? rest.oneOf.removeFirst() : rest.anyOf.removeFirst()
            var matches = 0, unknown = false
            for alternative in alternatives {
                guard let alternativeNode = try resolvedNode(alternative, depth: depth + 1) else { continue }
                switch try admits(value, rest.merged(with: alternativeNode), depth: depth + 1) {
                case true?: matches += 1
                case nil: unknown = true
                case false?: break
                }
            }
            if unknown { return nil }
            return isOneOf ? matches == 1 : matches > 0
        }
        if let (rest, alternatives) = try splitConditionalAssertion(node, depth: depth) {
            var unknown = false
            for alternative in alternatives {
                switch try admits(value, rest.merged(with: alternative), depth: depth + 1) {
                case true?: return true
                case nil: unknown = true
                case false?: break
                }
            }
            return unknown ? nil : false
        }
        let type: JSONType
        switch value {
        case .null: type = .null
        case .bool: type = .boolean
        case .number(let text): type = (DecimalNumber(text)?.isInteger ?? false) ? .integer : .number
        case .string: type = .string
        case .array: type = .array
        case .object: type = .object
        }
        if let types = node.types, !types.contains(type), !(type == .integer && types.contains(.number)) { return false }
        switch value {
        case .string(let text):
            let length = text.unicodeScalars.count
            guard length >= node.minimumLength, node.maximumLength.map({ length <= $0 }) ?? true else { return false }
            return try quotedStringLanguage(node, boundingLength: false).accepts(Array(value.compactText.utf8))
        case .number(let text):
            guard let decimal = DecimalNumber(text) else { return nil }
            var automaton = ByteNFA()
            var copy = self
            let integerOnly = node.types.map { !$0.contains(.number) } ?? false
            let fragment = try copy.numberFragmentForChecking(node, integer: integerOnly, into: &automaton)
            let dfa = try budgeted { () throws(DFA.TooLarge) in try DFA(fragment, of: automaton) }
            return decimal.spellings.contains { dfa.accepts(Array($0.utf8)) } ? true : nil
        case .array(let items):
            if items.count < node.minimumItems { return false }
            if let maximum = node.maximumItems, items.count > maximum { return false }
            for (index, item) in items.enumerated() {
                let schemas = index < node.prefixItems.count ? node.prefixItems[index] : node.items
                guard !schemas.isEmpty else { continue }
                guard let itemNode = try resolvedNode(Subschema.all(schemas), depth: depth + 1) else { return false }
                guard let verdict = try admits(item, itemNode, depth: depth + 1) else { return nil }
                if !verdict { return false }
            }
            return true
        case .object(let members):
            if members.count < node.minimumProperties { return false }
            if let maximum = node.maximumProperties, members.count > maximum { return false }
            for name in node.required where !members.contains(where: { $0.0 == name }) { return false }
            if members.contains(where: { node.forbiddenProperties.contains($0.0) }) { return false }
            for requirement in node.requiredOtherMembers {
                guard requirement.patterns.isEmpty else { return nil }
                if !members.contains(where: { !requirement.names.contains($0.0) }) { return false }
            }
            if !node.patternProperties.isEmpty || !node.propertyNames.isEmpty { return nil }
            let declared = node.declaredSchemas
            for (name, member) in members {
                let schemas = node.schemas(forProperty: name, declared: declared)
                guard !schemas.isEmpty else { continue }
                guard let memberNode = try resolvedNode(Subschema.all(schemas), depth: depth + 1) else { return false }
                guard let verdict = try admits(member, memberNode, depth: depth + 1) else { return nil }
                if !verdict { return false }
            }
            return true
        default:
            return true
        }
    }

    /// The number language of `node` built into a scratch automaton.
    mutating func numberFragmentForChecking(_ node: SchemaNode, integer: Bool, into automaton: inout ByteNFA) throws(GrammarError) -> Fragment {
        let saved = grammar.automaton
        defer { grammar.automaton = saved }
        grammar.automaton = automaton
        let fragment = try numberFragment(node, integer: integer)
        automaton = grammar.automaton
        return fragment
    }
}
