/// A context-free grammar over bytes: Typeset's grammar IR.
///
/// Each rule's body is a regular expression over bytes and references to rules, kept as a
/// fragment of one shared nondeterministic automaton. JSON Schemas, regular expressions and
/// GBNF-style grammar texts all compile to this form; `CompiledGrammar` then turns every
/// rule into a deterministic automaton (the pushdown automaton's states) and precomputes
/// token masks against a vocabulary.
///
///     root   ::= "{" "\"name\"" ":" string "}"
///     string ::= "\"" ( [^"\\\x00-\x1F] | "\\" escape )* "\""
///
/// The root rule matches the whole output; generation may end exactly when it is complete.
public struct Grammar: Sendable {
    struct Rule: Sendable {
        var name: String
        var body: Fragment
        /// For a rule whose body is a language of quoted JSON strings: the bounds on their
        /// length in characters, counted in the matcher's frames (`LengthCounter`) rather
        /// than unrolled into the automaton.
        var lengthBounds: LengthBounds? = nil
        /// For a rule built as an automaton already (trimmed, minimal, numbered breadth-first,
        /// without rule edges): the automaton, which the pushdown automaton takes as it is
        /// instead of determinizing `body` (then empty).
        var automaton: DFA? = nil
        /// Whether the rule is one item of a `uniqueItems` array: called only from the array's
        /// own rule, whose frame holds the items written so far; it may complete only with a
        /// value unequal to each of them (see `SchemaCompiler.distinctItems(_:itemSchemas:)`).
        var isDistinctItem = false
    }

    var automaton = ByteNFA()
    var rules: [Rule] = []
    /// The index of the start rule.
    var root: Int32 = 0

    /// The rules' names, and per base name the next suffix `uniqueName` tries.
    private var namesInUse: Set<String> = []
    private var nextSuffix: [String: Int] = [:]

    /// Whether the grammar was compiled from a JSON Schema (its errors then speak of the
    /// schema; a grammar text's speak of its rules).
    var isFromJSONSchema = false

    /// Keywords a lenient JSON Schema compilation did not enforce (empty otherwise).
    public internal(set) var droppedKeywords: [DroppedKeyword] = []

    /// Number of rules.
    public var ruleCount: Int { rules.count }
    /// The rules' names, in index order (the root is `rootName`).
    public var ruleNames: [String] { rules.map(\.name) }
    public var rootName: String { rules[Int(root)].name }

    init() {}

    // MARK: Building

    /// Declares a rule whose body is defined later (so rules can refer to each other).
    mutating func declareRule(_ name: String) -> Int32 {
        let placeholder = automaton.nothing()
        rules.append(Rule(name: name, body: placeholder))
        namesInUse.insert(name)
        return Int32(rules.count - 1)
    }

    mutating func define(_ rule: Int32, as body: Fragment) {
        rules[Int(rule)].body = body
    }

    /// Defines a rule by its automaton, which must be trimmed, minimal, numbered breadth-first
    /// and without rule edges (what `DFA`'s regular-language operations return).
    mutating func define(_ rule: Int32, asAutomaton automaton: DFA) {
        precondition(!automaton.hasRuleEdges, "a rule defined by its automaton calls no rule")
        rules[Int(rule)].body = self.automaton.nothing()
        rules[Int(rule)].automaton = automaton
    }

    /// Declares and defines a rule in one step.
    mutating func addRule(_ name: String, build: (inout ByteNFA) -> Fragment) -> Int32 {
        let rule = declareRule(name)
        define(rule, as: build(&automaton))
        return rule
    }

    /// A name not used by any rule yet, `base` or `base-2`, `base-3`, … Amortized O(1).
    mutating func uniqueName(_ base: String) -> String {
        if !namesInUse.contains(base) { return base }
        var suffix = nextSuffix[base] ?? 2
        while namesInUse.contains("\(base)-\(suffix)") { suffix += 1 }
        nextSuffix[base] = suffix + 1
        return "\(base)-\(suffix)"
    }
}

extension Grammar {
    /// A grammar whose sentences are the strings `pattern` matches entirely (an ECMAScript
    /// regular expression, the subset documented on `RegularExpression`), in UTF-8.
    public init(regex pattern: String, repetitionLimit: Int = 1000, budget: CompilationBudget = CompilationBudget()) throws(GrammarError) {
        self.init()
        var grammar = self
        try CompilationMeter.metering(budget) { () throws(GrammarError) in
            var characters = CharacterNFA()
            let fragment = try RegularExpression.build(pattern, search: false, into: &characters, repetitionLimit: repetitionLimit)
            try CompilationMeter.check(bytes: characters.stateCount * CompilationMeter.bytesPerNFAState, "expanding /\(pattern)/")
            let rule = grammar.declareRule("root")
            let body = Lowering.lower(fragment, of: characters, into: &grammar.automaton) { set, target in Lowering.utf8(set, into: &target) }
            grammar.define(rule, as: body)
            grammar.root = rule
        }
        self = grammar
    }
}
