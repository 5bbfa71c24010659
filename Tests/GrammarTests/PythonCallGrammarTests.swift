import Foundation
import Testing
@testable import TypesetGrammar

/// The call grammar in Python syntax (`JSONSchemaOptions.Syntax.pythonCalls`), LFM's format:
/// a list of calls whose keyword arguments follow each function's parameter schema.
@Suite struct PythonCallGrammarTests {
    static let weather = #"""
    {"type":"object","properties":{"name":{"const":"get_weather"},"arguments":{"type":"object","properties":{
      "city":{"type":"string"},"unit":{"enum":["celsius","fahrenheit"]},"days":{"type":"integer","minimum":1,"maximum":7}},
      "required":["city"]}},"required":["name","arguments"]}
    """#
    static let alarm = #"""
    {"type":"object","properties":{"name":{"const":"set_alarm"},"arguments":{"type":"object","properties":{
      "at":{"type":"string"},"repeat":{"type":"boolean"},"note":{"type":["string","null"]},"tags":{"type":"array","items":{"type":"string"}},
      "extra":{"type":"object","properties":{"loud":{"const":true}}}},
      "required":["at","repeat"]}},"required":["name","arguments"]}
    """#
    static let both = #"{"anyOf":["# + weather + "," + alarm + "]}"

    private func grammar(_ schema: String, several: Bool = true) throws -> Grammar {
        var options = JSONSchemaOptions.generation
        options.syntax = .pythonCalls(several: several)
        options.whitespace = .flexible(maximum: 1)
        return try Grammar(jsonSchema: schema, options: options)
    }

    @Test func callsFollowTheirParameterSchemas() throws {
        let grammar = try grammar(Self.both)
        for call in [
            #"[get_weather(city="Paris")]"#,
            #"[get_weather(city="Paris", unit="celsius", days=3)]"#,
            #"[get_weather(city="Paris",days=7)]"#,
            #"[set_alarm(at="07:00", repeat=True)]"#,
            #"[set_alarm(at="7 \"sharp\"", repeat=False, note=None, tags=["a", "b"])]"#,
            #"[set_alarm(at="x", repeat=True, extra={"loud": True})]"#,
            #"[set_alarm(at="x", repeat=True, tags=["a","b"], extra={"loud":True})]"#,
            #"[get_weather(city="Oslo"), set_alarm(at="08:00", repeat=False)]"#,
        ] {
            #expect(try grammar.matches(call), "\(call)")
        }
    }

    @Test func whatPythonOrTheSchemaWouldNotAcceptIsRejected() throws {
        let grammar = try grammar(Self.both)
        for call in [
            #"[get_weather()]"#,                                   // city is required
            #"[get_weather(unit="celsius", city="Paris")]"#,       // declaration order
            #"[get_weather(city=Paris)]"#,                          // not a literal
            #"[get_weather(city="Paris", days=8)]"#,                // above the maximum
            #"[get_weather(city="Paris", unit="kelvin")]"#,         // not in the enum
            #"[get_weather(city="Paris", country="FR")]"#,          // not a parameter
            #"[set_alarm(at="7", repeat=true)]"#,                   // JSON's literal, not Python's
            #"[set_alarm(at="7", repeat=True, note=null)]"#,
            #"[set_alarm(at="x", repeat=True, extra={"loud": true})]"#,  // inside a dict too
            #"[get_weather(city='Paris')]"#,                        // the grammar writes double quotes
            #"get_weather(city="Paris")"#,                          // not a list
            #"[]"#,
            #"[get_time(zone="CET")]"#,                             // not a function
        ] {
            #expect(try !grammar.matches(call), "\(call)")
        }
    }

    @Test func oneCallWhenSeveralAreNotAllowed() throws {
        let grammar = try grammar(Self.both, several: false)
        #expect(try grammar.matches(#"[get_weather(city="Oslo")]"#))
        #expect(try !grammar.matches(#"[get_weather(city="Oslo"), get_weather(city="Rome")]"#))
    }

    @Test func namesPythonCannotWriteAreRefused() throws {
        let badFunction = Self.weather.replacingOccurrences(of: "get_weather", with: "get-weather")
        #expect(throws: GrammarError.self) { try grammar(badFunction) }
        let badParameter = Self.weather.replacingOccurrences(of: #""city""#, with: #""the city""#)
        #expect(throws: GrammarError.self) { try grammar(badParameter) }
        let alternatives = #"""
        {"properties":{"name":{"const":"f"},"arguments":{"anyOf":[{"type":"object"},{"type":"object","properties":{"a":{}}}]}}}
        """#
        do {
            _ = try grammar(alternatives)
            Issue.record("an anyOf of argument objects compiled")
        } catch let error as GrammarError {
            #expect("\(error)".contains("anyOf"))
        }
        #expect(PythonIdentifier.isValid("_private2"))
        #expect(!PythonIdentifier.isValid("2fast"))
        #expect(!PythonIdentifier.isValid(""))
    }

    @Test func jsonOutputIsUnchanged() throws {
        // The default syntax still writes JSON's literals.
        let grammar = try Grammar(jsonSchema: #"{"type":["boolean","null"]}"#, options: .generation)
        #expect(try grammar.matches("true") && grammar.matches("null"))
        #expect(try !grammar.matches("True"))
    }
}
