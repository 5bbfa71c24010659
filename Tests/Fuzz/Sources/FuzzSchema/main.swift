import CLibFuzzer
import Foundation
import TypesetGrammar
import TypesetTestSupport

// The fuzz target of the JSON Schema compiler, structure-aware: the input's bytes are the
// choices of a generator that writes schemas from the keyword grammar (types and their
// bounds, patterns, enums, arrays and objects, anyOf/oneOf/allOf/not/if, $defs and $ref), so
// libFuzzer's mutations of the bytes are mutations of the schema's structure. An input that
// starts with `{` is also tried as a schema text as it is (mutated JSON).
//
// Each schema compiles within a small budget or fails with a GrammarError. The run fails (an
// abort, which libFuzzer reports with a reproducer) on a crash, on a compilation that overruns
// its budget, or on an accepted-but-invalid instance: the grammar's shortest value and a few
// random walks through it must all validate against the independent validator.
let budget = CompilationBudget(seconds: 0.5, bytes: 128 << 20)

/// Reads choices from the fuzzer's bytes (zero when they run out).
struct Choices {
    let bytes: UnsafeRawBufferPointer
    var position = 0
    mutating func next(_ count: Int) -> Int {
        guard position < bytes.count, count > 1 else { return 0 }
        defer { position += 1 }
        return Int(bytes[position]) % count
    }
    mutating func chance(_ percent: Int) -> Bool { next(100) < percent }
}

