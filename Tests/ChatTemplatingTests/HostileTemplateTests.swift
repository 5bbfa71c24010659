import Foundation
import Testing
import TypesetTestSupport
@testable import ChatTemplating

// MARK: - Malformed, unsupported and hostile templates

/// Runs `body` on a thread with a small stack (512 KiB, the size of secondary threads on
/// Apple platforms), so a template that recursed without bound would crash the test.
private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
    let done = DispatchSemaphore(value: 0)
}

private func onSmallStack<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
    let box = ResultBox<T>()
    let thread = Thread {
        box.value = body()
        box.done.signal()
    }
    thread.stackSize = 512 * 1024
    thread.start()
    box.done.wait()
    return box.value!
}

private func parseError(_ source: String, limits: ChatTemplate.Limits = .init()) -> ChatTemplateError? {
    do {
        _ = try ChatTemplate(source, limits: limits)
        return nil
    } catch {
        return error
    }
}

private func renderError(_ source: String, _ context: [String: TemplateValue] = [:], limits: ChatTemplate.Limits = .init()) -> ChatTemplateError? {
    do {
        _ = try ChatTemplate(source, limits: limits).render(context)
        return nil
    } catch {
        return error
    }
}

@Suite("Malformed templates give typed errors with locations")
struct MalformedTemplateTests {
    @Test("Unterminated print tag points at its opening")
    func unterminatedPrint() {
        let error = parseError("Hello\n  {{ name")
        guard case .syntax(_, 2, 3)? = error else {
            Issue.record("got \(String(describing: error))")
            return
        }
    }

    @Test("Unterminated statement tag points at its opening")
    func unterminatedBlock() {
        let error = parseError("a\nb {% if x")
        guard case .syntax(_, 2, 3)? = error else {
            Issue.record("got \(String(describing: error))")
            return
        }
    }

    @Test("Unclosed block names the innermost opener")
    func unclosedBlock() {
        let error = parseError("{% if x %}\n  {% for y in z %}\n{{ y }}\n{% endif %}")
        guard case .syntax(let message, 4, 1)? = error else {
            Issue.record("got \(String(describing: error))")
            return
        }
        #expect(message.contains("endif"))
        #expect(message.contains("'for'"))
        let eof = parseError("{% if x %}\n  {% for y in z %}\n{{ y }}")
        guard case .syntax(let eofMessage, 2, 3)? = eof else {
            Issue.record("got \(String(describing: eof))")
            return
        }
        #expect(eofMessage.contains("never closed"))
    }

    @Test("Unknown filter and test are reported where they are written")
    func unknownFilter() {
        guard case .syntax(let message, 2, 8)? = parseError("line\n{{ x | shout }}") else {
            Issue.record("unknown filter not reported at 2:8")
            return
        }
        #expect(message == "No filter named 'shout'.")
        guard case .syntax(let testMessage, 1, 9)? = parseError("{{ x is shouty }}") else {
            Issue.record("unknown test not reported at 1:9")
            return
        }
        #expect(testMessage == "No test named 'shouty'.")
    }

    @Test("Unknown and unsupported tags")
    func tags() {
        guard case .syntax(let message, 1, 1)? = parseError("{% frobnicate %}") else {
            Issue.record("unknown tag")
            return
        }
        #expect(message.contains("frobnicate"))
        guard case .unsupported(let feature, 2, 1)? = parseError("x\n{% include 'other.jinja' %}") else {
            Issue.record("include should be unsupported")
            return
        }
        #expect(feature.contains("include"))
        for source in ["{% extends 'a' %}", "{% import 'a' as b %}", "{% call f() %}{% endcall %}", "{% block b %}{% endblock %}",
                       "{% for x in y recursive %}{% endfor %}"] {
            guard case .unsupported? = parseError(source) else {
                Issue.record("\(source) should be unsupported, got \(String(describing: parseError(source)))")
                continue
            }
        }
        guard case .unsupported? = renderError("{{ [1, 2] | batch(1) | list }}") else {
            Issue.record("batch filter should be unsupported at render time")
            return
        }
    }

