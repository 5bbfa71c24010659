import Foundation
import GGUF
@testable import Typeset
import TypesetTokenizer
import TypesetTestSupport

/// A source of logits without a model: `logits(held)` gives the logits after the tokens it
/// holds. Records every `evaluate` call, so tests can check what the loop computed.
final class ScriptedSource: LogitsSource {
    let contextLength: Int
    private(set) var held: [Int] = []
    private(set) var evaluations: [[Int]] = []
    private let logits: ([Int]) -> [Float]

    init(contextLength: Int = 4096, logits: @escaping ([Int]) -> [Float]) {
        self.contextLength = contextLength
        self.logits = logits
    }

    var count: Int { held.count }

    func reusablePrefixLength(for tokens: [Int]) -> Int {
        var shared = 0
        while shared < min(held.count, tokens.count - 1), held[shared] == tokens[shared] { shared += 1 }
        return shared
    }

    /// With recurrent state: the positions a truncation can return to (the checkpoints),
    /// besides 0 and what it holds; `nil`, every position (a KV cache's).
    var restorable: Set<Int>?
    private(set) var checkpoints: [Int] = []

    func truncate(to count: Int) {
        var kept = max(0, min(count, held.count))
        if let restorable, kept < held.count {
            kept = (restorable.union(checkpoints).filter { $0 <= kept } + [0]).max()!
        }
        held.removeLast(held.count - kept)
    }

    var hasRecurrentState: Bool { restorable != nil }
    func checkpoint() { checkpoints.append(held.count) }

    func evaluate(_ tokens: ArraySlice<Int>, logitRows: Int, into logits: inout [Float]) throws(ModelError) {
        guard held.count + tokens.count <= contextLength else {
            throw .contextOverflow(needed: held.count + tokens.count, available: contextLength)
        }
        precondition((1 ... tokens.count).contains(logitRows))
        held += tokens
        evaluations.append(Array(tokens))
        logits.removeAll(keepingCapacity: true)
        for end in held.count - logitRows + 1 ... held.count { logits += self.logits(Array(held[..<end])) }
    }
}

/// A byte-level vocabulary: token `b` is byte `b` (GPT-2's alphabet, no merges), then
/// `<|im_end|>` (256), the end of generation. Every text is one token per byte.
enum ByteVocabulary {
    static let endOfGeneration = 256
    static let size = 257

    static let tokenizer = makeTokenizer()

    /// The byte vocabulary with LFM's call markup as control tokens: `<|tool_call_start|>`
    /// (257) and `<|tool_call_end|>` (258).
    static let lfmTokenizer = makeTokenizer(controlTokens: ["<|tool_call_start|>", "<|tool_call_end|>"])

    /// The byte vocabulary with Qwen 3's thinking markers as user-defined tokens (their text
    /// is theirs): `<think>` (257) and `</think>` (258).
    static let thinkingTokenizer = makeTokenizer(userDefinedTokens: ["<think>", "</think>"])
    static let thinkOpen = 257, thinkClose = 258
    /// The byte vocabulary with gpt-oss's Harmony markers, as its GGUF files have them
    /// (control tokens; the vocabulary renders the header markers and `<|end|>` as text, and
    /// `<|return|>` and `<|call|>` end generation): `<|start|>` 257, `<|end|>` 258,
    /// `<|message|>` 259, `<|channel|>` 260, `<|constrain|>` 261, `<|return|>` 262, `<|call|>` 263.
    static let harmonyTokenizer = makeTokenizer(
        controlTokens: ["<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|constrain|>", "<|return|>", "<|call|>"])
    static let harmonyReturn = 262, harmonyCall = 263

    /// The tokens of `text` in the Harmony vocabulary: a byte each, the markers as theirs.
    static func harmonyTokens(_ text: String) -> [Int] {
        harmonyTokenizer.encode(text, addingSpecialTokens: false, parsingSpecialTokens: true)
    }

