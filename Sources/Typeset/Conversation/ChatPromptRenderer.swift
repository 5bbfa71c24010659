import Foundation
import ChatTemplating
import TypesetGrammar
import TypesetTokenizer

/// Turns a conversation into prompt tokens: renders it with the model's chat template (or the
/// plain fallback for models without one), describes registered functions, and tokenizes the
/// result so that only the template's own markup can produce control tokens.
struct ChatPromptRenderer: Sendable {
    /// The parsed template, the error that kept it from parsing, or `nil` when the model has none.
    let template: Result<ChatTemplate, ChatTemplateError>?
    let tokenizer: Tokenizer

    // MARK: Rendering

    /// The prompt text for `messages`, ending where the assistant's reply begins.
    func render(
        _ messages: [ChatMessage], functions: [FunctionDefinition], format: FunctionCallFormat, enableThinking: Bool?,
        addGenerationPrompt: Bool = true, reasoningEffort: String? = nil
    ) throws(ConversationError) -> String {
        guard let template else { return plainText(messages, functions: functions, format: format) }
        let parsed: ChatTemplate
        switch template {
        case .success(let value): parsed = value
        case .failure(let error): throw .template(error.description)
        }
        let nativeTools = parsed.mentionsTools
        let nativeCalls = parsed.mentionsToolCalls
        var list = messages
        if !functions.isEmpty, !nativeTools {
            let description = Self.functionInstructions(functions, format: format)
            if let first = list.first, first.role == .system {
                list[0].content = first.content + "\n\n" + description
            } else {
                list.insert(.system(description), at: 0)
            }
        }
        let values = list.map { templateValue(for: $0, nativeCalls: nativeCalls, nativeTools: nativeTools, format: format) }
        var variables = Self.today()
        if let enableThinking { variables["enable_thinking"] = .boolean(enableThinking) }
        if let reasoningEffort { variables["reasoning_effort"] = .string(reasoningEffort) }
        let tools: [TemplateValue]? = functions.isEmpty || !nativeTools ? nil : functions.map { function in
            .object([
                ("type", .string("function")),
                ("function", .object([
                    ("name", .string(function.name)), ("description", .string(function.description)),
                    ("parameters", Self.templateValue(function.parameters)),
                ])),
            ])
        }
        let vocabulary = tokenizer.vocabulary
        do {
            return try parsed.render(
                messages: values, tools: tools, addGenerationPrompt: addGenerationPrompt,
                bosToken: vocabulary.bosTokenID.map { vocabulary.tokens[$0] } ?? "",
                eosToken: vocabulary.eosTokenID.map { vocabulary.tokens[$0] } ?? "",
                variables: variables)
        } catch {
            throw .template(error.description)
        }
    }

    /// Today's date, as the templates that print it read it (Llama 3's `date_string`,
    /// "06 Dec 2026"; `datetime`, "Dec 06 2026"), in the local time zone, as llama.cpp gives
    /// it: without it, Llama 3.x's template tells the model it is 26 July 2024.
    static func today(_ now: Date = Date()) -> [String: TemplateValue] {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .current
        let parts = calendar.dateComponents([.day, .month, .year], from: now)
        let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"][(parts.month ?? 1) - 1]
        let day = (parts.day ?? 1) < 10 ? "0\(parts.day ?? 1)" : "\(parts.day ?? 1)"
        let year = parts.year ?? 1970
        return ["date_string": .string("\(day) \(month) \(year)"), "datetime": .string("\(month) \(day) \(year)")]
    }

    private func templateValue(for message: ChatMessage, nativeCalls: Bool, nativeTools: Bool, format: FunctionCallFormat) -> TemplateValue {
        var role = message.role.rawValue
        var content = message.content
        var members: [(String, TemplateValue)] = []
        if message.role == .assistant, !message.functionCalls.isEmpty, !nativeCalls {
            content += format.text(of: message.functionCalls)
        }
        if message.role == .tool, !nativeTools {
            // Templates without tool support know only system, user and assistant turns.
            role = "user"
            content = format.toolResponse(content)
        }
        members.append(("role", .string(role)))
        members.append(("content", .string(content)))
        if let reasoning = message.reasoning { members.append(("reasoning_content", .string(reasoning))) }
        if message.role == .assistant, !message.functionCalls.isEmpty, nativeCalls {
            members.append(("tool_calls", .array(message.functionCalls.map { call in
                .object([
                    ("id", .string(call.id)), ("type", .string("function")),
                    ("function", .object([("name", .string(call.name)), ("arguments", Self.templateValue(call.arguments))])),
                ])
            })))
        }
        if let id = message.toolCallID { members.append(("tool_call_id", .string(id))) }
        if let name = message.name { members.append(("name", .string(name))) }
        return .object(members)
    }

    /// Models without a template (base models): the messages' text, one paragraph each, so the
    /// model continues the text.
    private func plainText(_ messages: [ChatMessage], functions: [FunctionDefinition], format: FunctionCallFormat) -> String {
        var paragraphs = functions.isEmpty ? [] : [Self.functionInstructions(functions, format: format)]
        for message in messages {
            var text = message.content
            if !message.functionCalls.isEmpty { text += format.text(of: message.functionCalls) }
            if !text.isEmpty { paragraphs.append(text) }
        }
        return paragraphs.joined(separator: "\n\n")
    }

    // MARK: Functions