    @Test("Runtime errors carry the operator's location")
    func runtimeLocations() {
        guard case .runtime(let message, 2, 6)? = renderError("line\n{{ 1 / 0 }}") else {
            Issue.record("division by zero location: \(String(describing: renderError("line\n{{ 1 / 0 }}")))")
            return
        }
        #expect(message == "division by zero")
        guard case .undefinedValue(let undefinedMessage, 1, 7)? = renderError("{{ foo.bar }}") else {
            Issue.record("undefined location")
            return
        }
        #expect(undefinedMessage == "'foo' is undefined")
        guard case .sandboxViolation(_, 1, 30)? = renderError("{% set xs = [] %}{{ xs.append(1) }}") else {
            Issue.record("sandbox location: \(String(describing: renderError("{% set xs = [] %}{{ xs.append(1) }}")))")
            return
        }
    }

    @Test("raise_exception carries the template's message")
    func raised() {
        let error = renderError("{{ raise_exception('Bad roles: ' ~ n) }}", ["n": 3])
        #expect(error == .raised(message: "Bad roles: 3"))
        #expect(error?.description == "Template raised an exception: Bad roles: 3")
        #expect(error?.line == nil)
    }

    @Test("Descriptions are readable")
    func descriptions() {
        let error = ChatTemplateError.syntax(message: "unexpected 'x'", line: 3, column: 7)
        #expect(error.description == "Template syntax error at line 3, column 7: unexpected 'x'")
        #expect(error.message == "unexpected 'x'")
        #expect(error.line == 3)
        #expect(error.column == 7)
    }

    @Test("Mutated real templates never crash")
    func mutationFuzz() throws {
        let names = ["smollm2-135m-instruct.jinja", "llama-3.2-3b-instruct.jinja", "qwen2.5-instruct.jinja",
                     "gemma-3-it.jinja", "mistral-nemo-instruct-2407.jinja"]
        let alphabet = Array("{}%#-+()[]'\"|.,:=~*/ \nxifendforsetmacro0")
        var limits = ChatTemplate.Limits()
        limits.maximumLoopIterations = 10_000
        var generator = SplitMix64(seed: 0x5EED)
        let messages: [TemplateValue] = [
            ["role": "system", "content": "s"], ["role": "user", "content": "u"],
            ["role": "assistant", "content": "a", "tool_calls": [["id": "abcdefghi", "type": "function", "function": ["name": "f", "arguments": ["x": 1]]]]],
            ["role": "tool", "tool_call_id": "abcdefghi", "content": "r"],
        ]
        var outcomes = (parsed: 0, rendered: 0)
        for name in names {
            let original = Array(try Fixtures.text("templates/\(name)"))
            for _ in 0..<150 {
                var mutated = original
                for _ in 0..<Int(generator.next() % 4 + 1) where !mutated.isEmpty {
                    let position = Int(generator.next() % UInt64(mutated.count))
                    switch generator.next() % 3 {
                    case 0: mutated.remove(at: position)
                    case 1: mutated.insert(alphabet[Int(generator.next() % UInt64(alphabet.count))], at: position)
                    default: mutated[position] = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                    }
                }
                guard let template = try? ChatTemplate(String(mutated), limits: limits) else { continue }
                outcomes.parsed += 1
                if (try? template.render(messages: messages, tools: [["type": "function", "function": ["name": "f"]]],
                                         addGenerationPrompt: true)) != nil {
                    outcomes.rendered += 1
                }
            }
        }
        #expect(outcomes.parsed > 0)
    }
}


