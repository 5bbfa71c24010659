import Foundation
import GGUF
import TypesetGrammar
import Testing
import TypesetTokenizer
import TypesetTestSupport

/// The shared checker of the conformance tests: runs instances through a compiled grammar
/// the way generation does (mask, then accept, token by token) and checks that the mask and
/// the matcher agree at every step.
struct SchemaConformance {
    struct Outcome {
        var schemas = 0
        var compiled = 0
        var errors: [String: Int] = [:]
        var validAccepted = 0, validTotal = 0
        var invalidRejected = 0, invalidTotal = 0
        var invalidAccepted: [String] = []
        var validRejected: [String] = []
        var maskDisagreements: [String] = []

        mutating func add(_ other: Outcome) {
            schemas += other.schemas
            compiled += other.compiled
            for (key, count) in other.errors { errors[key, default: 0] += count }
            validAccepted += other.validAccepted
            validTotal += other.validTotal
            invalidRejected += other.invalidRejected
            invalidTotal += other.invalidTotal
            invalidAccepted += other.invalidAccepted
            validRejected += other.validRejected
            maskDisagreements += other.maskDisagreements
        }

        var summary: String {
            "\(compiled)/\(schemas) schemas compiled; valid accepted \(validAccepted)/\(validTotal); "
                + "invalid rejected \(invalidRejected)/\(invalidTotal); invalid accepted \(invalidAccepted.count)"
        }
    }

    let vocabulary: GrammarVocabulary
    /// Token ids of a text (the byte vocabulary: one token per byte).
    let tokenize: ([UInt8]) -> [Int]

    static var bytes: SchemaConformance { SchemaConformance(vocabulary: .bytes) { $0.map(Int.init) } }

    static func model(_ path: String) throws -> SchemaConformance {
        let file = try GGUFFile(contentsOf: path)
        let tokenizer = try Tokenizer(metadata: file.metadata)
        let vocabulary = tokenizer.vocabulary
        return SchemaConformance(vocabulary: GrammarVocabulary(tokens: vocabulary.writtenBytes, endOfGeneration: vocabulary.endOfGenerationTokenIDs)) { bytes in
            bytes.withUnsafeBufferPointer { tokenizer.encode(bytes: $0, addingSpecialTokens: false) }
        }
    }

    /// Whether the matcher accepts `text` token by token and may then end; records any step
    /// where the mask and `accept` disagree.
    func run(_ compiled: CompiledGrammar, _ text: [UInt8], disagreements: inout [String], label: String) -> Bool {
        var matcher = GrammarMatcher(compiled)
        var mask = TokenBitmask(vocabularySize: vocabulary.size)
        for (step, token) in tokenize(text).enumerated() {
            matcher.fillNextTokenMask(into: &mask)
            let allowed = mask[token]
            let accepted = matcher.accept(token: token)
            if allowed != accepted { disagreements.append("\(label) step \(step) token \(token): mask \(allowed), accept \(accepted)") }
            if !accepted { return false }
        }
        matcher.fillNextTokenMask(into: &mask)
        let endAllowed = vocabulary.endOfGenerationTokens.contains { mask[$0] }
        if endAllowed != matcher.canTerminate { disagreements.append("\(label) end: mask \(endAllowed), canTerminate \(matcher.canTerminate)") }
        return matcher.canTerminate
    }

    /// Compiles `schema` and judges each instance.
    func check(schema: JSONValue, tests: [(data: JSONValue, valid: Bool, label: String)], options: JSONSchemaOptions = JSONSchemaOptions()) -> Outcome {
        var outcome = Outcome()
        outcome.schemas = 1
        let compiled: CompiledGrammar
        do {
            compiled = try CompiledGrammar(try Grammar(jsonSchema: schema, options: options), vocabulary: vocabulary)
        } catch {
            outcome.errors[Self.category(error), default: 0] += 1
            return outcome
        }
        outcome.compiled = 1
        for test in tests {
            let accepted = run(compiled, Array(test.data.compactText.utf8), disagreements: &outcome.maskDisagreements, label: test.label)
            if test.valid {
                outcome.validTotal += 1
                if accepted { outcome.validAccepted += 1 } else { outcome.validRejected.append(test.label) }
            } else {
                outcome.invalidTotal += 1
                if accepted { outcome.invalidAccepted.append(test.label) } else { outcome.invalidRejected += 1 }
            }
        }
        return outcome
    }

    static func category(_ error: Error) -> String {
        guard let error = error as? GrammarError else { return "\(error)" }
        switch error {
        case .unsupportedKeyword(let keyword, _, _): return "unsupported \(keyword)"
        case .unresolvedReference: return "unresolved $ref"
        case .invalidRegex: return "regex"
        case .budgetExceeded: return "budget"
        case .emptyLanguage: return "empty language"
        case .invalidSchema: return "invalid schema"
        default: return "\(error)"
        }
    }
}
