import TypesetGrammar

/// Reads and writes conversations as OpenAI chat-completions messages, the lingua franca of
/// chat APIs:
///
///     {"messages": [
///       {"role": "system", "content": "…"},
///       {"role": "user", "content": "…"},
///       {"role": "assistant", "content": null,
///        "tool_calls": [{"id": "call_1", "type": "function",
///                        "function": {"name": "getWeather", "arguments": "{\"city\":\"Oslo\"}"}}]},
///       {"role": "tool", "tool_call_id": "call_1", "name": "getWeather", "content": "…"}]}
///
/// `arguments` is a JSON string, as OpenAI writes it (an object is accepted on import).
/// Reasoning is written as `reasoning_content`. Content given as an array of parts is read
/// when every part is text.
package enum OpenAIChatFormat {
    /// `{"messages": […]}` for `messages`, compact.
    package static func encode(_ messages: [ChatMessage]) -> String {
        JSONValue.object([("messages", .array(messages.map(encode)))]).compactText
    }

    static func encode(_ message: ChatMessage) -> JSONValue {
        var members: [(String, JSONValue)] = [("role", .string(message.role.rawValue))]
        if message.role == .assistant, message.content.isEmpty, !message.functionCalls.isEmpty {
            members.append(("content", .null))
        } else {
            members.append(("content", .string(message.content)))
        }
        if let reasoning = message.reasoning { members.append(("reasoning_content", .string(reasoning))) }
        if !message.functionCalls.isEmpty {
            members.append(("tool_calls", .array(message.functionCalls.map { call in
                .object([
                    ("id", .string(call.id)), ("type", .string("function")),
                    ("function", .object([("name", .string(call.name)), ("arguments", .string(call.argumentsText))])),
                ])
            })))
        }
        if let id = message.toolCallID { members.append(("tool_call_id", .string(id))) }
        if let name = message.name { members.append(("name", .string(name))) }
        return .object(members)
    }

    /// The messages of an OpenAI request body (`{"messages": […]}`) or of a bare array.
    ///
    /// - Throws: ``ConversationError/invalidHistory(index:reason:)`` naming the message and the
    ///   field at fault.
    package static func decode(_ text: String) throws(ConversationError) -> [ChatMessage] {
        let document: JSONValue
        do { document = try JSONValue(parsing: text) } catch { throw .invalidHistory(index: nil, reason: error.description) }
        let list: [JSONValue]
        switch document {
        case .array(let items): list = items
        case .object where document["messages"] != nil:
            guard case .array(let items)? = document["messages"] else {
                throw .invalidHistory(index: nil, reason: "\"messages\" is not an array")
            }
            list = items
        default:
            throw .invalidHistory(index: nil, reason: "expected an array of messages or an object with \"messages\"")
        }
        return try decode(messages: list)
    }

    /// The fields a message may have; any other is refused (`refusal` only as `null`,
    /// `annotations` only empty: what OpenAI's own replies carry).
    static let messageFields: Set<String> = ["role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content", "refusal", "annotations"]

    /// The messages of a request's `messages` array.
    ///
    /// - Throws: ``ConversationError/invalidHistory(index:reason:)`` naming the message and the
    ///   field at fault, including a field Typeset does not read.
    package static func decode(messages list: [JSONValue]) throws(ConversationError) -> [ChatMessage] {
        var result: [ChatMessage] = []
        for (index, item) in list.enumerated() {
            result.append(try decode(item, index: index))
        }
        return result
    }

    private static func decode(_ item: JSONValue, index: Int) throws(ConversationError) -> ChatMessage {
        func fail(_ reason: String) -> ConversationError { .invalidHistory(index: index, reason: reason) }
        guard case .object(let members) = item else { throw fail("not an object") }
        if let unknown = members.first(where: { !messageFields.contains($0.0) })?.0 {
            throw fail("\"\(unknown)\" is not a message field Typeset reads")
        }
        if let refusal = item["refusal"], refusal != .null { throw fail("\"refusal\" must be null") }
        if let annotations = item["annotations"], annotations != .array([]) { throw fail("\"annotations\" must be empty") }
        guard case .string(let roleText)? = item["role"] else { throw fail("missing \"role\"") }
        // "developer" is OpenAI's newer name for system instructions.
        guard let role = ChatMessage.Role(rawValue: roleText == "developer" ? "system" : roleText) else {
            throw fail("unknown role \"\(roleText)\"")
        }
        var message = ChatMessage(role: role, content: "")
        switch item["content"] {
        case nil, .null?: break
        case .string(let text)?: message.content = text
        case .array(let parts)?:
            for part in parts {
                guard part["type"] == .string("text"), case .string(let text)? = part["text"] else {
                    throw fail("only text content parts are supported")
                }
                message.content += text
            }
        default: throw fail("\"content\" must be a string, null or an array of text parts")
        }
        if case .string(let reasoning)? = item["reasoning_content"] { message.reasoning = reasoning }
        if case .array(let calls)? = item["tool_calls"] {
            guard role == .assistant else { throw fail("only assistant messages carry tool_calls") }
            for (callIndex, call) in calls.enumerated() {
                guard let function = call["function"], case .string(let name)? = function["name"] else {
                    throw fail("tool_calls[\(callIndex)] has no function name")
                }
                let arguments: JSONValue
                switch function["arguments"] {
                case .string(let text)?:
                    do { arguments = try JSONValue(parsing: text) } catch {
                        throw fail("tool_calls[\(callIndex)].function.arguments is not JSON: \(error)")
                    }
                case .object?: arguments = function["arguments"]!
                case nil: arguments = .object([])
                default: throw fail("tool_calls[\(callIndex)].function.arguments must be a JSON string or object")
                }
                let id: String
                if case .string(let given)? = call["id"] { id = given } else { id = "call_\(callIndex + 1)" }
                message.functionCalls.append(FunctionCall(id: id, name: name, arguments: arguments))
            }
        }
        if case .string(let id)? = item["tool_call_id"] { message.toolCallID = id }
        if case .string(let name)? = item["name"] { message.name = name }
        return message
    }
}
