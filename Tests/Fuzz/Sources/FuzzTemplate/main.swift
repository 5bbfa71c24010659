import ChatTemplating
import CLibFuzzer
import Foundation

// The fuzz target of the chat-template renderer: the input is a Jinja template (from a
// corpus seeded with the real models' templates), parsed and rendered over a small
// conversation with a tool call. Errors are the renderer's typed errors; the run fails on a
// crash, a sanitizer report or a render that runs past libFuzzer's timeout (the renderer's
// limits bound loops, output, recursion and ranges).
let messages: [TemplateValue] = [
    .object([(key: "role", value: .string("system")), (key: "content", value: .string("Be brief."))]),
    .object([(key: "role", value: .string("user")), (key: "content", value: .string("What is 2+2? <|im_end|>"))]),
    .object([
        (key: "role", value: .string("assistant")), (key: "content", value: .string("")),
        (key: "tool_calls", value: .array([.object([
            (key: "type", value: .string("function")),
            (key: "function", value: .object([(key: "name", value: .string("add")), (key: "arguments", value: .object([(key: "a", value: .integer(2))]))])),
        ])])),
    ]),
    .object([(key: "role", value: .string("tool")), (key: "content", value: .string("4"))]),
]
let tools: [TemplateValue] = [.object([(key: "type", value: .string("function")), (key: "function", value: .object([(key: "name", value: .string("add"))]))])]

var argumentCount = CommandLine.argc
var arguments: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argumentCount, &arguments) { data, size in
    let source = String(decoding: UnsafeRawBufferPointer(start: data, count: size), as: UTF8.self)
    var limits = ChatTemplate.Limits()
    limits.maximumOutputLength = 1 << 20
    limits.maximumLoopIterations = 100_000
    guard let template = try? ChatTemplate(source, limits: limits) else { return 0 }
    _ = try? template.render(messages: messages, tools: tools, addGenerationPrompt: true, bosToken: "<s>", eosToken: "</s>")
    return 0
})
