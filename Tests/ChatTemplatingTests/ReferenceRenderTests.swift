import Foundation
import Testing
@testable import ChatTemplating

// MARK: - Real chat templates against jinja2

/// One fixture template rendered with one conversation (from `expected_renders.json`).
struct FixtureCase: Sendable, CustomTestStringConvertible {
    var template: String
    var conversation: String
    var addGenerationPrompt: Bool
    var expected: TemplateValue

    var testDescription: String { "\(template) / \(conversation) / gen=\(addGenerationPrompt)" }

    static func all() throws -> [FixtureCase] {
        guard case .array(let entries) = try Fixtures.json("expected_renders.json") else { return [] }
        return entries.compactMap { entry in
            guard case .string(let template)? = entry["template"], case .string(let conversation)? = entry["conversation"],
                  case .boolean(let generation)? = entry["add_generation_prompt"] else { return nil }
            return FixtureCase(template: template, conversation: conversation, addGenerationPrompt: generation, expected: entry)
        }
    }
}

@Suite("Real chat templates render like transformers")
struct ReferenceRenderTests {
    static let cases = (try? FixtureCase.all()) ?? []

    @Test("Fixture cases were generated")
    func fixturesExist() {
        #expect(Self.cases.count >= 100)
    }

    @Test("Render matches jinja2", arguments: cases)
    func render(_ testCase: FixtureCase) throws {
        let specification = try Fixtures.json("conversations.json")
        let source = try Fixtures.text("templates/\(testCase.template)")
        let template = try ChatTemplate(source)
        guard case .array(let conversations)? = specification["conversations"],
              let conversation = conversations.first(where: { $0["name"] == .string(testCase.conversation) }),
              case .array(let messages)? = conversation["messages"],
              let tokens = specification["templates"]?[testCase.template],
              case .string(let bos)? = tokens["bos_token"], case .string(let eos)? = tokens["eos_token"] else {
            Issue.record("malformed fixture for \(testCase.testDescription)")
            return
        }
        var tools: [TemplateValue]?
        if case .array(let list)? = conversation["tools"] { tools = list }
        var variables: [String: TemplateValue] = [:]
        if case .object(let entries)? = conversation["variables"] {
            for entry in entries { variables[entry.key] = entry.value }
        }
        let result = Result { () throws(ChatTemplateError) -> String in
            try template.render(
                messages: messages, tools: tools, addGenerationPrompt: testCase.addGenerationPrompt,
                bosToken: bos, eosToken: eos, variables: variables, now: fixedNow, timeZone: utc)
        }
        if case .string(let expected)? = testCase.expected["output"] {
            switch result {
            case .success(let output):
                #expect(output == expected)
            case .failure(let error):
                Issue.record("expected output, got error: \(error)")
            }
        } else if let reference = ReferenceError(testCase.expected["error"]) {
            switch result {
            case .success(let output):
                Issue.record("expected \(reference), got output \(output.debugDescription)")
            case .failure(let error):
                #expect(reference.matches(error), "expected \(reference), got \(error)")
            }
        } else {
            Issue.record("fixture has neither output nor error")
        }
    }

    @Test("Introspection of the real templates")
    func introspection() throws {
        let expectations: [(String, tools: Bool, toolCalls: Bool)] = [
            ("smollm2-135m-instruct.jinja", false, false),
            ("llama-3.2-3b-instruct.jinja", true, true),
            ("llama-3.3-70b-instruct.jinja", true, true),
            ("qwen2.5-instruct.jinja", true, true),
            ("gemma-3-it.jinja", false, false),
            ("mistral-nemo-instruct-2407.jinja", true, true),
            ("gpt-oss.jinja", true, true),
        ]
        for (name, tools, toolCalls) in expectations {
            let template = try ChatTemplate(try Fixtures.text("templates/\(name)"))
            #expect(template.mentionsTools == tools, "\(name) mentionsTools")
            #expect(template.mentionsToolCalls == toolCalls, "\(name) mentionsToolCalls")
            #expect(template.referencedVariables.contains("messages"))
        }
    }

    @Test("strftime_now uses the injected date (Llama 3.2 header)")
    func injectedDate() throws {
        let template = try ChatTemplate(try Fixtures.text("templates/llama-3.2-3b-instruct.jinja"))
        let output = try template.render(
            messages: [["role": "user", "content": "Hi"]], addGenerationPrompt: true,
            bosToken: "<|begin_of_text|>", now: fixedNow, timeZone: utc)
        #expect(output.contains("Today Date: 05 Sep 2024\n"))
    }
}

// MARK: - Language features against jinja2

/// One small template from `language_cases.json`.
struct LanguageCase: Sendable, CustomTestStringConvertible {
    var name: String
    var entry: TemplateValue

    var testDescription: String { name }

    static func all() throws -> [LanguageCase] {
        guard case .array(let entries) = try Fixtures.json("language_cases.json") else { return [] }
        return entries.compactMap { entry in
            guard case .string(let name)? = entry["name"] else { return nil }
            return LanguageCase(name: name, entry: entry)
        }
    }
}

@Suite("Jinja language features match jinja2")
struct LanguageCaseTests {
    static let cases = (try? LanguageCase.all()) ?? []

    @Test("Language cases were generated")
    func casesExist() {
        #expect(Self.cases.count >= 150)
    }

    @Test("Case matches jinja2", arguments: cases)
    func render(_ testCase: LanguageCase) {
        guard case .string(let source)? = testCase.entry["template"] else {
            Issue.record("malformed case")
            return
        }
        var context: [String: TemplateValue] = [:]
        if case .object(let entries)? = testCase.entry["context"] {
            for entry in entries { context[entry.key] = entry.value }
        }
        let result = Result { () throws(ChatTemplateError) -> String in
            try ChatTemplate(source).render(context, now: fixedNow, timeZone: utc)
        }
        if case .string(let expected)? = testCase.entry["output"] {
            switch result {
            case .success(let output):
                #expect(output == expected)
            case .failure(let error):
                Issue.record("expected \(expected.debugDescription), got error: \(error)")
            }
        } else if let reference = ReferenceError(testCase.entry["error"]) {
            switch result {
            case .success(let output):
                Issue.record("expected \(reference), got output \(output.debugDescription)")
            case .failure(let error):
                #expect(reference.matches(error), "expected \(reference), got \(error)")
            }
        } else {
            Issue.record("case has neither output nor error")
        }
    }
}
