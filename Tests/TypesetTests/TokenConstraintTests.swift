import Foundation
import Testing
@testable import Typeset
import TypesetGrammar
import TypesetTestSupport

/// A caller's own constraint, written without the grammar compiler: the output is one of a few
/// words. Each token's bytes must extend what is written towards one of them; the end of
/// generation is allowed once a whole word is written.
struct WordListConstraint: TokenConstraint, Sendable {
    let words: [[UInt8]]
    /// Each token's bytes, as the model writes them.
    let tokens: [[UInt8]]
    let endOfGeneration: Set<Int>
    private var written: [UInt8] = []
    /// The length of `written` before each accepted token, for `rollback`.
    private var lengths: [Int] = []
    private var terminated = false

    init(_ words: [String], tokens: [[UInt8]], endOfGeneration: Set<Int>) {
        self.words = words.map { Array($0.utf8) }
        self.tokens = tokens
        self.endOfGeneration = endOfGeneration
    }

    var vocabularySize: Int { tokens.count }
    var acceptedTokenCount: Int { lengths.count }
    private var remainders: [ArraySlice<UInt8>] {
        terminated ? [] : words.filter { $0.starts(with: written) }.map { $0[written.count...] }
    }
    var canTerminate: Bool { remainders.contains { $0.isEmpty } }
    var acceptsMoreBytes: Bool { remainders.contains { !$0.isEmpty } }
    var shortestCompletionLength: Int { remainders.map(\.count).min() ?? .max }

    func forcedBytes(limit: Int) -> [UInt8] {
        // Nothing is forced where the output may end; else the remainders' common prefix.
        guard !canTerminate, var common = remainders.first.map(Array.init) else { return [] }
        for remainder in remainders.dropFirst() {
            common = Array(zip(common, remainder).prefix { $0 == $1 }.map(\.0))
        }
        return Array(common.prefix(limit))
    }

    private func allows(_ token: Int) -> Bool {
        if endOfGeneration.contains(token) { return canTerminate }
        let next = written + tokens[token]
        return !tokens[token].isEmpty && !terminated && words.contains { $0.starts(with: next) }
    }

    func fillNextTokenMask(into mask: inout TokenBitmask) {
        mask = TokenBitmask(vocabularySize: vocabularySize)
        for token in tokens.indices where allows(token) { mask[token] = true }
    }

    mutating func accept(token: Int) -> Bool {
        guard token >= 0, token < tokens.count, allows(token) else { return false }
        lengths.append(written.count)
        if endOfGeneration.contains(token) { terminated = true } else { written += tokens[token] }
        return true
    }

    mutating func rollback(_ count: Int) {
        precondition(count <= lengths.count)
        for _ in 0 ..< count {
            let length = lengths.removeLast()
            if terminated, written.count == length { terminated = false } else { written.removeLast(written.count - length) }
        }
    }
}

/// The reply path holds a reply to any ``TokenConstraint``, not only to a grammar: the same
/// masks, selection within the budget, jump-forward and finish, with a constraint written
/// without the grammar compiler, checked against the grammar of the same language.
@Suite struct TokenConstraintTests {
    static let words = ["yes", "no", "maybe"]

    static func byteWords() -> WordListConstraint {
        let vocabulary = ByteVocabulary.tokenizer.vocabulary
        return WordListConstraint(
            words, tokens: vocabulary.writtenBytes.map { $0 ?? [] },
            endOfGeneration: Set(vocabulary.endOfGenerationTokenIDs))
    }

    /// The reply of a model that wants to write `text`, held to `constraint`.
    static func reply(
        writing text: String, constraint: any TokenConstraint & Sendable, maxTokens: Int? = nil
    ) throws -> (reply: Reply, source: ScriptedSource) {
        let prompt = [32, 32, 32]
        let source = ByteVocabulary.writer(text, promptLength: prompt.count)
        let options = GenerationOptions(temperature: 0, maxTokens: maxTokens)
        let plan = ReplyPlan(
            prompt: prompt, options: options, constraint: constraint,
            routing: ReplyPlan.Routing(options: options, constrained: true, calls: nil, forbidsCallOpening: false), cacheOwner: nil)
        let decoder = ReplyDecoder(plan: plan, tokenizer: ByteVocabulary.tokenizer, cancellation: CancellationFlag()) { _ in }
        let loop = TokenLoop(source: source, maxTokens: options.maxTokens ?? Int.max, isEndOfGeneration: { $0 == ByteVocabulary.endOfGeneration })
        return (decoder.finish(try loop.run(prompt: prompt, opening: decoder.opening, stepper: decoder)), source)
    }

