import ChatTemplating
import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import GGUF
import TypesetGrammar
import Models
import Synchronization
import TypesetTokenizer

/// A loaded model, ready to hold conversations.
///
///     let runner = try await ModelRunner.load(from: modelURL) { progress in
///         print(progress.stage, progress.fractionCompleted)
///     }
///     let conversation = runner.createConversation(systemPrompt: "Answer briefly.")
///     for try await response in conversation.generateResponse(to: "What is GGUF?") {
///         if case .chunk(let text) = response { print(text, terminator: "") }
///     }
///
/// **Concurrency.** A runner is `Sendable`. Its conversations may call `generateResponse`
/// from any task at the same time, and their replies are decoded *together*: each step of the
/// runner's scheduler runs one forward pass over the next token of every reply under way (and
/// a chunk of the prompt of those just starting), so the weights are read once per step for
/// all of them — on a CPU, whose decoding is bound by memory bandwidth, several replies cost
/// little more than one. At most ``Options/maximumConcurrentGenerations`` replies take part;
/// the others wait their turn, in the order they were requested (reporting `isGenerating`).
/// Each reply is exactly what it would be alone: a sequence's logits do not depend on the
/// others in the batch. Cancelling a consumer stops its reply within one token, and removes it
/// from the queue if it was waiting.
///
/// **Memory.** The weights stay memory-mapped; each conversation allocates its KV cache
/// (`contextLength` positions) when it first generates and keeps it for the next turn, so a new
/// turn recomputes only what follows the shared prefix. A finished conversation's cache is kept
/// for later ones that start the same way, within ``Options/idleCacheByteLimit``. `unload()`
/// releases the model and every cache; existing conversations become read-only.
public final class ModelRunner: Sendable {
    /// How to load a model and size its conversations.
    public struct Options: Sendable, Equatable {
        /// Positions of each conversation's KV cache (prompt plus replies); at most the model's
        /// training context. `nil`: 4096, or the training context if smaller.
        public var contextLength: Int?
        /// Threads for the matrix products.
        public var threadCount: Int
        /// A Jinja chat template replacing the model's own (`tokenizer.chat_template`).
        public var chatTemplate: String?
        /// Options for replies whose fields are `nil`; a field `nil` here (or all of them, when
        /// this is `nil`) comes from the model's `general.sampling.*` metadata, else greedy
        /// decoding.
        public var defaultGenerationOptions: GenerationOptions?
        /// The most replies decoded together; more wait their turn. Each active reply holds its
        /// conversation's KV cache and a logits array of the vocabulary's size.
        public var maximumConcurrentGenerations: Int
        /// What compiling a reply's JSON Schema (or a tool's parameters) may spend; past it the
        /// reply fails with ``ConversationError/invalidSchema(_:)`` holding
        /// `GrammarError.budgetExceeded`. A server lowers it for schemas it does not trust.
        public var grammarBudget: CompilationBudget
        /// When a reply's grammar computes its token masks. The default computes each on first
        /// use and the rest in the background: a reply held to a large schema starts once its
        /// automaton is built (milliseconds), not after every mask (up to seconds). `.upfront`
        /// computes them all before the first token and never during decoding.
        public var maskComputation: MaskComputation
        /// A directory where compiled grammars are archived and looked for, so a schema
        /// compiled once (by this process or an earlier one) loads in about a millisecond
        /// (``CompiledGrammarCache``'s `directory`; a file that is not a valid archive is
        /// ignored and rebuilt). `nil`: grammars are kept in memory only.
        public var grammarCacheDirectory: String?
        /// Bytes of KV cache that finished conversations may keep, so that a later one whose
        /// prompt starts as theirs did (a server's next request with the same system prompt, a
        /// client's next turn after others took its place) computes only what follows the
        /// shared prefix. The most recently finished are kept, up to 64 caches; a cache counts
        /// the positions it has committed, about 22.5 KB per token for SmolLM2-135M and 12 KB
        /// for Qwen2.5-0.5B. 0 keeps none; the default is 256 MiB.
        public var idleCacheByteLimit: Int
        /// A GGUF file of a smaller model with the same vocabulary, whose greedy continuations
        /// every reply drafts and verifies (``DraftModel``): the same replies, in fewer passes
        /// of the model where the draft guesses right. `nil`: no draft model.
        package var draftModelPath: String?

        @usableFromInline package static let defaultIdleCacheByteLimit = 256 << 20

