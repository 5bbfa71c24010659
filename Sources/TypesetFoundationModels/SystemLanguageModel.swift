import Foundation
import Synchronization

/// The model a ``LanguageModelSession`` talks to, as Foundation Models names it: here, a GGUF
/// model that Typeset runs.
///
/// ``default`` is Typeset's default model from the model cache (`$TYPESET_MODEL` when set;
/// see `ModelStore.resolve`), loaded on first use and shared by every session that uses it.
/// `SystemLanguageModel(runner:)` wraps a ``ModelRunner`` the application loaded itself.
public final class SystemLanguageModel: Sendable {
    /// Typeset's default model, loaded on first use.
    public static let `default` = SystemLanguageModel(loading: {
        let path = try ModelStore.resolve(nil)
        return try ModelRunner(url: URL(fileURLWithPath: path))
    })

    private let load: @Sendable () throws -> ModelRunner
    private let loaded = Mutex<Result<ModelRunner, any Error>?>(nil)

    private init(loading load: @escaping @Sendable () throws -> ModelRunner) { self.load = load }

    /// A model already loaded.
    public convenience init(runner: ModelRunner) {
        self.init(loading: { runner })
    }

    /// The GGUF model at `url`, loaded on first use with `options`.
    public convenience init(url: URL, options: ModelRunner.Options = ModelRunner.Options()) {
        self.init(loading: { try ModelRunner(url: url, options: options) })
    }

    /// The runner, loading the model the first time (a failure is kept and thrown again).
    ///
    /// - Throws: ``ModelLocationError`` when the model is not in the cache,
    ///   ``ConversationError/loadFailed(path:reason:)`` when it does not load.
    public func runner() throws -> ModelRunner {
        try loaded.withLock { result in
            if let result { return result }
            let loading = Result { try load() }
            result = loading
            return loading
        }.get()
    }

    /// Whether the model can be used.
    public enum Availability: Sendable, Equatable {
        /// Why the model cannot be used.
        public enum UnavailableReason: Sendable, Equatable, Hashable {
            /// The model file is missing from the cache, or does not load.
            case modelNotReady
        }

        case available
        case unavailable(UnavailableReason)
    }

    /// `.available` once the model loads (this loads it), else why not.
    public var availability: Availability {
        (try? runner()) != nil ? .available : .unavailable(.modelNotReady)
    }

    /// Whether ``availability`` is `.available`.
    public var isAvailable: Bool { availability == .available }

    /// The tokens a session's context holds, prompt and reply together (the runner's context
    /// length; 4096, Typeset's default context, when the model does not load).
    public var contextSize: Int { (try? runner())?.contextLength ?? 4096 }

    // MARK: Token counts

    /// The tokens `prompt` takes, as this model's tokenizer splits it.
    public func tokenCount(for prompt: some PromptRepresentable) async throws -> Int {
        try runner().promptTokenCount(for: prompt.promptRepresentation.text, addBOS: false)
    }

    /// The tokens `instructions` take.
    public func tokenCount(for instructions: Instructions) async throws -> Int {
        try runner().promptTokenCount(for: instructions.text, addBOS: false)
    }

    /// The tokens the tools' definitions take, written as the JSON the model is shown (the
    /// chat template adds its own markup around them).
    public func tokenCount(for tools: [any Tool]) async throws -> Int {
        let text = tools.map { tool in
            JSONValue.object([("name", .string(tool.name)), ("description", .string(tool.description)), ("parameters", tool.parameters.jsonSchema)])
                .compactText
        }.joined(separator: "\n")
        return try runner().promptTokenCount(for: text, addBOS: false)
    }

    /// The tokens `schema` takes, written as the model is shown it.
    public func tokenCount(for schema: GenerationSchema) async throws -> Int {
        try runner().promptTokenCount(for: schema.promptText, addBOS: false)
    }

    /// The tokens the entries take as the model reads them: rendered by the chat template,
    /// so `tokenCount(for: session.transcript)` is what the next request starts from.
    public func tokenCount(for transcriptEntries: some Collection<Transcript.Entry>) async throws -> Int {
        try runner().promptTokenCount(for: Transcript(entries: transcriptEntries).messages)
    }
}
