import Tokenizer

/// A minimal chat prompt builder for single-turn use (`typeset run`) until full chat-template
/// rendering lands: ChatML for models whose template uses `<|im_start|>` (SmolLM2, Qwen), Gemma's
/// turn markers for templates using `<start_of_turn>`, and the bare text for models without a
/// template (base models such as Gemma 3 270M).
///
/// A system turn is added only when one is given. (SmolLM2's template would add its default
/// "You are a helpful AI assistant named SmolLM…" turn; with it, the 135M model answers
/// "What is the capital of France?" with French free association under greedy decoding, in
/// llama.cpp as here, and without it with "The capital of France is Paris.")
public enum ChatPrompt: Sendable, Equatable {
    /// ChatML (`<|im_start|>role\n…<|im_end|>`).
    case chatML
    /// Gemma's turns (the system message is folded into the first user turn).
    case gemma
    /// No template: the user text as is.
    case plain

    /// The format `template` (the GGUF's `tokenizer.chat_template`) implies.
    public init(template: String?) {
        guard let template else { self = .plain; return }
        if template.contains("<|im_start|>") {
            self = .chatML
        } else if template.contains("<start_of_turn>") {
            self = .gemma
        } else {
            self = .plain
        }
    }

    /// The prompt for one user message as alternating pieces: template markup (`true`: its
    /// control tokens are parsed) and message text (`false`: encoded as plain text, so a
    /// message can never forge a turn). Ends where the assistant's reply begins.
    public func segments(system: String?, user: String) -> [(text: String, isMarkup: Bool)] {
        switch self {
        case .chatML:
            var result: [(String, Bool)] = []
            if let system {
                result += [("<|im_start|>system\n", true), (system, false), ("<|im_end|>\n", true)]
            }
            return result + [("<|im_start|>user\n", true), (user, false), ("<|im_end|>\n<|im_start|>assistant\n", true)]
        case .gemma:
            return [("<start_of_turn>user\n", true), (system.map { "\($0)\n\n\(user)" } ?? user, false),
                    ("<end_of_turn>\n<start_of_turn>model\n", true)]
        case .plain:
            return [(system.map { "\($0)\n\n\(user)" } ?? user, false)]
        }
    }

    /// The prompt's token ids: BOS where the model adds one, then each segment encoded on its own.
    public func tokens(system: String?, user: String, tokenizer: Tokenizer) -> [Int] {
        var result: [Int] = []
        if tokenizer.vocabulary.addBOS, let bos = tokenizer.vocabulary.bosTokenID { result.append(bos) }
        for segment in segments(system: system, user: user) where !segment.text.isEmpty {
            result += tokenizer.encode(segment.text, addingSpecialTokens: false, parsingSpecialTokens: segment.isMarkup)
        }
        return result
    }
}
