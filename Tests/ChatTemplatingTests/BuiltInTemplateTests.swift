import Testing
@testable import ChatTemplating

/// One of llama.cpp's built-in formats and one conversation, with the prompt llama-server wrote
/// for it (`builtin_templates.json`, written by `Fixtures/builtin_expected.py`).
struct BuiltInFormatCase: Sendable, CustomTestStringConvertible {
    var name: String
    var conversation: String
    var messages: [TemplateValue]
    var expected: String

    var testDescription: String { "\(name) / \(conversation)" }

    static func all() throws -> [BuiltInFormatCase] {
        guard case .object(let formats) = try Fixtures.json("builtin_templates.json") else { return [] }
        return formats.flatMap { format -> [BuiltInFormatCase] in
            guard case .array(let cases) = format.value else { return [] }
            return cases.compactMap { entry in
                guard case .string(let conversation)? = entry["conversation"], case .array(let messages)? = entry["messages"],
                      case .string(let prompt)? = entry["prompt"] else { return nil }
                return BuiltInFormatCase(name: format.key, conversation: conversation, messages: messages, expected: prompt)
            }
        }
    }
}

@Suite("llama.cpp's built-in chat formats render as llama-server writes them")
struct BuiltInTemplateTests {
    static let cases = (try? BuiltInFormatCase.all()) ?? []

    @Test("Every built-in format has expectations, and every expectation a format")
    func everyFormatIsChecked() {
        #expect(Set(Self.cases.map(\.name)) == Set(BuiltInChatTemplates.names))
        #expect(Self.cases.count == 5 * BuiltInChatTemplates.names.count)
    }

    @Test("Rendered like llama.cpp's C++ format", arguments: cases)
    func render(_ testCase: BuiltInFormatCase) throws {
        let source = try #require(BuiltInChatTemplates.source(named: testCase.name))
        let prompt = try ChatTemplate(source).render(messages: testCase.messages, addGenerationPrompt: true)
        #expect(prompt == testCase.expected)
    }

    @Test func unknownNamesHaveNoFormat() {
        #expect(BuiltInChatTemplates.source(named: "llama-3") == nil)
        #expect(BuiltInChatTemplates.source(named: "") == nil)
    }
}
