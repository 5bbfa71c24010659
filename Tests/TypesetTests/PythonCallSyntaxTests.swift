import Foundation
import TypesetGrammar
import Testing
@testable import Typeset
import TypesetTestSupport

/// LFM's call lists as Typeset writes and reads them, checked against Python itself: what
/// Typeset writes, Python's `ast` reads as the same calls with the same argument values, and
/// the call grammar accepts it.
@Suite struct PythonCallSyntaxTests {
    static let calls = [
        FunctionCall(id: "call_1", name: "get_weather", arguments: .object([("city", .string("São Paulo")), ("days", .number("3"))])),
        FunctionCall(id: "call_2", name: "note", arguments: .object([
            ("text", .string("line 1\n\"quoted\" \\ back\tslash 🎉")), ("pinned", .bool(true)), ("color", .null),
            ("score", .number("-2.5")), ("tags", .array([.string("a"), .number("1"), .bool(false)])),
            ("meta", .object([("nested", .object([("deep", .array([]))])), ("flag", .null)])),
        ])),
        FunctionCall(id: "call_3", name: "ping", arguments: .object([])),
    ]

    @Test func pythonReadsWhatTypesetWrites() throws {
        let text = PythonCallSyntax.text(of: Self.calls)
        let script = """
        import ast, json, sys
        tree = ast.parse(sys.stdin.read(), mode="eval")
        assert isinstance(tree.body, ast.List)
        print(json.dumps([[call.func.id, {k.arg: ast.literal_eval(k.value) for k in call.keywords}] for call in tree.body.elts]))
        """
        let (output, status) = try Python.run(script, input: text)
        #expect(status == 0, "python could not read \(text)")
        let read = try JSONValue(parsing: output)
        let expected = JSONValue.array(Self.calls.map { .array([.string($0.name), $0.arguments]) })
        #expect(read.compactTextWithDoubleNumbers == expected.compactTextWithDoubleNumbers)
    }

    @Test func typesetReadsBackWhatItWrites() throws {
        let text = PythonCallSyntax.text(of: Self.calls)
        let read = try #require(PythonCallSyntax.calls(in: text))
        #expect(read.map { $0.name } == Self.calls.map(\.name))
        #expect(read.map { $0.arguments } == Self.calls.map(\.arguments))
        #expect(FunctionCallFormat.lfm.calls(in: text, firstNumber: 1) == Self.calls)
        // Not a call list: nothing.
        for broken in ["", "[", "[f(]", "[f(a=)]", "[f(a=1) g()]", "f(a=1)", "[f(a=1)] trailing", "[f(a=\"open)]"] {
            #expect(PythonCallSyntax.calls(in: broken) == nil, "\(broken)")
        }
    }

    @Test func theCallGrammarAcceptsWhatTypesetWrites() throws {
        let function = FunctionDefinition(name: "note", description: "", parameters: try JSONValue(parsing: #"""
        {"type":"object","properties":{"text":{"type":"string"},"pinned":{"type":"boolean"},"color":{"type":["string","null"]},
         "score":{"type":"number"},"tags":{"type":"array"},"meta":{"type":"object"}},"required":["text"]}
        """#))
        let grammar = try Grammar(jsonSchema: ChatPromptRenderer.callSchema([function]), options: FunctionCallFormat.lfm.callGrammarOptions())
        let written = FunctionCallFormat.lfm.text(of: [Self.calls[1]])
        #expect(written.hasPrefix("<|tool_call_start|>") && written.hasSuffix("<|tool_call_end|>"))
        let list = written.dropFirst("<|tool_call_start|>".count).dropLast("<|tool_call_end|>".count)
        #expect(try grammar.matches(String(list)))
    }
}
