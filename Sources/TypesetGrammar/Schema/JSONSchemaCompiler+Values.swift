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
            // Excluded strings were checked above (`excludes`): the language without them is
            // the same for this value, and without patterns it is the one shared language
            // of all strings, not a product built again for every value a `oneOf` checks.
            var withoutExcludedStrings = node
            withoutExcludedStrings.excludedValues.removeAll(where: \.isString)
            return try quotedStringLanguage(withoutExcludedStrings, boundingLength: false).accepts(Array(value.compactText.utf8))
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
            if node.uniqueItems {
                for (index, item) in items.enumerated() where items[..<index].contains(where: { $0.isEqualAsJSON(to: item) }) { return false }
            }
            for (index, item) in items.enumerated() {
                let schemas = index < node.prefixItems.count ? node.prefixItems[index] : node.items
                guard !schemas.isEmpty else { continue }
                guard let itemNode = try resolvedNode(Subschema.all(schemas), depth: depth + 1) else { return false }
                guard let verdict = try admits(item, itemNode, depth: depth + 1) else { return nil }
                if !verdict { return false }
            }
            for requirement in node.requiredItems {
                guard let itemNode = try resolvedNode(Subschema.all(requirement.schemas), depth: depth + 1) else { return false }
                var unknown = false, found = false
                for item in items.dropFirst(requirement.from) {
                    switch try admits(item, itemNode, depth: depth + 1) {
                    case true?: found = true
                    case false?: break
                    case nil: unknown = true
                    }
                    if found { break }
                }
                if !found { return unknown ? nil : false }
            }
            return true
        case .object(let members):
            if members.count < node.minimumProperties { return false }
            if let maximum = node.maximumProperties, members.count > maximum { return false }
            for name in node.required where !members.contains(where: { $0.0 == name }) { return false }
            if members.contains(where: { node.forbiddenProperties.contains($0.0) }) { return false }
            if let names = try propertyNameLanguage(node), members.contains(where: { !names.accepts(Lowering.jsonStringLiteral($0.0)) }) {
                return false
            }
            // What each member takes, clause by clause (its declared schema, the patterns it
            // matches, or the clause's additionalProperties), and the members required.
            let declared = node.declaredSchemas
            let clauses = node.memberClauses
            let clausePatterns = try patternKeys(of: clauses, at: node)
            let requirementKeys = try requiredMemberKeys(of: node)
            var unknown = false
            var met = [Bool?](repeating: false, count: node.requiredMembers.count)
            func verdict(_ value: JSONValue, _ schemas: [Subschema]) throws(GrammarError) -> Bool? {
                guard !schemas.isEmpty else { return true }
                guard let memberNode = try resolvedNode(Subschema.all(schemas), depth: depth + 1) else { return false }
                return try admits(value, memberNode, depth: depth + 1)
            }
            for (name, member) in members {
                let literal = Lowering.jsonStringLiteral(name)
                let schemas = Self.memberSchemas(name, literal: literal, clauses: clauses, declared: declared, patternKeys: clausePatterns)
                switch try verdict(member, schemas) {
                case false?: return false
                case nil: unknown = true
                case true?: break
                }
                for (index, requirement) in node.requiredMembers.enumerated() where met[index] != true && requirementKeys[index].accepts(literal) {
                    switch try verdict(member, requirement.schemas) {
                    case true?: met[index] = true
                    case nil: met[index] = nil
                    case false?: break
                    }
                }
            }
            if met.contains(false) { return false }
            return unknown || met.contains(nil) ? nil : true
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

extension JSONValue {
    /// Whether the two values are equal as JSON Schema compares instances (`const`, `enum`,
    /// `uniqueItems`): numbers by value (`1` equals `1.0`), objects whatever their members'
    /// order, arrays item by item.
    func isEqualAsJSON(to other: JSONValue) -> Bool {
        switch (self, other) {
        case (.number(let a), .number(let b)):
            guard let x = DecimalNumber(a), let y = DecimalNumber(b) else { return a == b }
            return x == y
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.isEqualAsJSON(to: $1) }
        case (.object(let a), .object(let b)):
            let x = JSONValue.object(uniquing: a).members ?? [], y = JSONValue.object(uniquing: b).members ?? []
            guard x.count == y.count else { return false }
            return x.allSatisfy { member in y.contains { $0.0 == member.0 && $0.1.isEqualAsJSON(to: member.1) } }
        default:
            return self == other
        }
    }
}