@Suite("Hostile templates hit limits instead of hanging or crashing")
struct HostileTemplateTests {
    @Test("Unbounded macro recursion stops at the evaluation depth limit")
    func macroRecursion() {
        let sources = [
            "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
            "{% macro f(n) %}{% for x in [1] %}{% if true %}{{ g(n) ~ 'x' }}{% endif %}{% endfor %}{% endmacro %}"
                + "{% macro g(n) %}{{ f(n + 1) | trim }}{% endmacro %}{{ f(0) }}",
            "{% macro f(n) %}{% set x %}{% filter upper %}{{ f(n) }}{% endfilter %}{% endset %}{{ x }}{% endmacro %}{{ f(0) }}",
        ]
        for source in sources {
            let error = onSmallStack { renderError(source) }
            guard case .limitExceeded(let message, _, _)? = error else {
                Issue.record("expected a depth limit for \(source), got \(String(describing: error))")
                continue
            }
            #expect(message.contains("deeper than"))
        }
    }

    @Test("Deeply nested source is rejected by the parser")
    func deepNesting() {
        let parentheses = "{{ " + String(repeating: "(", count: 5_000) + "1" + String(repeating: ")", count: 5_000) + " }}"
        let lists = "{{ " + String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000) + " }}"
        let blocks = String(repeating: "{% if true %}", count: 5_000) + String(repeating: "{% endif %}", count: 5_000)
        let nots = "{{ " + String(repeating: "not ", count: 5_000) + "x }}"
        let filters = "{{ x" + String(repeating: " | trim", count: 5_000) + " }}"
        for source in [parentheses, lists, blocks, nots] {
            let error = onSmallStack { parseError(source) }
            guard case .limitExceeded? = error else {
                Issue.record("expected a nesting limit, got \(String(describing: error))")
                continue
            }
        }
        // A long flat chain of filters is not nesting at parse time, but is at render time.
        let filterError = onSmallStack { renderError(filters, ["x": "a"]) }
        guard case .limitExceeded? = filterError else {
            Issue.record("expected an evaluation depth limit, got \(String(describing: filterError))")
            return
        }
    }

    @Test("Huge ranges are refused like Jinja's sandbox")
    func hugeRange() {
        #expect(renderError("{{ range(100001) | length }}") == .limitExceeded(
            message: "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).", line: 1, column: 9))
        guard case .limitExceeded? = renderError("{% for i in range(10 ** 15) %}{% endfor %}") else {
            Issue.record("range(10**15) was not refused")
            return
        }
        #expect((try? ChatTemplate("{{ range(100000) | length }}").render([:])) == "100000")
    }

    @Test("Nested loops stop at the iteration limit")
    func iterationLimit() {
        var limits = ChatTemplate.Limits()
        limits.maximumLoopIterations = 50_000
        let error = renderError("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", limits: limits)
        guard case .limitExceeded(let message, 1, 29)? = error else {
            Issue.record("got \(String(describing: error))")
            return
        }
        #expect(message.contains("50000"))
    }

    @Test("Exponential string growth stops at the size limit")
    func stringBomb() {
        let doubling = "{% set ns = namespace(s='xx') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}"
        guard case .limitExceeded? = renderError(doubling) else {
            Issue.record("doubling was not stopped")
            return
        }
        guard case .limitExceeded? = renderError("{{ 'x' * 10 ** 12 }}") else {
            Issue.record("string repetition was not stopped")
            return
        }
        guard case .limitExceeded? = renderError("{{ ([1] * 10 ** 9) | length }}") else {
            Issue.record("list repetition was not stopped")
            return
        }
        var limits = ChatTemplate.Limits()
        limits.maximumOutputLength = 1_000
        guard case .limitExceeded? = renderError("{% for i in range(2000) %}x{% endfor %}", limits: limits) else {
            Issue.record("output limit was not enforced")
            return
        }
        guard case .limitExceeded? = renderError("{% for i in range(200) %}{{ 'abcdefghij' | indent(100) }}{% endfor %}", limits: limits) else {
            Issue.record("output limit was not enforced through filters")
            return
        }
    }

    @Test("Self-nesting data does not blow the stack")
    func deepData() {
        let source = "{% set ns = namespace(x=[]) %}{% for i in range(5000) %}{% set ns.x = [ns.x] %}{% endfor %}"
        let printed = onSmallStack { Result { () throws(ChatTemplateError) -> String in try ChatTemplate(source + "{{ ns.x }}").render([:]) } }
        if case .success(let output) = printed {
            #expect(output.hasPrefix("[[[["))
        }
        let encoded = onSmallStack { renderError(source + "{{ ns.x | tojson }}") }
        guard case .runtime? = encoded else {
            Issue.record("tojson of 5000-deep data: \(String(describing: encoded))")
            return
        }
        let compared = onSmallStack { Result { () throws(ChatTemplateError) -> String in try ChatTemplate(source + "{{ ns.x == ns.x }}").render([:]) } }
        #expect((try? compared.get()) != nil)
        var deep = TemplateValue.array([])
        for _ in 0..<2_000 { deep = .array([deep]) }
        let input = deep
        // The test's own deep value must be freed here, on the test's thread: freeing a nested
        // enum recurses, and in a release build the optimizer may otherwise let the small-stack
        // thread drop the last reference.
        withExtendedLifetime(deep) {
            let rendered = onSmallStack { Result { () throws(ChatTemplateError) -> String in try ChatTemplate("{{ x | length }}").render(["x": input]) } }
            #expect((try? rendered.get()) == "1")
        }
    }

    @Test("Integer overflow is an error, not a trap")
    func overflow() {
        for source in ["{{ 9223372036854775807 + 1 }}", "{{ 2 ** 64 }}", "{{ -(-9223372036854775807 - 1) }}",
                       "{{ (-9223372036854775807 - 1) // -1 }}", "{{ (-9223372036854775807 - 1) | abs }}",
                       "{{ 99999999999999999999 }}"] {
            let error = renderError(source) ?? parseError(source)
            guard let error, case .runtime = error else {
                if case .unsupported? = parseError(source) { continue }
                Issue.record("\(source): \(String(describing: error))")
                continue
            }
        }
    }
}