        public init(contextLength: Int? = nil, threadCount: Int = 2, chatTemplate: String? = nil,
                    defaultGenerationOptions: GenerationOptions? = nil, maximumConcurrentGenerations: Int = 4,
                    grammarBudget: CompilationBudget = CompilationBudget(), maskComputation: MaskComputation = .onFirstUseAndInBackground,
                    grammarCacheDirectory: String? = nil, idleCacheByteLimit: Int = Options.defaultIdleCacheByteLimit) {
            self.contextLength = contextLength
            self.threadCount = threadCount
            self.chatTemplate = chatTemplate
            self.defaultGenerationOptions = defaultGenerationOptions
            self.maximumConcurrentGenerations = maximumConcurrentGenerations
            self.grammarBudget = grammarBudget
            self.maskComputation = maskComputation
            self.grammarCacheDirectory = grammarCacheDirectory
            self.idleCacheByteLimit = idleCacheByteLimit
        }
    }

    /// How far loading has come.
    public struct LoadProgress: Sendable, Equatable {
        public enum Stage: String, Sendable {
            case readingMetadata, mappingWeights, preparingTokenizer, ready
        }
        public var stage: Stage
        /// 0 … 1 over the whole load (weights are most of it).
        public var fractionCompleted: Double

        package init(stage: Stage, fractionCompleted: Double) {
            self.stage = stage
            self.fractionCompleted = fractionCompleted
        }
    }

    /// The model's name: `general.name` from its metadata, else the file's name without `.gguf`.
    public let modelID: String
    /// The file the model was loaded from.
    public let url: URL
    /// Positions in each conversation's KV cache.
    public let contextLength: Int
    /// The options a reply starts from (see ``GenerationOptions``).
    public let defaultOptions: GenerationOptions
    package let tokenizer: Tokenizer
    /// The chat template's source (the options' or the file's), `nil` for a model without one.
    package let chatTemplateSource: String?
    let threadCount: Int
    let grammarBudget: CompilationBudget
    let maskComputation: MaskComputation
    let grammarCacheDirectory: String?
    let prompts: ChatPromptRenderer
    let state: Mutex<RunnerState>
    /// Renders prompts and compiles grammars for replies, in the order they were asked for,
    /// before they join the scheduler.
    let preparation: DispatchQueue
    /// Computes embeddings, one at a time, beside the scheduler's steps.
    let embeddingQueue: DispatchQueue
    /// The model's shape (kept when the model is unloaded).
    let configuration: ModelConfiguration
    /// `<think>` and `</think>`, when they are tokens of the model's vocabulary.
    let thinkingMarkers: ThinkingMarkers?
    /// Harmony's markers (gpt-oss), when they are tokens of the model's vocabulary.
    let harmonyMarkers: HarmonyMarkers?
    /// Whether the model writes calls in Gemma 4's format, which Typeset does not parse yet
    /// (``writesGemmaCalls(_:)``): a request with functions is refused.
    let writesGemmaCalls: Bool

    /// The scheduler that decodes this runner's replies together.
    typealias Scheduler = BatchScheduler<ModelBatchEvaluator>

    // MARK: Loading

