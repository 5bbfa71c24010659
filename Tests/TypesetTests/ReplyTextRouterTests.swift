import Testing
@testable import Typeset

/// The router sees text in arbitrary pieces (token boundaries fall anywhere), so every test
/// feeds its text whole, and one character at a time, and expects the same result.
@Suite struct ReplyTextRouterTests {
    private struct Routed: Equatable {
        var reasoning = ""
        var content = ""
        var callRemainder: String?
        var markup: String?
    }

    private func route(_ text: String, thinking: Bool, syntax: ThinkingSyntax = .tags, format: FunctionCallFormat?, pieceLength: Int) -> Routed {
        var router = ReplyTextRouter(detectsThinking: thinking, thinking: syntax, callFormat: format)
        var result = Routed()
        var pieces: [String] = []
        var index = text.startIndex
        while index < text.endIndex {
            let end = text.index(index, offsetBy: pieceLength, limitedBy: text.endIndex) ?? text.endIndex
            pieces.append(String(text[index ..< end]))
            index = end
        }
        func take(_ routed: [ReplyTextRouter.Piece]) {
            for piece in routed {
                switch piece {
                case .reasoning(let text): result.reasoning += text
                case .content(let text): result.content += text
                case .callStarted(let markup, let remainder):
                    result.callRemainder = (result.callRemainder ?? "") + remainder
                    result.markup = markup
                }
            }
        }
        for piece in pieces {
            if router.isInCall { result.callRemainder! += piece } else { take(router.route(piece)) }
        }
        take(router.finish())
        return result
    }

    private func expectRouting(
        _ text: String, thinking: Bool = true, syntax: ThinkingSyntax = .tags, format: FunctionCallFormat? = nil, _ expected: Routed
    ) {
        for length in [1, 2, 3, 1000] {
            #expect(route(text, thinking: thinking, syntax: syntax, format: format, pieceLength: length) == expected, "pieces of \(length)")
        }
    }

    @Test func gemmasThoughtChannelIsReasoningWithoutItsLabel() {
        expectRouting("<|channel>thought\nRecall the capital.<channel|>Paris.", syntax: .channel,
                      Routed(reasoning: "Recall the capital.", content: "Paris."))
        expectRouting("<|channel>thought\n<channel|>Paris.", syntax: .channel, Routed(content: "Paris."))
        expectRouting("<|channel>thought<channel|>Paris.", syntax: .channel, Routed(content: "Paris."))
        // Not the label: reasoning as written.
        expectRouting("<|channel>thoughtful<channel|>x", syntax: .channel, Routed(reasoning: "thoughtful", content: "x"))
        // The other syntax's tags are text.
        expectRouting("<think>x</think>y", syntax: .channel, Routed(content: "<think>x</think>y"))
    }

    @Test func thinkingAtTheStartIsReasoning() {
        expectRouting("<think>First, recall.\nThen answer.</think>\n\nParis.",
                      Routed(reasoning: "First, recall.\nThen answer.", content: "Paris."))
        // Not at the start: plain text.
        expectRouting("Well <think>no</think>", Routed(content: "Well <think>no</think>"))
        // Thinking not expected: the tags are text.
        expectRouting("<think>x</think>y", thinking: false, Routed(content: "<think>x</think>y"))
        // Unfinished thought at the end stays reasoning.
        expectRouting("<think>still going", Routed(reasoning: "still going"))
        // A prefix of the tag that turns out not to be one is content.
        expectRouting("<thin ice", Routed(content: "<thin ice"))
    }

    @Test func hermesCallsStartAtTheirMarker() {
        expectRouting("Let me check.\n<tool_call>\n{\"name\":\"f\"", format: .hermes,
                      Routed(content: "Let me check.\n", callRemainder: "\n{\"name\":\"f\"", markup: "<tool_call>"))
        expectRouting("a < b and <tool_ca", format: .hermes, Routed(content: "a < b and <tool_ca"))
        expectRouting("<think>plan</think><tool_call>{}", format: .hermes, Routed(reasoning: "plan", content: "", callRemainder: "{}", markup: "<tool_call>"))
    }

    /// Small Qwen models write their calls without the markup; a Hermes reply that opens with
    /// `{"name"` is such a call. Other JSON, or a brace later in the text, is text.
    @Test func hermesRepliesMayBeBareCalls() {
        expectRouting(" \n{\"name\": \"f\", \"arguments\": {}}", thinking: false, format: .hermes,
                      Routed(callRemainder: "{\"name\": \"f\", \"arguments\": {}}", markup: ""))
        expectRouting("<think>plan</think>{\"name\"", format: .hermes, Routed(reasoning: "plan", content: "", callRemainder: "{\"name\"", markup: ""))
        expectRouting("Use {braces}.", thinking: false, format: .hermes, Routed(content: "Use {braces}."))
        expectRouting("{\"temperature\": 18}", thinking: false, format: .hermes, Routed(content: "{\"temperature\": 18}"))
        expectRouting("{ \"nam", thinking: false, format: .hermes, Routed(content: "{ \"nam"))
        // Qwen2.5-Coder-1.5B's code fence and doubled brace: the call starts at the object.
        expectRouting("```json\n{\n  \"name\": \"f\"", thinking: false, format: .hermes, Routed(callRemainder: "{\n  \"name\": \"f\"", markup: "```json\n"))
        expectRouting("```python\nprint(1)\n```", thinking: false, format: .hermes, Routed(content: "```python\nprint(1)\n```"))
        expectRouting("{{\"name\": \"f\"", thinking: false, format: .hermes, Routed(callRemainder: "{\"name\": \"f\"", markup: "{"))
    }

    @Test func plainJSONCallsAreReplyThatStartsWithABrace() {
        expectRouting("  {\"name\": \"f\"}", thinking: false, format: .json, Routed(callRemainder: "{\"name\": \"f\"}", markup: ""))
        expectRouting("Sure: {\"a\":1}", thinking: false, format: .json, Routed(content: "Sure: {\"a\":1}"))
    }

    @Test func safePrefixHoldsBackOnlyPossibleMarkerStarts() {
        #expect(ReplyTextRouter.safePrefixLength(of: "abc<tool", before: "<tool_call>") == 3)
        #expect(ReplyTextRouter.safePrefixLength(of: "abc", before: "<tool_call>") == 3)
        #expect(ReplyTextRouter.safePrefixLength(of: "<", before: "<tool_call>") == 0)
        #expect(ReplyTextRouter.safePrefixLength(of: "x<t>", before: "<tool_call>") == 4)
    }
}