    @Test func aWordTheModelWantsIsWrittenWhole() throws {
        let run = try Self.reply(writing: "no", constraint: Self.byteWords())
        #expect(run.reply.message.content == "no")
        #expect(run.reply.finishReason == .stop)
    }

    /// The model wants a word outside the list: the constraint's mask leaves it the listed
    /// words' first letters (the scripted model's tie goes to the lowest id, `m`), and the rest
    /// of `maybe` is forced: computed in one pass, not sampled.
    @Test func theMaskSteersAndForcedBytesJumpForward() throws {
        let run = try Self.reply(writing: "perhaps", constraint: Self.byteWords())
        #expect(run.reply.message.content == "maybe")
        #expect(run.reply.finishReason == .stop)
        #expect(run.reply.stats.completionTokens == 5)
        // The prompt's pass, then one pass: `m` sampled, `aybe` forced and complete.
        #expect(run.source.evaluations.count == 1)
    }

    /// Within two tokens, `maybe` cannot close: the selector rejects `m` and takes the word that
    /// finishes in time.
    @Test func aTightBudgetClosesTheOutputInTime() throws {
        let run = try Self.reply(writing: "maybe", constraint: Self.byteWords(), maxTokens: 2)
        #expect(run.reply.message.content == "no")
        #expect(run.reply.finishReason == .stop)
    }

    /// The same language as a grammar (`yes|no|maybe`), compiled over the same vocabulary, gives
    /// the same replies, token for token and pass for pass.
    @Test(arguments: ["yes", "no", "maybe", "perhaps", "y", "nope", ""])
    func repliesEqualTheGrammarsOfTheSameLanguage(text: String) throws {
        let grammar = try CompiledGrammar(
            Grammar(regex: Self.words.joined(separator: "|")), vocabulary: GrammarVocabulary(ByteVocabulary.tokenizer.vocabulary))
        for maxTokens in [nil, 2, 3] {
            let byGrammar = try Self.reply(writing: text, constraint: GrammarMatcher(grammar), maxTokens: maxTokens)
            let byWords = try Self.reply(writing: text, constraint: Self.byteWords(), maxTokens: maxTokens)
            #expect(byWords.reply.message.content == byGrammar.reply.message.content, "\(text), \(String(describing: maxTokens))")
            #expect(byWords.reply.finishReason == byGrammar.reply.finishReason)
            #expect(byWords.source.evaluations == byGrammar.source.evaluations)
            #expect(Self.words.contains(byWords.reply.message.content))
        }
    }

    /// Through a conversation of a real model: the reply is one of the words, and a constraint
    /// over another vocabulary, or beside a schema, is refused.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func aConversationHoldsItsReplyToTheConstraint() async throws {
        let runner = try ModelRunner(url: URL(fileURLWithPath: TestModels.smolLM2Path), options: ModelRunner.Options(contextLength: 512))
        let vocabulary = runner.tokenizer.vocabulary
        let words = WordListConstraint(
            ["yes", "no"], tokens: vocabulary.writtenBytes.map { $0 ?? [] },
            endOfGeneration: Set(vocabulary.endOfGenerationTokenIDs))
        var text = "", finish: FinishReason?
        for try await response in runner.createConversation().generateResponse(
            to: .user("Is the sky blue? Answer yes or no."), options: GenerationOptions(temperature: 0, maxTokens: 8), constraint: words) {
            if case .complete(let message, let reason, _) = response { text = message.content; finish = reason }
        }
        #expect(["yes", "no"].contains(text), "\(text)")
        #expect(finish == .stop)

        await #expect(throws: ConversationError.self) {
            for try await _ in runner.createConversation().generateResponse(to: .user("Hi"), constraint: Self.byteWords()) {}
        }
        await #expect(throws: ConversationError.self) {
            for try await _ in runner.createConversation().generateResponse(
                to: .user("Hi"), options: GenerationOptions(jsonSchema: #"{"type":"string"}"#), constraint: words) {}
        }
    }
}