    /// The byte vocabulary with Gemma 4's thought channel markers as user-defined tokens, as its
    /// converter types them: `<|channel>` (257) and `<channel|>` (258).
    static let channelTokenizer = makeTokenizer(userDefinedTokens: ["<|channel>", "<channel|>"])

    /// The byte vocabulary with Gemma 4's call markers, `<|tool_call>` and `<tool_call|>`.
    static let gemmaCallTokenizer = makeTokenizer(userDefinedTokens: ["<|tool_call>", "<tool_call|>"])

    /// The same vocabulary with the markers as control tokens (they detokenize to nothing).
    static let controlThinkingTokenizer = makeTokenizer(controlTokens: ["<think>", "</think>"])

    private static func makeTokenizer(controlTokens: [String] = [], userDefinedTokens: [String] = []) -> Tokenizer {
        var writer = GGUFWriter()
        writer.setValue(.string("gpt2"), forKey: "tokenizer.ggml.model")
        let tokens = gpt2ByteAlphabet + ["<|im_end|>"] + controlTokens + userDefinedTokens
        writer.setValue(.array(try! GGUFArray(elementType: .string, elements: tokens.map { .string($0) })), forKey: "tokenizer.ggml.tokens")
        let types = [Int32](repeating: 1, count: 256) + [Int32](repeating: 3, count: 1 + controlTokens.count)
            + [Int32](repeating: 4, count: userDefinedTokens.count)
        writer.setValue(.array(try! GGUFArray(elementType: .int32, elements: types.map { .int32($0) })), forKey: "tokenizer.ggml.token_type")
        writer.setValue(.array(try! GGUFArray(elementType: .string, elements: [])), forKey: "tokenizer.ggml.merges")
        writer.setValue(.uint32(UInt32(endOfGeneration)), forKey: "tokenizer.ggml.eos_token_id")
        return try! Tokenizer(metadata: try! GGUFFile(bytes: try! writer.encoded()).metadata)
    }

    /// A model that wants to write the tokens `tokens` after a prompt of `promptLength`
    /// tokens, as ``writer(_:promptLength:contextLength:)`` writes bytes, over a vocabulary of
    /// `size` tokens.
    static func writer(tokens target: [Int], promptLength: Int, size: Int) -> ScriptedSource {
        ScriptedSource { held in
            var logits = [Float](repeating: 0, count: size)
            logits[endOfGeneration] = 1
            let written = Array(held.dropFirst(promptLength))
            if written.count < target.count, target.starts(with: written) {
                logits[target[written.count]] = 10
            } else {
                logits[endOfGeneration] = 10
            }
            return logits
        }
    }

    /// The tokens of `text` in the thinking vocabulary: a byte each, `<think>` and `</think>`
    /// as their tokens.
    static func thinkingTokens(_ text: String) -> [Int] {
        thinkingTokenizer.encode(text, addingSpecialTokens: false, parsingSpecialTokens: true)
    }

    /// A model that wants to write `text` after a prompt of `promptLength` tokens: while what
    /// it has written is a proper prefix of `text`, the next byte of `text` has logit 10; once
    /// `text` is written, or the output has left it, the end of generation has 10. Otherwise
    /// the end of generation has 1 (the runner-up) and every other token 0 (among those, the
    /// lowest id wins greedy decoding's ties).
    static func writer(_ text: String, promptLength: Int, contextLength: Int = 4096) -> ScriptedSource {
        let target = Array(text.utf8)
        return ScriptedSource(contextLength: contextLength) { held in
            var logits = [Float](repeating: 0, count: size)
            logits[endOfGeneration] = 1
            let written = held.dropFirst(promptLength).map { UInt8(truncatingIfNeeded: $0) }
            if written.count < target.count, target.starts(with: written), held.dropFirst(promptLength).allSatisfy({ $0 < 256 }) {
                logits[Int(target[written.count])] = 10
            } else {
                logits[endOfGeneration] = 10
            }
            return logits
        }
    }
}
