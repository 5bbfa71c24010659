import TypesetGrammar
import Models

/// Errors of `ModelRunner` and `Conversation`.
public enum ConversationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The runner was unloaded: its conversations are read-only.
    case runnerUnloaded
    /// `generateResponse` was called while this conversation is still generating.
    case generationInProgress
    /// The model file could not be found or loaded.
    case loadFailed(path: String, reason: String)
    /// The prompt (the whole rendered conversation) does not fit the context.
    case contextOverflow(promptTokens: Int, contextLength: Int)
    /// The JSON Schema constraint (or a function's parameter schema) could not be compiled.
    case invalidSchema(GrammarError)
    /// `maxTokens` cannot hold any value of the reply's JSON Schema: its shortest value takes
    /// `shortestValueTokens` tokens as this model writes it (at least that many, when the value
    /// is too long to write out: its bytes over the longest token's), plus the closing of a
    /// reasoning block the template opened.
    case maxTokensTooSmall(shortestValueTokens: Int, maxTokens: Int)
    /// A registered function is malformed or clashes with another.
    case invalidFunction(name: String, reason: String)
    /// The chat template failed to render the conversation.
    case template(String)
    /// An imported or appended history is malformed; `index` is the message's position.
    case invalidHistory(index: Int?, reason: String)
    /// There is no message to remove.
    case emptyHistory
    /// The model failed during generation.
    case model(ModelError)
    /// A generation option Typeset does not implement was set; it is refused, not ignored.
    case unsupportedOption(name: String, reason: String)

    public var description: String {
        switch self {
        case .runnerUnloaded:
            return "the model runner was unloaded; its conversations are read-only"
        case .generationInProgress:
            return "this conversation is already generating a reply; wait for it or cancel it first"
        case .loadFailed(let path, let reason):
            return "cannot load the model at \(path): \(reason)"
        case .contextOverflow(let promptTokens, let contextLength):
            return "the conversation needs \(promptTokens) prompt tokens but the context holds \(contextLength)"
        case .invalidSchema(let error):
            return "invalid constraint: \(error)"
        case .maxTokensTooSmall(let needed, let maxTokens):
            return "the schema's shortest value takes \(needed) tokens, more than maxTokens (\(maxTokens))"
        case .invalidFunction(let name, let reason):
            return "function '\(name)': \(reason)"
        case .template(let message):
            return "chat template: \(message)"
        case .invalidHistory(let index, let reason):
            return index.map { "history message \($0): \(reason)" } ?? "history: \(reason)"
        case .emptyHistory:
            return "the conversation has no message to remove"
        case .model(let error):
            return "generation failed: \(error)"
        case .unsupportedOption(let name, let reason):
            return "the generation option '\(name)' is not supported: \(reason)"
        }
    }
}