    /// The system text describing `functions` to a model whose template cannot.
    static func functionInstructions(_ functions: [FunctionDefinition], format: FunctionCallFormat) -> String {
        let signatures = functions.map { function in
            JSONValue.object([
                ("name", .string(function.name)), ("description", .string(function.description)),
                ("parameters", function.parameters),
            ]).compactText
        }
        switch format {
        case .hermes:
            return """
            You may call functions to answer. These are available, each with a JSON Schema for its arguments:
            <tools>
            \(signatures.joined(separator: "\n"))
            </tools>
            To call one, write <tool_call>
            {"name": <function name>, "arguments": <arguments object>}
            </tool_call> and stop. Results come back inside <tool_response></tool_response>.
            """
        case .json:
            return """
            You may call functions to answer. These are available, each with a JSON Schema for its arguments:
            \(signatures.joined(separator: "\n"))
            To call one, reply with only the JSON object {"name": <function name>, "arguments": <arguments object>}.
            """
        case .lfm:
            // LFM's own wording (its template's), then how a call is written.
            return """
            List of tools: <|tool_list_start|>[\(signatures.joined(separator: ", "))]<|tool_list_end|>
            To call tools, write <|tool_call_start|>[function_name(argument="value", …)]<|tool_call_end|> and stop. \
            Results come back inside <|tool_response_start|><|tool_response_end|>.
            """
        }
    }

    /// The JSON Schema a call to one of `functions` satisfies: `{"name": …, "arguments": …}`
    /// with the arguments held to that function's parameter schema.
    package static func callSchema(_ functions: [FunctionDefinition]) -> JSONValue {
        let alternatives = callAlternatives(functions)
        return alternatives.count == 1 ? alternatives[0] : .object([("anyOf", .array(alternatives))])
    }

    /// One schema per function: `{"name": <its name>, "arguments": <its parameters>}`.
    static func callAlternatives(_ functions: [FunctionDefinition]) -> [JSONValue] {
        functions.map { function in
            JSONValue.object([
                ("type", .string("object")),
                ("properties", .object([
                    ("name", .object([("const", .string(function.name))])),
                    ("arguments", function.parameters),
                ])),
                ("required", .array([.string("name"), .string("arguments")])),
                ("additionalProperties", .bool(false)),
            ])
        }
    }

    static func templateValue(_ value: JSONValue) -> TemplateValue {
        switch value {
        case .null: return .none
        case .bool(let flag): return .boolean(flag)
        case .number(let text):
            if let integer = Int(text) { return .integer(integer) }
            return .double(Double(text) ?? 0)
        case .string(let text): return .string(text)
        case .array(let items): return .array(items.map(templateValue))
        case .object(let members): return .object(members.map { ($0.0, templateValue($0.1)) })
        }
    }

    // MARK: Tokens

    /// The prompt's tokens. Message text is encoded as plain text wherever it appears in the
    /// rendered prompt, so a message containing `<|im_end|>` cannot forge a turn; the rest
    /// (the template's markup) has its control tokens recognised.
    func tokens(
        for messages: [ChatMessage], functions: [FunctionDefinition], format: FunctionCallFormat,
        enableThinking: Bool?, addBOS: Bool = true
    ) throws(ConversationError) -> [Int] {
        try rendered(messages, functions: functions, format: format, enableThinking: enableThinking, addBOS: addBOS).tokens
    }

    /// The prompt's text (``render(_:functions:format:enableThinking:addGenerationPrompt:)``)
    /// and its tokens (``tokens(for:functions:format:enableThinking:addBOS:)``), followed by
    /// `prefill`, the beginning of the reply the model continues (encoded as text, as message
    /// content is).
    func rendered(
        _ messages: [ChatMessage], functions: [FunctionDefinition], format: FunctionCallFormat,
        enableThinking: Bool?, addBOS: Bool = true, addGenerationPrompt: Bool = true, prefill: String = "",
        reasoningEffort: String? = nil
    ) throws(ConversationError) -> (text: String, tokens: [Int]) {
        let rendered = try render(
            messages, functions: functions, format: format, enableThinking: enableThinking, addGenerationPrompt: addGenerationPrompt,
            reasoningEffort: reasoningEffort)
        let vocabulary = tokenizer.vocabulary
        var result: [Int] = []
        if addBOS, vocabulary.addBOS, let bos = vocabulary.bosTokenID, !rendered.hasPrefix(vocabulary.tokens[bos]) {
            result.append(bos)
        }
        var cursor = rendered.startIndex
        func appendMarkup(upTo end: String.Index) {
            guard cursor < end else { return }
            result += tokenizer.encode(String(rendered[cursor ..< end]), addingSpecialTokens: false, parsingSpecialTokens: true)
        }
        for message in messages {
            let text = message.content.trimmingWhitespace
            guard !text.isEmpty, let range = rendered.range(of: text, range: cursor ..< rendered.endIndex) else { continue }
            appendMarkup(upTo: range.lowerBound)
            result += tokenizer.encode(text, addingSpecialTokens: false, parsingSpecialTokens: false)
            cursor = range.upperBound
        }
        appendMarkup(upTo: rendered.endIndex)
        if !prefill.isEmpty { result += tokenizer.encode(prefill, addingSpecialTokens: false, parsingSpecialTokens: false) }
        return (rendered + prefill, result)
    }
}

extension String {
    /// The string without leading and trailing spaces, tabs and newlines.
    var trimmingWhitespace: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first ... last])
    }
}