    /// Loads the GGUF model at `url` on a background thread, reporting progress as it goes.
    ///
    /// - Throws: ``ConversationError/loadFailed(path:reason:)`` naming what is wrong with the
    ///   file (unsupported architecture or tensor type, missing tensor, malformed metadata).
    public static func load(
        from url: URL, options: Options = Options(),
        progress: (@Sendable (LoadProgress) -> Void)? = nil
    ) async throws(ConversationError) -> ModelRunner {
        let result: Result<ModelRunner, ConversationError> = await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                do throws(ConversationError) {
                    continuation.resume(returning: .success(try ModelRunner(url: url, options: options, progress: progress)))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// Loads the model synchronously (``load(from:options:progress:)`` does this off the caller's
    /// thread).
    public init(url: URL, options: Options = Options(), progress: (@Sendable (LoadProgress) -> Void)? = nil) throws(ConversationError) {
        let path = url.path
        func fail(_ reason: String) -> ConversationError { .loadFailed(path: path, reason: reason) }
        progress?(LoadProgress(stage: .readingMetadata, fractionCompleted: 0))
        let file: GGUFFile
        let model: TransformerModel
        do { file = try GGUFFile(contentsOf: path) } catch { throw fail(error.description) }
        // Packing reads every packed matrix once and touches the pages of the others, so the
        // first reply does not pay for page faults; this is most of a cold load.
        do {
            model = try TransformerModel(file: file) { fraction in
                progress?(LoadProgress(stage: .mappingWeights, fractionCompleted: min(0.95, 0.05 + 0.9 * fraction)))
            }
        } catch { throw fail(error.description) }
        progress?(LoadProgress(stage: .preparingTokenizer, fractionCompleted: 0.95))
        let tokenizer: Tokenizer
        do { tokenizer = try Tokenizer(metadata: file.metadata) } catch { throw fail(error.description) }
        let templateSource = options.chatTemplate ?? (try? file.metadata.string("tokenizer.chat_template")) ?? nil
        let template: Result<ChatTemplate, ChatTemplateError>?
        if let templateSource {
            do throws(ChatTemplateError) { template = .success(try ChatTemplate(templateSource)) } catch { template = .failure(error) }
        } else {
            template = nil
        }

        self.url = url
        let name = (try? file.metadata.string("general.name")) ?? nil
        self.modelID = name.flatMap { $0.isEmpty ? nil : $0 } ?? url.deletingPathExtension().lastPathComponent
        let trained = model.configuration.trainedContextLength
        self.contextLength = max(1, min(options.contextLength ?? min(4096, trained), trained))
        self.threadCount = max(1, options.threadCount)
        self.grammarBudget = options.grammarBudget
        self.maskComputation = options.maskComputation
        self.grammarCacheDirectory = options.grammarCacheDirectory
        self.tokenizer = tokenizer
        self.chatTemplateSource = templateSource
        let modelDefaults = Self.defaults(from: file.metadata)
        var defaultOptions = options.defaultGenerationOptions?.filled(from: modelDefaults) ?? modelDefaults
        defaultOptions.functionCallFormat = defaultOptions.functionCallFormat ?? Self.functionCallFormat(of: tokenizer)
        self.defaultOptions = defaultOptions
        self.prompts = ChatPromptRenderer(template: template, tokenizer: tokenizer)
        let scheduler = Scheduler(
            evaluator: ModelBatchEvaluator(model: model, threadCount: self.threadCount),
            maximumSequences: max(1, options.maximumConcurrentGenerations))
        var state = RunnerState(model: model, scheduler: scheduler)
        if let draftPath = options.draftModelPath {
            progress?(LoadProgress(stage: .mappingWeights, fractionCompleted: 0.95))
            do throws(DraftModelError) {
                state.draftModel = try DraftModel(
                    path: draftPath, targetModel: model, targetVocabulary: tokenizer.vocabulary, contextLength: contextLength,
                    threadCount: threadCount)
            } catch {
                if case let .loadFailed(path, reason) = error { throw .loadFailed(path: path, reason: reason) }
                throw .loadFailed(path: draftPath, reason: error.description)
            }
        }
        state.caches.idleByteLimit = max(0, options.idleCacheByteLimit)
        self.state = Mutex(state)
        self.preparation = DispatchQueue(label: "typeset.model-runner.preparation", qos: .userInitiated)
        self.embeddingQueue = DispatchQueue(label: "typeset.model-runner.embeddings", qos: .userInitiated)
        self.configuration = model.configuration
        self.thinkingMarkers = ThinkingMarkers(tokenizer.vocabulary)
        self.harmonyMarkers = HarmonyMarkers(tokenizer.vocabulary)
        self.writesGemmaCalls = Self.writesGemmaCalls(tokenizer)
        progress?(LoadProgress(stage: .ready, fractionCompleted: 1))
    }

    /// How the model writes function calls: LFM's format when its vocabulary has LFM's call
    /// marker as a token of its own, Hermes's otherwise.
    static func functionCallFormat(of tokenizer: Tokenizer) -> FunctionCallFormat {
        let marker = tokenizer.encode(FunctionCallFormat.lfm.opening!, addingSpecialTokens: false, parsingSpecialTokens: true)
        return marker.count == 1 ? .lfm : .hermes
    }

    /// Whether the vocabulary has Gemma 4's call markers, `<|tool_call>` and `<tool_call|>`, as
    /// tokens of their own: its calls are `<|tool_call>call:name{key:<|"|>text<|"|>,…}<tool_call|>`,
    /// not JSON.
    static func writesGemmaCalls(_ tokenizer: Tokenizer) -> Bool {
        ["<|tool_call>", "<tool_call|>"].allSatisfy {
            tokenizer.encode($0, addingSpecialTokens: false, parsingSpecialTokens: true).count == 1
        }
    }

    /// Default sampling from `general.sampling.*` (the keys llama.cpp's converters write), else greedy.
    static func defaults(from metadata: GGUFMetadata) -> GenerationOptions {
        func float(_ key: String) -> Float? { ((try? metadata.double(key)) ?? nil).map(Float.init) }
        func integer(_ key: String) -> Int? { (try? metadata.integer(key)) ?? nil }
        return GenerationOptions(
            temperature: float("general.sampling.temp") ?? 0, topP: float("general.sampling.top_p"),
            minP: float("general.sampling.min_p"), topK: integer("general.sampling.top_k"),
            repetitionPenalty: float("general.sampling.penalty_repeat") ?? 1, seed: 0)
    }

    // MARK: Conversations

    /// A new conversation, starting with a system message when `systemPrompt` is given.
    public func createConversation(systemPrompt: String? = nil) -> Conversation {
        Conversation(runner: self, history: systemPrompt.map { [.system($0)] } ?? [])
    }

    /// A new conversation whose model may call `tools` (see ``Conversation/respond(to:generating:includeSchemaInPrompt:options:)``),
    /// starting with a system message when `systemPrompt` is given.
    ///
    /// - Throws: ``ConversationError/invalidFunction(name:reason:)`` for tools with an empty or
    ///   duplicate name.
    public func createConversation(systemPrompt: String? = nil, tools: [any Tool]) throws(ConversationError) -> Conversation {
        let conversation = createConversation(systemPrompt: systemPrompt)
        for tool in tools { try conversation.register(tool: tool) }
        return conversation
    }

    /// A conversation continuing `history` (for example one read with `OpenAIChatFormat`).
    public func createConversation(history: [ChatMessage]) -> Conversation {
        Conversation(runner: self, history: history)
    }

    /// Tokens the prompt for `messages` takes (rendered with the chat template, ready for the
    /// assistant's reply), to check a conversation against the context before sending it.
    ///
    /// - Parameter addBOS: count the beginning-of-sequence token the model expects, if any.
    public func promptTokenCount(for messages: [ChatMessage], addBOS: Bool = true) throws(ConversationError) -> Int {
        try promptTokens(for: messages, addBOS: addBOS).count
    }

    /// The prompt tokens for `messages`, as a reply to them would be prefilled.
    package func promptTokens(for messages: [ChatMessage], addBOS: Bool = true) throws(ConversationError) -> [Int] {
        try prompts.tokens(for: messages, functions: [], format: .hermes, enableThinking: nil, addBOS: addBOS)
    }

    /// Tokens `text` takes as plain text (no template).
    public func promptTokenCount(for text: String, addBOS: Bool = true) -> Int {
        let bos = addBOS && tokenizer.vocabulary.addBOS && tokenizer.vocabulary.bosTokenID != nil ? 1 : 0
        return bos + tokenizer.encode(text, addingSpecialTokens: false).count
    }

    /// Whether the model is still loaded.
    package var isLoaded: Bool { state.withLock { $0.model != nil } }

    /// Releases the model and every conversation's cache; generations under way are
    /// interrupted. Afterwards, conversations keep their history but are read-only (every
    /// change throws ``ConversationError/runnerUnloaded``).
    public func unload() {
        let (flags, scheduler) = state.withLock { state in
            defer {
                state.model = nil
                state.draftModel = nil
                state.scheduler = nil
                state.grammars = nil
                state.caches.removeAll()
            }
            return (state.activeGenerations, state.scheduler)
        }
        for flag in flags { flag.cancel() }
        scheduler?.shutdown()
    }

    // MARK: Internals used by Conversation

    /// The compiled grammar for `schema`, from the runner's cache of compiled grammars (over
    /// its own vocabulary, bounded to 256 MiB, least recently used out).
    package func compiledGrammar(schema: JSONValue, options: JSONSchemaOptions) throws(ConversationError) -> CompiledGrammar {
        guard let cache = grammarCache() else { throw .runnerUnloaded }
        do { return try cache.grammar(forJSONSchema: schema, options: options, budget: grammarBudget) } catch {
            if case .budgetExceeded = error { Self.returnFreedMemory() }
            throw .invalidSchema(error)
        }
    }

    /// A GBNF grammar (llama.cpp's, `Grammar(ebnf:)`) compiled over the model's vocabulary,
    /// within the runner's budget. Not kept: a request's grammar is its own.
    package func compiledGrammar(ebnf text: String) throws(ConversationError) -> CompiledGrammar {
        guard let cache = grammarCache() else { throw .runnerUnloaded }
        do {
            return try CompiledGrammar(
                try Grammar(ebnf: text, budget: grammarBudget), vocabulary: cache.vocabulary, budget: grammarBudget,
                maskComputation: maskComputation)
        } catch {
            if case .budgetExceeded = error { Self.returnFreedMemory() }
            throw .invalidSchema(error)
        }
    }

    /// The runner's cache of compiled grammars (made on first use); `nil` once unloaded.
    private func grammarCache() -> CompiledGrammarCache? {
        state.withLock { state in
            if state.grammars == nil, state.model != nil {
                state.grammars = CompiledGrammarCache(
                    vocabulary: GrammarVocabulary(tokenizer.vocabulary), maskComputation: maskComputation, directory: grammarCacheDirectory)
            }
            return state.grammars
        }
    }

    /// ``compiledGrammar(schema:options:)`` on the preparation queue, for async callers: a
    /// compilation may take its budget's seconds, which must not hold one of the few threads
    /// that run tasks; and one compilation at a time per runner bounds the memory they take.
    package func compiledGrammar(schema: JSONValue, options: JSONSchemaOptions) async throws(ConversationError) -> CompiledGrammar {
        try await prepared { () throws(ConversationError) in try self.compiledGrammar(schema: schema, options: options) }
    }

    /// ``compiledGrammar(ebnf:)`` on the preparation queue, for async callers.
    package func compiledGrammar(ebnf text: String) async throws(ConversationError) -> CompiledGrammar {
        try await prepared { () throws(ConversationError) in try self.compiledGrammar(ebnf: text) }
    }

    /// `work` run on the preparation queue.
    private func prepared<Value: Sendable>(
        _ work: @escaping @Sendable () throws(ConversationError) -> Value
    ) async throws(ConversationError) -> Value {
        let result: Result<Value, ConversationError> = await withCheckedContinuation { continuation in
            preparation.async {
                do throws(ConversationError) {
                    continuation.resume(returning: .success(try work()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// Compiles, off the caller's thread, the grammar that registering `function` compiles
    /// (its call schema), so the registration then finds it cached.
    package func compileCallGrammar(for function: FunctionDefinition) async throws(ConversationError) {
        _ = try await compiledGrammar(schema: ChatPromptRenderer.callSchema([function]), options: defaultOptions.callFormat.callGrammarOptions())
    }

    /// Hands the memory a refused compilation freed back to the system. The allocator keeps
    /// freed memory in the arena of the thread that used it, so a server's resident memory
    /// would otherwise stay at the peak of the largest hostile schema it ever refused.
    static func returnFreedMemory() {
        _ = mallocTrim?(0)
    }

    /// glibc's `malloc_trim` (not in Swift's Glibc module), looked up once; nil elsewhere.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        #if canImport(Glibc)
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
        #else
        return nil
        #endif
    }()

    /// What the scheduler is doing: replies waiting and decoding, the forward passes run.
    public var activity: Activity {
        let statistics = state.withLock { $0.scheduler?.statistics } ?? .init()
        var activity = Activity(
            waitingGenerations: statistics.waiting, activeGenerations: statistics.active, steps: statistics.steps,
            evaluatedTokens: statistics.evaluatedTokens, lastBatchSize: statistics.lastBatchSize)
        activity.batchedGenerations = statistics.batchedGenerations
        return activity
    }

    /// A snapshot of the runner's scheduler.
    public struct Activity: Sendable, Equatable {
        /// Replies waiting for a place among the concurrent generations.
        public var waitingGenerations: Int
        /// Replies being decoded (prompt or tokens).
        public var activeGenerations: Int
        /// Forward passes run since the runner was loaded.
        public var steps: Int
        /// Tokens evaluated by those passes (prompts and replies).
        public var evaluatedTokens: Int
        /// Replies in the last forward pass.
        public var lastBatchSize: Int
        /// Replies over all forward passes (the sum of their batches' sizes).
        package var batchedGenerations = 0
    }

    /// The compiled-grammar cache's counts (hits, misses, evictions, grammars and bytes held).
    public var grammarCacheStatistics: GrammarCacheStatistics {
        state.withLock { $0.grammars?.statistics } ?? CompiledGrammarCache.Statistics()
    }
}

/// What a runner holds while loaded.
struct RunnerState: Sendable {
    var model: TransformerModel?
    var scheduler: ModelRunner.Scheduler?
    /// The model drafting for every reply, if any (`Options.draftModelPath`).
    var draftModel: DraftModel?
    /// Made on the first constrained reply (the grammar vocabulary takes a pass over the tokens).
    var grammars: CompiledGrammarCache?
    var activeGenerations: [CancellationFlag] = []
    /// The KV caches: each conversation's own, and the idle ones kept for later prompts.
    var caches = CachePool()
    var nextConversation = 0
}

/// Set once when a generation should stop; read between tokens.
final class CancellationFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func cancel() { flag.store(true, ordering: .relaxed) }
    var isCancelled: Bool { flag.load(ordering: .relaxed) }
}
