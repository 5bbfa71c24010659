/// Swift code the model may call while it answers: it writes the `Arguments` (held to their
/// schema, so they always decode), Typeset runs `call(arguments:)`, and the output goes back
/// to the model, which goes on with it.
///
/// ```swift
/// struct BrewHistoryTool: Tool {
///     let name = "lookUpAverageRating"
///     let description = "Returns the user's historical average rating (1–5) for a brewing method."
///
///     @Generable
///     struct Arguments {
///         @Guide(description: "The brewing method, e.g. 'espresso' or 'V60'.")
///         let method: String
///     }
///
///     func call(arguments: Arguments) async throws -> String {
///         "The user's average \(arguments.method) rating is 3.5 out of 5."
///     }
/// }
/// let conversation = try runner.createConversation(systemPrompt: "…", tools: [BrewHistoryTool()])
/// ```
public protocol Tool: Sendable {
    /// The arguments the model writes.
    associatedtype Arguments: Generable
    /// What the tool returns: text, or any generable value (sent to the model as JSON).
    associatedtype Output: ConvertibleToGeneratedContent

    /// The name the model calls the tool by (by default, the type's name).
    var name: String { get }
    /// What the tool does, for the model.
    var description: String { get }
    /// The arguments' schema (by default, `Arguments.generationSchema`).
    var parameters: GenerationSchema { get }

    /// Runs the tool.
    func call(arguments: Arguments) async throws -> Output
}

extension Tool {
    public var name: String { String(describing: Self.self) }

    public var parameters: GenerationSchema { Arguments.generationSchema }

    /// The tool as a function the model is told about.
    var functionDefinition: FunctionDefinition {
        FunctionDefinition(name: name, description: description, parameters: parameters.jsonSchema)
    }

    /// Decodes `arguments`, calls the tool, and returns its output as the text sent back.
    package func invoke(arguments: JSONValue) async throws -> String {
        let decoded: Arguments
        do {
            decoded = try Arguments(GeneratedContent(arguments))
        } catch {
            throw GenerationError.decodingFailure(error as? GeneratedContentError ?? .invalidJSON(offset: 0, message: "\(error)"),
                                                  rawContent: arguments.compactText)
        }
        let output: Output
        do { output = try await call(arguments: decoded) } catch {
            throw GenerationError.toolCallFailed(tool: name, arguments: arguments.compactText, error: error)
        }
        let content = output.generatedContent
        if case .string(let text) = content.jsonValue { return text }
        return content.jsonString
    }
}

extension Conversation {
    /// Makes `tool` callable by the model from the next reply on.
    ///
    /// - Throws: ``ConversationError/invalidFunction(name:reason:)`` for an empty or duplicate
    ///   name, or an arguments schema that does not compile.
    public func register(tool: any Tool) throws(ConversationError) {
        try register(function: tool.functionDefinition)
        state.withLock { $0.tools[tool.name] = tool }
    }

    /// The tools the model may call, by name.
    public var tools: [String: any Tool] { state.withLock { $0.tools } }
}
