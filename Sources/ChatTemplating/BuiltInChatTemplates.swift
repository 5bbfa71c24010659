/// llama.cpp's built-in chat formats, by the names llama-server's `--chat-template` takes
/// (`chatml`, `llama3`, `mistral-v7`, …), written as Jinja templates.
///
/// llama.cpp keeps these formats as C++ code (`llm_chat_apply_template`) for models whose
/// files carry no template, or for users who name a format instead of writing one. Typeset
/// renders every conversation through Jinja, so each format is a template here that renders
/// what llama.cpp's code writes, byte for byte, for conversations of `system`, `user` and
/// `assistant` messages of text (the tests compare both on such conversations, from
/// expectations that llama-server wrote). Like llama.cpp's formats, they render text only:
/// no tools, no tool calls (the templates do not mention `tools`, so Typeset gives a tool's
/// result to them as a user message in its own wrapper, where llama.cpp would write a `tool`
/// turn). A message without text renders as empty text. 44 of llama.cpp's 54 names; not
/// rwkv-world, gigachat, yandex, the bailing and hunyuan formats, pangu-embedded.
package enum BuiltInChatTemplates {
    /// The names, in llama.cpp's order.
    package static let names: [String] = templates.map(\.name)

    /// The Jinja source of the format `name`, or `nil` when there is no such format.
    package static func source(named name: String) -> String? {
        templates.first { $0.name == name }?.source
    }

    /// llama.cpp's `trim`: ASCII whitespace only (`isspace` byte by byte), where Jinja's
    /// `trim` also takes Unicode's spaces (a no-break space, an ideographic space).
    private static let trim = "trim(' \\t\\n\\r\\v\\f')"

    /// Each message's text as llama.cpp reads it: its content, or "" when it has none.
    private static let content = "{%- set content = message.content if message.content is string else '' -%}"

    /// For every message, `body` (with `content` and `message` set); then, when a reply is to
    /// follow, `generationPrompt`.
    private static func eachMessage(_ body: String, generationPrompt: String? = nil) -> String {
        var source = "{%- for message in messages -%}\(content)\(body){%- endfor -%}"
        if let generationPrompt { source += "{%- if add_generation_prompt -%}{{- \(generationPrompt) -}}{%- endif -%}" }
        return source
    }

    /// Llama 2's `[INST]` format: system messages inside `<<SYS>>` (or, without
    /// `systemMessages`, as plain text before the first instruction), each later turn opened
    /// with `[INST] ` (`<s>[INST] ` with `bosInHistory`), texts trimmed with `trims`.
    private static func llama2(systemMessages: Bool, bosInHistory: Bool, trims: Bool) -> String {
        let text = trims ? "(content | \(trim))" : "content"
        let system = systemMessages ? "'<<SYS>>\\n' + \(text) + '\\n<</SYS>>\\n\\n'" : "\(text) + '\\n'"
        return "{%- set turn = namespace(open=true) -%}{{- '[INST] ' -}}" + eachMessage(
            "{%- if not turn.open -%}{%- set turn.open = true -%}{{- '\(bosInHistory ? "<s>[INST] " : "[INST] ")' -}}{%- endif -%}"
                + "{%- if message.role == 'system' -%}{{- \(system) -}}"
                + "{%- elif message.role == 'user' -%}{{- \(text) + ' [/INST]' -}}"
                + "{%- else -%}{{- \(text) + '</s>' -}}{%- set turn.open = false -%}{%- endif -%}")
    }

    /// Mistral's v1 and v3 formats: system texts and user instructions inside one `[INST]`
    /// turn, closed by each assistant reply.
    private static func mistral(leadingSpace: String, trailingSpace: String, trimsReplies: Bool) -> String {
        "{%- set turn = namespace(open=false) -%}" + eachMessage(
            "{%- if not turn.open -%}{{- '\(leadingSpace)[INST]\(trailingSpace)' -}}{%- set turn.open = true -%}{%- endif -%}"
                + "{%- if message.role == 'system' -%}{{- content + '\\n\\n' -}}"
                + "{%- elif message.role == 'user' -%}{{- content + '\(leadingSpace)[/INST]' -}}"
                + "{%- else -%}{{- '\(trailingSpace)' + \(trimsReplies ? "(content | \(trim))" : "content") + '</s>' -}}{%- set turn.open = false -%}{%- endif -%}")
    }

    /// Mistral's v7 format: `[SYSTEM_PROMPT]`, `[INST]`, and replies ended with `</s>`.
    private static func mistralV7(space: String) -> String {
        eachMessage(
            "{%- if message.role == 'system' -%}{{- '[SYSTEM_PROMPT]\(space)' + content + '[/SYSTEM_PROMPT]' -}}"
                + "{%- elif message.role == 'user' -%}{{- '[INST]\(space)' + content + '[/INST]' -}}"
                + "{%- else -%}{{- '\(space)' + content + '</s>' -}}{%- endif -%}")
    }

    /// EXAONE 3 and 4: `[|role|]` turns; EXAONE 4 also writes tool results.
    private static func exaone(tools: Bool) -> String {
        eachMessage(
            "{%- if message.role == 'system' -%}{{- '[|system|]' + (content | \(trim)) + '[|endofturn|]\\n' -}}"
                + "{%- elif message.role == 'user' -%}{{- '[|user|]' + (content | \(trim)) + '\\n' -}}"
                + "{%- elif message.role == 'assistant' -%}{{- '[|assistant|]' + (content | \(trim)) + '[|endofturn|]\\n' -}}"
                + (tools ? "{%- elif message.role == 'tool' -%}{{- '[|tool|]' + (content | \(trim)) + '[|endofturn|]\\n' -}}" : "")
                + "{%- endif -%}",
            generationPrompt: "'[|assistant|]'")
    }

    /// Granite 3.x and 4: `<|start_of_role|>` turns; a tool call as the role
    /// `assistant_tool_call` (written as itself by 3.x, as `assistant` by 4).
    private static func granite(namesToolCallsAssistant: Bool) -> String {
        let opening = namesToolCallsAssistant
            ? "{%- if message.role == 'assistant_tool_call' -%}{{- '<|start_of_role|>assistant<|end_of_role|><|tool_call|>' -}}"
                + "{%- else -%}{{- '<|start_of_role|>' + message.role + '<|end_of_role|>' -}}{%- endif -%}"
            : "{{- '<|start_of_role|>' + message.role + '<|end_of_role|>' -}}"
                + "{%- if message.role == 'assistant_tool_call' -%}{{- '<|tool_call|>' -}}{%- endif -%}"
        return eachMessage(opening + "{{- content + '<|end_of_text|>\\n' -}}", generationPrompt: "'<|start_of_role|>assistant<|end_of_role|>'")
    }

    /// Gemma's turns: `model` for the assistant, system texts (trimmed, joined) put before the
    /// next user turn's text.
    private static let gemma = "{%- set system = namespace(text='') -%}" + eachMessage(
        "{%- if message.role == 'system' -%}{%- set system.text = system.text + (content | \(trim)) -%}{%- else -%}"
            + "{%- set role = 'model' if message.role == 'assistant' else message.role -%}"
            + "{{- '<start_of_turn>' + role + '\\n' -}}"
            + "{%- if system.text and role != 'model' -%}{{- system.text + '\\n\\n' -}}{%- set system.text = '' -%}{%- endif -%}"
            + "{{- (content | \(trim)) + '<end_of_turn>\\n' -}}{%- endif -%}",
        generationPrompt: "'<start_of_turn>model\\n'")

    /// Orion's `Human:` / `Assistant:` turns, system texts put before the next user text.
    private static let orion = "{%- set system = namespace(text='') -%}" + eachMessage(
        "{%- if message.role == 'system' -%}{%- set system.text = system.text + content -%}"
            + "{%- elif message.role == 'user' -%}{{- 'Human: ' -}}"
            + "{%- if system.text -%}{{- system.text + '\\n\\n' -}}{%- set system.text = '' -%}{%- endif -%}"
            + "{{- content + '\\n\\nAssistant: </s>' -}}"
            + "{%- else -%}{{- content + '</s>' -}}{%- endif -%}")

    /// Vicuna's `USER:` / `ASSISTANT:` lines; the Orca variant marks the system text `SYSTEM:`.
    private static func vicuna(orca: Bool) -> String {
        eachMessage(
            "{%- if message.role == 'system' -%}{{- \(orca ? "'SYSTEM: ' + content + '\\n'" : "content + '\\n\\n'") -}}"
                + "{%- elif message.role == 'user' -%}{{- 'USER: ' + content + '\\n' -}}"
                + "{%- elif message.role == 'assistant' -%}{{- 'ASSISTANT: ' + content + '</s>\\n' -}}{%- endif -%}",
            generationPrompt: "'ASSISTANT:'")
    }

    private static let templates: [(name: String, source: String)] = [
        ("chatml", eachMessage("{{- '<|im_start|>' + message.role + '\\n' + content + '<|im_end|>\\n' -}}", generationPrompt: "'<|im_start|>assistant\\n'")),
        ("llama2", llama2(systemMessages: false, bosInHistory: false, trims: false)),
        ("llama2-sys", llama2(systemMessages: true, bosInHistory: false, trims: false)),
        ("llama2-sys-bos", llama2(systemMessages: true, bosInHistory: true, trims: false)),
        ("llama2-sys-strip", llama2(systemMessages: true, bosInHistory: false, trims: true)),
        ("mistral-v1", mistral(leadingSpace: " ", trailingSpace: " ", trimsReplies: false)),
        ("mistral-v3", mistral(leadingSpace: "", trailingSpace: " ", trimsReplies: true)),
        ("mistral-v3-tekken", mistral(leadingSpace: "", trailingSpace: "", trimsReplies: false)),
        ("mistral-v7", mistralV7(space: " ")),
        ("mistral-v7-tekken", mistralV7(space: "")),
        ("phi3", eachMessage("{{- '<|' + message.role + '|>\\n' + content + '<|end|>\\n' -}}", generationPrompt: "'<|assistant|>\\n'")),
        ("phi4", eachMessage("{{- '<|im_start|>' + message.role + '<|im_sep|>' + content + '<|im_end|>' -}}", generationPrompt: "'<|im_start|>assistant<|im_sep|>'")),
        ("falcon3", eachMessage("{{- '<|' + message.role + '|>\\n' + content + '\\n' -}}", generationPrompt: "'<|assistant|>\\n'")),
        ("zephyr", eachMessage("{{- '<|' + message.role + '|>\\n' + content + '<|endoftext|>\\n' -}}", generationPrompt: "'<|assistant|>\\n'")),
        ("monarch", eachMessage("{{- ('' if loop.first else '<s>') + message.role + '\\n' + content + '</s>\\n' -}}", generationPrompt: "'<s>assistant\\n'")),
        ("gemma", gemma),
        ("orion", orion),
        ("openchat", eachMessage(
            "{%- if message.role == 'system' -%}{{- content + '<|end_of_turn|>' -}}"
                + "{%- else -%}{{- 'GPT4 Correct ' + (message.role[:1] | upper) + message.role[1:] + ': ' + content + '<|end_of_turn|>' -}}{%- endif -%}",
            generationPrompt: "'GPT4 Correct Assistant:'")),
        ("vicuna", vicuna(orca: false)),
        ("vicuna-orca", vicuna(orca: true)),
        ("deepseek", eachMessage(
            "{%- if message.role == 'system' -%}{{- content -}}"
                + "{%- elif message.role == 'user' -%}{{- '### Instruction:\\n' + content + '\\n' -}}"
                + "{%- elif message.role == 'assistant' -%}{{- '### Response:\\n' + content + '\\n<|EOT|>\\n' -}}{%- endif -%}",
            generationPrompt: "'### Response:\\n'")),
        ("deepseek2", eachMessage(
            "{%- if message.role == 'system' -%}{{- content + '\\n\\n' -}}"
                + "{%- elif message.role == 'user' -%}{{- 'User: ' + content + '\\n\\n' -}}"
                + "{%- elif message.role == 'assistant' -%}{{- 'Assistant: ' + content + '<｜end▁of▁sentence｜>' -}}{%- endif -%}",
            generationPrompt: "'Assistant:'")),
        ("deepseek3", eachMessage(
            "{%- if message.role == 'system' -%}{{- content + '\\n\\n' -}}"
                + "{%- elif message.role == 'user' -%}{{- '<｜User｜>' + content -}}"
                + "{%- elif message.role == 'assistant' -%}{{- '<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>' -}}{%- endif -%}",
            generationPrompt: "'<｜Assistant｜>'")),
        ("deepseek-ocr", eachMessage("{{- content -}}")),
        ("command-r", eachMessage(
            "{%- set turn = {'system': 'SYSTEM', 'user': 'USER', 'assistant': 'CHATBOT'}.get(message.role) -%}"
                + "{%- if turn -%}{{- '<|START_OF_TURN_TOKEN|><|' + turn + '_TOKEN|>' + (content | \(trim)) + '<|END_OF_TURN_TOKEN|>' -}}{%- endif -%}",
            generationPrompt: "'<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>'")),
        ("llama3", eachMessage(
            "{{- '<|start_header_id|>' + message.role + '<|end_header_id|>\\n\\n' + (content | \(trim)) + '<|eot_id|>' -}}",
            generationPrompt: "'<|start_header_id|>assistant<|end_header_id|>\\n\\n'")),
        ("chatglm3", "{{- '[gMASK]sop' -}}" + eachMessage("{{- '<|' + message.role + '|>\\n ' + content -}}", generationPrompt: "'<|assistant|>'")),
        ("chatglm4", "{{- '[gMASK]<sop>' -}}" + eachMessage("{{- '<|' + message.role + '|>\\n' + content -}}", generationPrompt: "'<|assistant|>\\n'")),
        ("glmedge", eachMessage("{{- '<|' + message.role + '|>\\n' + content -}}", generationPrompt: "'<|assistant|>'")),
        ("minicpm", eachMessage(
            "{%- if message.role == 'user' -%}{{- '<用户>' + (content | \(trim)) + '<AI>' -}}{%- else -%}{{- content | \(trim) -}}{%- endif -%}")),
        ("exaone3", exaone(tools: false)),
        ("exaone4", exaone(tools: true)),
        ("exaone-moe", eachMessage(
            "{%- if message.role in ['system', 'user', 'assistant', 'tool'] -%}"
                + "{{- '<|' + message.role + '|>\\n' + (content | \(trim)) + '<|endofturn|>\\n' -}}{%- endif -%}",
            generationPrompt: "'<|assistant|>\\n'")),
        ("granite", granite(namesToolCallsAssistant: false)),
        ("granite-4.0", granite(namesToolCallsAssistant: true)),
        ("granite-4.1", granite(namesToolCallsAssistant: true)),
        ("megrez", eachMessage(
            "{{- '<|role_start|>' + message.role + '<|role_end|>' + content + '<|turn_end|>' -}}",
            generationPrompt: "'<|role_start|>assistant<|role_end|>'")),
        ("llama4", eachMessage(
            "{{- '<|header_start|>' + message.role + '<|header_end|>\\n\\n' + (content | \(trim)) + '<|eot|>' -}}",
            generationPrompt: "'<|header_start|>assistant<|header_end|>\\n\\n'")),
        ("smolvlm", "{{- '<|im_start|>' -}}" + eachMessage(
            "{%- if message.role == 'system' -%}{{- content + '\\n\\n' -}}"
                + "{%- elif message.role == 'user' -%}{{- 'User: ' + content + '<end_of_utterance>\\n' -}}"
                + "{%- else -%}{{- 'Assistant: ' + content + '<end_of_utterance>\\n' -}}{%- endif -%}",
            generationPrompt: "'Assistant:'")),
        ("gpt-oss", eachMessage(
            "{{- '<|start|>' + message.role + '<|message|>' + content + ('<|return|>' if message.role == 'assistant' else '<|end|>') -}}",
            generationPrompt: "'<|start|>assistant'")),
        ("kimi-k2", eachMessage(
            "{%- set opening = {'system': '<|im_system|>system', 'user': '<|im_user|>user', 'assistant': '<|im_assistant|>assistant', 'tool': '<|im_system|>tool'}.get(message.role) -%}"
                + "{%- if opening -%}{{- opening + '<|im_middle|>' -}}{%- endif -%}{{- content + '<|im_end|>' -}}",
            generationPrompt: "'<|im_assistant|>assistant<|im_middle|>'")),
        ("seed_oss", eachMessage(
            "{{- '<seed:bos>' + message.role + '\\n' + ((content | \(trim)) if message.role == 'assistant' else content) + '<seed:eos>' -}}",
            generationPrompt: "'<seed:bos>assistant\\n'")),
        ("grok-2", eachMessage(
            "{%- if message.role == 'system' -%}{{- 'System: ' + (content | \(trim)) + '<|separator|>\\n\\n' -}}"
                + "{%- elif message.role == 'user' -%}{{- 'Human: ' + (content | \(trim)) + '<|separator|>\\n\\n' -}}"
                + "{%- elif message.role == 'assistant' -%}{{- 'Assistant: ' + content + '<|separator|>\\n\\n' -}}{%- endif -%}",
            generationPrompt: "'Assistant:'")),
        ("solar-open", eachMessage(
            "{{- '<|begin|>' + message.role + '<|content|>' + content + '<|end|>' -}}",
            generationPrompt: "'<|begin|>assistant'")),
    ]
}