/// A schema (as JSON text) from `choices`, at most `depth` levels deep.
func schema(_ choices: inout Choices, depth: Int, definitions: Int) -> String {
    let patterns = ["^[a-z]+$", "^a", "b$", "^[0-9]{2,4}$", "^(x|yz)*$", "^[^\"]{0,3}$"]
    let strings = [#""a""#, #""xyz""#, #""""#, #""é""#, #""12""#]
    let numbers = ["0", "-1", "2", "3.5", "-0.25", "100"]
    switch choices.next(depth > 0 ? 12 : 6) {
    case 0: return #"{"type":"null"}"#
    case 1: return #"{"type":"boolean"}"#
    case 2:
        var parts = [#""type":"integer""#]
        if choices.chance(50) { parts.append(#""minimum":\#(numbers[choices.next(numbers.count)].prefix(while: { $0 != "." }))"#) }
        if choices.chance(40) { parts.append(#""maximum":\#(choices.next(300) - 50)"#) }
        if choices.chance(30) { parts.append(#""multipleOf":\#(choices.next(6) + 1)"#) }
        if choices.chance(20) { parts.append(#""exclusiveMaximum":\#(choices.next(200))"#) }
        return "{" + parts.joined(separator: ",") + "}"
    case 3:
        var parts = [#""type":"number""#]
        if choices.chance(50) { parts.append(#""minimum":\#(numbers[choices.next(numbers.count)])"#) }
        if choices.chance(40) { parts.append(#""exclusiveMaximum":\#(numbers[choices.next(numbers.count)])"#) }
        if choices.chance(20) { parts.append(#""multipleOf":0.5"#) }
        return "{" + parts.joined(separator: ",") + "}"
    case 4:
        var parts = [#""type":"string""#]
        if choices.chance(40) { parts.append(#""minLength":\#(choices.next(6))"#) }
        if choices.chance(40) { parts.append(#""maxLength":\#(choices.next(12))"#) }
        if choices.chance(40) { parts.append(#""pattern":"\#(patterns[choices.next(patterns.count)].replacingOccurrences(of: "\"", with: "\\\""))""#) }
        return "{" + parts.joined(separator: ",") + "}"
    case 5:
        let count = choices.next(4) + 1
        let values = (0 ..< count).map { _ in choices.chance(50) ? strings[choices.next(strings.count)] : numbers[choices.next(numbers.count)] }
        return choices.chance(30) ? #"{"const":\#(values[0])}"# : #"{"enum":[\#(values.joined(separator: ","))]}"#
    case 6:
        var parts = [#""type":"array""#]
        if choices.chance(70) { parts.append(#""items":\#(schema(&choices, depth: depth - 1, definitions: definitions))"#) }
        if choices.chance(30) { parts.append(#""prefixItems":[\#(schema(&choices, depth: depth - 1, definitions: definitions))]"#) }
        if choices.chance(40) { parts.append(#""minItems":\#(choices.next(4))"#) }
        if choices.chance(40) { parts.append(#""maxItems":\#(choices.next(6))"#) }
        return "{" + parts.joined(separator: ",") + "}"
    case 7:
        let count = choices.next(4)
        let names = (0 ..< count).map { "p\($0)" }
        var parts = [#""type":"object""#]
        if count > 0 {
            let properties = names.map { #""\#($0)":\#(schema(&choices, depth: depth - 1, definitions: definitions))"# }
            parts.append(#""properties":{\#(properties.joined(separator: ","))}"#)
            let required = names.filter { _ in choices.chance(50) }.map { #""\#($0)""# }
            if !required.isEmpty { parts.append(#""required":[\#(required.joined(separator: ","))]"#) }
        }
        if choices.chance(40) { parts.append(#""additionalProperties":false"#) }
        if choices.chance(20) { parts.append(#""minProperties":\#(choices.next(3))"#) }
        if choices.chance(15) { parts.append(#""maxProperties":\#(choices.next(4))"#) }
        return "{" + parts.joined(separator: ",") + "}"
    case 8, 9:
        let keyword = ["anyOf", "oneOf", "allOf"][choices.next(3)]
        let count = choices.next(3) + 1
        return #"{"\#(keyword)":[\#((0 ..< count).map { _ in schema(&choices, depth: depth - 1, definitions: definitions) }.joined(separator: ","))]}"#
    case 10:
        if choices.chance(50) { return #"{"not":\#(schema(&choices, depth: depth - 1, definitions: definitions))}"# }
        return #"{"if":\#(schema(&choices, depth: depth - 1, definitions: definitions)),"then":\#(schema(&choices, depth: depth - 1, definitions: definitions))}"#
    default:
        return definitions > 0 ? ##"{"$ref":"#/$defs/d\##(choices.next(definitions))"}"## : #"{"type":"integer"}"#
    }
}

/// A random sentence of `grammar`: at each step a byte it allows, chosen by `choices`, until
/// it may end (and `choices` says to) or 200 bytes.
func randomSentence(_ grammar: CompiledGrammar, _ choices: inout Choices) -> [UInt8]? {
    var matcher = GrammarMatcher(grammar)
    var sentence: [UInt8] = []
    while sentence.count < 200 {
        if matcher.canTerminate, !matcher.acceptsMoreBytes || choices.chance(30) { return sentence }
        let allowed = (0 ..< 256).map(UInt8.init).filter { matcher.allows(bytes: [$0]) }
        // Prefer bytes that bring the value closer to its end, so most walks finish.
        guard !allowed.isEmpty else { return nil }
        let byte = allowed[choices.next(allowed.count)]
        _ = matcher.accept(bytes: [byte])
        sentence.append(byte)
    }
    return nil
}

func check(_ schemaText: String, _ choices: inout Choices) {
    let clock = ContinuousClock(), started = clock.now
    let compiled: CompiledGrammar
    do {
        // The schema's grammar and its automaton each within the budget: the bound below
        // allows both, and the byte vocabulary's masks.
        compiled = try CompiledGrammar(Grammar(jsonSchema: schemaText, budget: budget), vocabulary: .bytes, budget: budget)
    } catch {
        let elapsed = clock.now - started
        if elapsed > .seconds(3 * budget.seconds + 1) { fatalError("budget overrun: \(elapsed) for \(schemaText)") }
        return
    }
    let elapsed = clock.now - started
    if elapsed > .seconds(3 * budget.seconds + 1) { fatalError("budget overrun: \(elapsed) for \(schemaText)") }
    guard let validator = try? JSONSchemaValidator(schemaText: schemaText) else { return }
    var instances: [[UInt8]] = []
    if let shortest = compiled.shortestSentence(maximumBytes: 4096) { instances.append(shortest) }
    for _ in 0 ..< 3 { if let walk = randomSentence(compiled, &choices) { instances.append(walk) } }
    for instance in instances {
        let text = String(decoding: instance, as: UTF8.self)
        // Foundation's reader refuses numbers past a Double's range, which JSON allows: such an
        // instance (JSON by RFC 8259, as Typeset's reader says) is beyond the validator.
        let problems = validator.problems(in: text)
        if problems.first?.hasPrefix("the instance is not JSON") == true, (try? JSONValue(parsing: text)) != nil { continue }
        // The validator reports keywords it does not know (a mutated name, which the compiler
        // rightly ignores) as problems: only its real verdicts count.
        if !problems.isEmpty, !problems.contains(where: { $0.contains("does not know keyword") }) {
            fatalError("accepted but invalid: \(text) for \(schemaText): \(problems)")
        }
    }
}

var argumentCount = CommandLine.argc
var arguments: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argumentCount, &arguments) { data, size in
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    var choices = Choices(bytes: bytes)
    if size > 0, bytes[0] == UInt8(ascii: "{"), let text = String(validating: Array(bytes), as: UTF8.self) {
        var walk = Choices(bytes: bytes)
        check(text, &walk)
        return 0
    }
    let definitionCount = choices.next(3)
    var definitions: [String] = []
    for index in 0 ..< definitionCount {
        definitions.append(#""d\#(index)":\#(schema(&choices, depth: 2, definitions: index))"#)
    }
    var text = schema(&choices, depth: 3, definitions: definitionCount)
    if !definitions.isEmpty { text = #"{"$defs":{\#(definitions.joined(separator: ","))},"allOf":[\#(text)]}"# }
    check(text, &choices)
    return 0
})
