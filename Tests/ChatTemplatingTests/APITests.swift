import Foundation
import Testing
@testable import ChatTemplating

@Suite("Public API")
struct APITests {
    @Test("TemplateValue literals build the expected cases")
    func literals() {
        let value: TemplateValue = ["role": "user", "n": 1, "x": 2.5, "ok": true, "none": nil, "list": [1, "a"]]
        guard case .object(let entries) = value else {
            Issue.record("not an object")
            return
        }
        #expect(entries.map(\.key) == ["role", "n", "x", "ok", "none", "list"])
        #expect(value["role"] == .string("user"))
        #expect(value["n"] == .integer(1))
        #expect(value["x"] == .double(2.5))
        #expect(value["ok"] == .boolean(true))
        #expect(value["none"] == TemplateValue.none)
        #expect(value["list"] == .array([.integer(1), .string("a")]))
        #expect(value["missing"] == nil)
        #expect(value.description == "{'role': 'user', 'n': 1, 'x': 2.5, 'ok': True, 'none': None, 'list': [1, 'a']}")
        #expect(TemplateValue.undefined.description == "")
    }

    @Test("Object equality is ordered")
    func equality() {
        let a: TemplateValue = ["a": 1, "b": 2]
        let b: TemplateValue = ["b": 2, "a": 1]
        #expect(a == a)
        #expect(a != b)
        #expect(TemplateValue.integer(1) != .double(1))
    }

    @Test("render(messages:) defines tools and documents as none like transformers")
    func conversationVariables() throws {
        let template = try ChatTemplate(
            "{{ tools is none }} {{ documents is none }} {{ add_generation_prompt }} [{{ bos_token }}] [{{ eos_token }}] {{ messages | length }} {{ enable_thinking }}")
        let output = try template.render(
            messages: [["role": "user", "content": "hi"]], addGenerationPrompt: false,
            bosToken: "<s>", eosToken: "</s>", variables: ["enable_thinking": false, "add_generation_prompt": true])
        #expect(output == "True True False [<s>] [</s>] 1 False")
        let withTools = try template.render(messages: [], tools: [["type": "function"]], addGenerationPrompt: true)
        #expect(withTools.hasPrefix("False True True"))
    }

    @Test("Templates are reusable and Sendable")
    func reuse() async throws {
        let template = try ChatTemplate("{% for m in messages %}{{ m.content }}{% endfor %}")
        let outputs = try await withThrowingTaskGroup(of: String.self) { group in
            for index in 0..<8 {
                group.addTask { try template.render(messages: [["content": .string("#\(index)")]], addGenerationPrompt: false) }
            }
            var collected: [String] = []
            for try await output in group { collected.append(output) }
            return collected
        }
        #expect(Set(outputs) == Set((0..<8).map { "#\($0)" }))
    }

    @Test("Introspection is computed from the parsed tree")
    func introspection() throws {
        let plain = try ChatTemplate("{% for m in messages %}{{ m.content }} tools tool_calls{% endfor %}")
        #expect(!plain.mentionsTools)
        #expect(!plain.mentionsToolCalls)
        let tooly = try ChatTemplate("{% if tools %}{% for m in messages if 'tool_calls' in m %}{% endfor %}{% endif %}")
        #expect(tooly.mentionsTools)
        #expect(tooly.mentionsToolCalls)
        let attribute = try ChatTemplate("{{ message.tool_calls | length }}")
        #expect(attribute.mentionsToolCalls)
        #expect(attribute.referencedVariables == ["message"])
    }

    @Test("Limits are configurable")
    func limits() throws {
        var limits = ChatTemplate.Limits()
        limits.maximumRangeLength = 10
        let template = try ChatTemplate("{{ range(11) | length }}", limits: limits)
        #expect(throws: ChatTemplateError.self) { try template.render([:]) }
        var relaxed = template
        relaxed.limits = ChatTemplate.Limits()
        #expect(try relaxed.render([:]) == "11")
    }

    @Test("strftime_now formats the injected instant in the given time zone")
    func strftime() throws {
        let template = try ChatTemplate("{{ strftime_now('%Y-%m-%d %H:%M %a %e|%-m|%%') }}")
        #expect(try template.render([:], now: fixedNow, timeZone: utc) == "2024-09-05 14:05 Thu  5|9|%")
        let tokyo = try #require(TimeZone(identifier: "Asia/Tokyo"))
        #expect(try template.render([:], now: fixedNow, timeZone: tokyo) == "2024-09-05 23:05 Thu  5|9|%")
    }

    @Test("Python float formatting")
    func floats() {
        let cases: [(Double, String)] = [
            (0.1, "0.1"), (1e16, "1e+16"), (1e15, "1000000000000000.0"), (1e-5, "1e-05"), (0.0001, "0.0001"),
            (-0.0, "-0.0"), (Double.leastNonzeroMagnitude, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
            (123456789.123, "123456789.123"), (2.0, "2.0"), (-1.5e-7, "-1.5e-07"), (.infinity, "inf"), (.nan, "nan"),
            (1234567890123456.7, "1234567890123456.8"), (0.5, "0.5"), (100, "100.0"),
        ]
        for (value, expected) in cases {
            #expect(RuntimeValue.pythonFloatRepr(value) == expected, "\(value)")
        }
    }
}
