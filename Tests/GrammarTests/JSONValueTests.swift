import Foundation
import TypesetGrammar
import Testing

/// The JSON layer's writers: what they print, and that an independent parser
/// (Foundation's JSONSerialization) reads it back as the same value.
@Suite struct JSONValueTests {
    static let sample: JSONValue = .object([
        ("name", .string("Ada \"Countess\" of Lovelace\n\u{1}é👋")),
        ("born", JSONValue(1815)),
        ("ratio", JSONValue(0.25)),
        ("tags", .array([.string("math"), .bool(true), .null])),
        ("notes", .array([.object([("page", JSONValue(UInt64.max))]), .array([])])),
        ("empty", .object([])),
    ])

    @Test func formattedIsIndentedWithScalarArraysInline() {
        #expect(Self.sample.formatted() == """
            {
              "name": "Ada \\"Countess\\" of Lovelace\\n\\u0001é👋",
              "born": 1815,
              "ratio": 0.25,
              "tags": ["math", true, null],
              "notes": [
                {
                  "page": 18446744073709551615
                },
                []
              ],
              "empty": {}
            }
            """)
    }

    @Test func bothWritersReadBackAsTheSameValue() throws {
        for text in [Self.sample.compactText, Self.sample.formatted(), Self.sample.formatted(indent: 4)] {
            #expect(try JSONValue(parsing: text) == Self.sample)
            let foundation = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            #expect(foundation["name"] as? String == "Ada \"Countess\" of Lovelace\n\u{1}é👋")
            #expect(foundation["born"] as? Int == 1815)
            #expect(foundation["ratio"] as? Double == 0.25)
        }
    }

    @Test func numbersFromSwiftValues() {
        #expect(JSONValue(42) == .number("42"))
        #expect(JSONValue(-7 as Int8) == .number("-7"))
        #expect(JSONValue(100.0) == .number("100.0"))
        #expect(JSONValue(1e-7) == .number("1e-07"))
        #expect(JSONValue(Double.infinity) == .null && JSONValue(Double.nan) == .null)
        // Every double's text reads back as the same double.
        for value in [0.1, 1.0 / 3, 6.02214076e23, -2.5e-308, Double.greatestFiniteMagnitude] {
            guard case .number(let text) = JSONValue(value) else { Issue.record("\(value)"); continue }
            #expect(Double(text) == value)
            #expect((try? JSONValue(parsing: text)) == .number(text))
        }
    }
}