@Suite("Crafted inputs stay linear and bounded")
struct CraftedInputTests {
    @Test("Aliased data cannot print or encode beyond the output limit")
    func aliasedData() {
        var limits = ChatTemplate.Limits()
        limits.maximumOutputLength = 100_000
        let setup = "{% set s = 'x' * 50000 %}{% set xs = [s] * 1000 %}"
        for tail in ["{{ xs }}", "{{ xs | tojson }}", "{{ xs | join }}", "{{ xs | join(s) }}", "{{ '%s' % (xs,) }}",
                     "{{ s | replace('x', s) }}", "{{ (s ~ '\\n') | indent(100000) }}", "{{ s | center(10 ** 9) }}",
                     "{{ '{}'.format(xs) }}", "{{ xs | string }}", "{{ s.replace('x', s) }}", "{{ s.center(10 ** 12, 'ab') }}"] {
            let error = renderError(setup + tail, limits: limits)
            switch error {
            case .limitExceeded?, .runtime?:
                break
            default:
                Issue.record("\(tail): \(String(describing: error))")
            }
        }
    }

    @Test("Substring search is not quadratic")
    func search() throws {
        let started = Date()
        let source = "{% set hay = 'a' * 2000000 %}{% set needle = 'a' * 1000000 ~ 'b' %}"
            + "{{ needle in hay }} {{ hay.find(needle) }} {{ hay.count(needle) }} {{ hay.split(needle) | length }} {{ hay | replace(needle, '') | length }}"
        #expect(try ChatTemplate(source).render([:]) == "False -1 0 1 2000000")
        #expect(Date().timeIntervalSince(started) < 30)
    }

    @Test("Strings compare by code point, like Python")
    func codePoints() throws {
        let template = try ChatTemplate("{{ a == b }} {{ 'e' in b }} {{ {a: 1}[b] is defined }} {{ b.startswith('e') }} {{ a | length }} {{ b | length }}")
        #expect(try template.render(["a": "\u{e9}", "b": "e\u{301}"]) == "False True False True 1 2")
    }
}
