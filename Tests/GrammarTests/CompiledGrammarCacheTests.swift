import TypesetGrammar
import Testing

@Suite struct CompiledGrammarCacheTests {
    static let vocabulary: GrammarVocabulary = {
        let texts = (0 ..< 128).map { [UInt8($0)] } + ["true", "false", "null", "\"a\"", "12"].map { Array($0.utf8) }
        return GrammarVocabulary(tokens: texts + [[]], endOfGeneration: [texts.count])
    }()

    static func schema(_ text: String) throws -> JSONValue { try JSONValue(parsing: text) }

    @Test func hitsMissesAndKeys() throws {
        let cache = CompiledGrammarCache(vocabulary: Self.vocabulary)
        let first = try cache.grammar(forJSONSchema: try Self.schema(#"{"type": "boolean"}"#))
        // The same value spelled differently is the same key: the same object back.
        let again = try cache.grammar(forJSONSchema: try Self.schema(#"{"type":"boolean"}"#))
        #expect(first === again)
        // Other options are another grammar.
        var options = JSONSchemaOptions.generation
        options.whitespace = .flexible(maximum: 2)
        let spaced = try cache.grammar(forJSONSchema: try Self.schema(#"{"type":"boolean"}"#), options: options)
        #expect(spaced !== first)
        let statistics = cache.statistics
        #expect(statistics.hits == 1 && statistics.misses == 2 && statistics.count == 2 && statistics.evictions == 0)
        #expect(statistics.byteCount == first.byteCount + spaced.byteCount)
        // A failure is a miss and is not kept.
        #expect(throws: GrammarError.self) { try cache.grammar(forJSONSchema: try Self.schema(#"{"type":"boolean","not":{}}"#)) }
        #expect(cache.statistics.count == 2 && cache.statistics.misses == 3)
    }

    @Test func theLeastRecentlyUsedLeavesFirst() throws {
        let schemas = try [#"{"type":"boolean"}"#, #"{"type":"null"}"#, #"{"enum":["a", 12]}"#].map(Self.schema)
        let sizes = try schemas.map { try CompiledGrammar(try Grammar(jsonSchema: $0, options: .generation), vocabulary: Self.vocabulary).byteCount }
        // Room for the two largest, not for all three.
        let capacity = sizes.reduce(0, +) - sizes.min()! + 1
        #expect(capacity < sizes.reduce(0, +))
        let cache = CompiledGrammarCache(vocabulary: Self.vocabulary, capacityBytes: capacity)
        let boolean = try cache.grammar(forJSONSchema: schemas[0])
        _ = try cache.grammar(forJSONSchema: schemas[1])
        #expect(try cache.grammar(forJSONSchema: schemas[0]) === boolean)   // boolean used last
        _ = try cache.grammar(forJSONSchema: schemas[2])
        // null was the least recently used: it left; boolean stayed.
        #expect(cache.statistics.evictions >= 1)
        #expect(try cache.grammar(forJSONSchema: schemas[0]) === boolean)
        #expect(cache.statistics.byteCount <= capacity)
        // A grammar larger than the whole capacity is returned but not kept.
        let tiny = CompiledGrammarCache(vocabulary: Self.vocabulary, capacityBytes: 1)
        _ = try tiny.grammar(forJSONSchema: schemas[0])
        #expect(tiny.statistics.count == 0 && tiny.statistics.byteCount == 0)
    }
}
