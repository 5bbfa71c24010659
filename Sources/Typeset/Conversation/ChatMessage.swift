import TypesetGrammar

/// One message of a conversation.
///
/// A value: `Conversation.history` hands out snapshots, never live objects. The fields follow
/// OpenAI's chat-completions messages, which `ChatHistory` reads and writes:
///
/// | role        | content            | other fields                                   |
/// |-------------|--------------------|------------------------------------------------|
/// | `system`    | instructions       |                                                |
/// | `user`      | the user's text    |                                                |
/// | `assistant` | the reply's text   | `reasoning` (thinking), `functionCalls`        |
/// | `tool`      | a function's result| `toolCallID` and `name` of the call it answers |
public struct ChatMessage: Sendable, Hashable {
    /// Who wrote a message.
    public enum Role: String, Sendable, Hashable, CaseIterable {
        case system, user, assistant, tool
    }

    public var role: Role
    /// The message's text (for a reply: without its reasoning or function-call markup).
    public var content: String
    /// An assistant's reasoning (the text between `<think>` and `</think>`), if it thought.
    public var reasoning: String?
    /// The functions an assistant message calls, in order.
    public var functionCalls: [FunctionCall]
    /// For a `tool` message: the identifier of the call it answers.
    public var toolCallID: String?
    /// For a `tool` message: the name of the function that produced it.
    public var name: String?

    public init(
        role: Role, content: String, reasoning: String? = nil, functionCalls: [FunctionCall] = [],
        toolCallID: String? = nil, name: String? = nil
    ) {
        self.role = role
        self.content = content
        self.reasoning = reasoning
        self.functionCalls = functionCalls
        self.toolCallID = toolCallID
        self.name = name
    }

    public static func system(_ content: String) -> ChatMessage { ChatMessage(role: .system, content: content) }
    public static func user(_ content: String) -> ChatMessage { ChatMessage(role: .user, content: content) }
    public static func assistant(_ content: String, functionCalls: [FunctionCall] = []) -> ChatMessage {
        ChatMessage(role: .assistant, content: content, functionCalls: functionCalls)
    }

    /// A function's result, answering `call`.
    public static func tool(_ content: String, answering call: FunctionCall) -> ChatMessage {
        ChatMessage(role: .tool, content: content, toolCallID: call.id, name: call.name)
    }
}

/// A call the model made to a registered function.
public struct FunctionCall: Sendable, Hashable {
    /// An identifier unique within the conversation (`call_1`, `call_2`, …), which the
    /// `tool` message answering it repeats.
    public var id: String
    public var name: String
    /// The arguments, a JSON object that validates against the function's parameter schema.
    public var arguments: JSONValue

    public init(id: String, name: String, arguments: JSONValue) {
        self.id = id
        self.name = name
        self.arguments = arguments
    }

    /// The arguments as compact JSON text.
    public var argumentsText: String { arguments.compactText }
}

/// A function the model may call: its name, what it does and a JSON Schema for its arguments.
public struct FunctionDefinition: Sendable, Hashable {
    public var name: String
    public var description: String
    /// A JSON Schema for the `arguments` object (by convention `{"type":"object",…}`).
    public var parameters: JSONValue

    public init(name: String, description: String, parameters: JSONValue) {
        self.name = name
        self.description = description
        self.parameters = parameters
    }

    /// A definition whose parameter schema is given as JSON text.
    ///
    /// - Throws: ``ConversationError/invalidFunction(name:reason:)`` when the text is not JSON.
    public init(name: String, description: String, parametersJSON: String) throws(ConversationError) {
        do {
            self.init(name: name, description: description, parameters: try JSONValue(parsingSchema: parametersJSON))
        } catch {
            throw .invalidFunction(name: name, reason: error.description)
        }
    }
}
