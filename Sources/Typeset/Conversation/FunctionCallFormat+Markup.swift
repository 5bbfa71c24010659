import TypesetGrammar

/// What each function-call format writes around a call, in one place for the router that
/// detects calls, the decoder that constrains and closes them, and the renderer that writes
/// past calls back into prompts.
///
///     hermes  <tool_call>⏎{"name": "f", "arguments": {…}}⏎</tool_call>   (one per call)
///     lfm     <|tool_call_start|>[f(a=1), g(b="x")]<|tool_call_end|>   (one list of calls)
///     json    {"name": "f", "arguments": {…}}                          (the whole reply)
extension FunctionCallFormat {
    /// The markup that opens a call (`nil`: the call is a bare JSON object).
    var opening: String? {
        switch self {
        case .hermes: "<tool_call>"
        case .lfm: "<|tool_call_start|>"
        case .json: nil
        }
    }

    /// What follows the opening before the call itself, as the model was trained to write it
    /// (Typeset writes it for the model).
    var afterOpening: String { self == .hermes ? "\n" : "" }

    /// The markup Typeset writes once a call's grammar is complete.
    var closing: String {
        switch self {
        case .hermes: "\n</tool_call>"
        case .lfm: "<|tool_call_end|>"
        case .json: ""
        }
    }

    /// Whether each call has its own markup, so another may follow a closed one (Hermes);
    /// LFM's calls share one list, and a JSON call is the whole reply.
    var marksEachCall: Bool { self == .hermes }

    /// How the call grammar is compiled: as values (closed objects, bounded integers), with
    /// the whitespace models put in the calls they start on their own (Qwen2.5-Coder indents
    /// its arguments), up to 32 bytes in a row; for LFM in Python syntax, with a space after
    /// a comma or colon as Python writes literals (`["a", "b"]`), several calls in the list
    /// when `several`.
    func callGrammarOptions(several: Bool = true) -> JSONSchemaOptions {
        var options = JSONSchemaOptions.generation
        if self == .lfm {
            options.syntax = .pythonCalls(several: several)
            options.whitespace = .flexible(maximum: 1)
        } else {
            options.whitespace = .flexible(maximum: 32)
        }
        return options
    }

    /// `calls` as the model writes them, markup included.
    func text(of calls: [FunctionCall]) -> String {
        switch self {
        case .lfm:
            return opening! + PythonCallSyntax.text(of: calls) + closing
        case .hermes, .json:
            return calls.map { call in
                let body = JSONValue.object([("name", .string(call.name)), ("arguments", call.arguments)]).compactText
                return self == .hermes ? opening! + afterOpening + body + closing : body
            }.joined(separator: "\n")
        }
    }

    /// The calls in `text`, the complete sentence of this format's call grammar (without the
    /// markup), numbered from `firstNumber` (`call_1`, `call_2`, …).
    func calls(in text: String, firstNumber: Int) -> [FunctionCall] {
        let parsed: [(name: String, arguments: JSONValue)]
        if self == .lfm {
            parsed = PythonCallSyntax.calls(in: text) ?? []
        } else {
            let value = (try? JSONValue(parsing: text)) ?? .object([])
            var name = ""
            if case .string(let text)? = value["name"] { name = text }
            parsed = [(name, value["arguments"] ?? .object([]))]
        }
        return parsed.enumerated().map { index, call in
            FunctionCall(id: "call_\(firstNumber + index)", name: call.name, arguments: call.arguments)
        }
    }

    /// How a tool's result is wrapped for a model whose template has no tool turns (it is
    /// then sent as the user's).
    func toolResponse(_ content: String) -> String {
        switch self {
        case .hermes: "<tool_response>\n\(content)\n</tool_response>"
        case .lfm: "<|tool_response_start|>\(content)<|tool_response_end|>"
        case .json: content
        }
    }
}
