import ChatTemplating
import Dispatch
import Foundation
import GGUF
import Grammar
import Models
import Synchronization
import Tokenizer

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
/// from any task at the same time, but generations *queue*: the runner computes one reply at a
/// time, in the order they were requested, on its own thread (both CPU cores already work on
/// every token, so running two at once would only make each slower). A conversation waiting its
/// turn reports `isGenerating`; cancelling its consumer removes it from the queue.
///
/// **Memory.** The weights stay memory-mapped; each conversation allocates its KV cache
/// (`contextLength` positions) when it first generates and keeps it for the next turn, so a new
/// turn recomputes only what follows the shared prefix. `unload()` releases the model and every
/// cache; existing conversations become read-only.
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
        /// Options for replies whose fields are `nil`; `nil` here: the model's `general.sampling.*`
        /// metadata, else greedy decoding.
        public var defaultGenerationOptions: GenerationOptions?

        public init(contextLength: Int? = nil, threadCount: Int = 2, chatTemplate: String? = nil,
                    defaultGenerationOptions: GenerationOptions? = nil) {
            self.contextLength = contextLength
            self.threadCount = threadCount
            self.chatTemplate = chatTemplate
            self.defaultGenerationOptions = defaultGenerationOptions
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

        public init(stage: Stage, fractionCompleted: Double) {
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
    public let tokenizer: Tokenizer
    let threadCount: Int
    let prompts: PromptBuilder
    let state: Mutex<RunnerState>
    /// Runs every generation of this runner's conversations, one at a time.
    let queue: DispatchQueue

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
        self.tokenizer = tokenizer
        self.defaultOptions = options.defaultGenerationOptions ?? Self.defaults(from: file.metadata)
        self.prompts = PromptBuilder(template: template, tokenizer: tokenizer)
        self.state = Mutex(RunnerState(model: model))
        self.queue = DispatchQueue(label: "typeset.model-runner.generation", qos: .userInitiated)
        progress?(LoadProgress(stage: .ready, fractionCompleted: 1))
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
    public func promptTokens(for messages: [ChatMessage], addBOS: Bool = true) throws(ConversationError) -> [Int] {
        try prompts.tokens(for: messages, functions: [], format: .hermes, enableThinking: nil, addBOS: addBOS)
    }

    /// Tokens `text` takes as plain text (no template).
    public func promptTokenCount(for text: String, addBOS: Bool = true) -> Int {
        let bos = addBOS && tokenizer.vocabulary.addBOS && tokenizer.vocabulary.bosTokenID != nil ? 1 : 0
        return bos + tokenizer.encode(text, addingSpecialTokens: false).count
    }

    /// Whether the model is still loaded.
    public var isLoaded: Bool { state.withLock { $0.model != nil } }

    /// Releases the model and every conversation's cache; generations under way are
    /// interrupted. Afterwards, conversations keep their history but are read-only (every
    /// change throws ``ConversationError/runnerUnloaded``).
    public func unload() {
        let flags = state.withLock { state in
            state.model = nil
            state.grammars = nil
            state.caches.removeAll()
            return state.activeGenerations
        }
        for flag in flags { flag.cancel() }
    }

    // MARK: Internals used by Conversation

    /// The compiled grammar for `schema`, from the runner's cache of compiled grammars (over
    /// its own vocabulary, bounded to 256 MiB, least recently used out).
    func compiledGrammar(schema: JSONValue, options: JSONSchemaOptions) throws(ConversationError) -> CompiledGrammar {
        let cache: CompiledGrammarCache? = state.withLock { state in
            if state.grammars == nil, state.model != nil {
                state.grammars = CompiledGrammarCache(vocabulary: GrammarVocabulary(tokenizer.vocabulary))
            }
            return state.grammars
        }
        guard let cache else { throw .runnerUnloaded }
        do { return try cache.grammar(forJSONSchema: schema, options: options) } catch { throw .invalidSchema(error) }
    }

    /// The compiled-grammar cache's counts (hits, misses, evictions, grammars and bytes held).
    public var grammarCacheStatistics: CompiledGrammarCache.Statistics {
        state.withLock { $0.grammars?.statistics } ?? CompiledGrammarCache.Statistics()
    }
}

/// What a runner holds while loaded.
struct RunnerState: Sendable {
    var model: TransformerModel?
    /// Made on the first constrained reply (the grammar vocabulary takes a pass over the tokens).
    var grammars: CompiledGrammarCache?
    var activeGenerations: [CancellationFlag] = []
    /// Each conversation's KV cache, by conversation identifier.
    var caches: [Int: CacheBox] = [:]
    var nextConversation = 0
}

/// Set once when a generation should stop; read between tokens.
final class CancellationFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func cancel() { flag.store(true, ordering: .relaxed) }
    var isCancelled: Bool { flag.load(ordering: .relaxed) }
}
