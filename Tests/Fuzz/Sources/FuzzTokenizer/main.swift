import CLibFuzzer
import GGUF
import TypesetTokenizer
import TypesetTestSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The fuzz target: encodes the input with both real tokenizers (SmolLM2's byte-level BPE and
// Gemma 3's SentencePiece), with and without special-token parsing, and checks what must hold
// for any bytes at all:
//   - every id is in the vocabulary, and decoding succeeds;
//   - well-formed UTF-8 without "▁" comes back byte for byte (plain mode), unless it holds an
//     ASCII byte the vocabulary has no token for (SmolLM2 lacks 0x04 0x06 0x13 0x14 0x16
//     0x1D; llama.cpp drops those bytes too);
//   - streaming the ids one by one gives exactly the decoded text.
// Any trap, crash, sanitizer report or failed check is a bug in the tokenizer. The models come
// from $TYPESET_CACHE (bash Fixtures/fetch.sh).

func load(_ fileName: String) -> Tokenizer {
    do {
        return try Tokenizer(metadata: try GGUFFile(contentsOf: TestModels.path(of: fileName)).metadata)
    } catch {
        fatalError("cannot load \(fileName): \(error) (run bash Fixtures/fetch.sh)")
    }
}

let tokenizers = [load(TestModels.smolLM2FileName), load(TestModels.gemma3FileName)]

/// Per tokenizer, the ASCII bytes that encode to nothing on their own.
let untokenizableBytes: [Set<UInt8>] = tokenizers.map { tokenizer in
    Set((0 ..< 0x80).map(UInt8.init).filter { byte in
        [byte].withUnsafeBufferPointer { tokenizer.encode(bytes: $0, addingSpecialTokens: false) }.isEmpty
    })
}

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

var argumentCount = CommandLine.argc
var arguments: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argumentCount, &arguments) { data, size in
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let text = Array(bytes)
    let roundTrips = String(validating: text, as: UTF8.self).map { !$0.contains("▁") } ?? false
    for (tokenizer, untokenizable) in zip(tokenizers, untokenizableBytes) {
        for parse in [false, true] {
            let ids = tokenizer.encode(bytes: bytes, addingSpecialTokens: parse, parsingSpecialTokens: parse)
            check(ids.allSatisfy { (0 ..< tokenizer.vocabulary.count).contains($0) }, "id out of range")
            guard let decoded = try? tokenizer.decodeBytes(ids, removingSpecialTokens: true, renderingSpecialTokens: parse) else {
                fatalError("decoding failed")
            }
            if !parse && roundTrips && tokenizer.preTokenizer?.cleansUpSpaces != true && !text.contains(where: untokenizable.contains) {
                check(decoded == text, "round trip failed for \(text)")
            }
            var streaming = tokenizer.makeStreamingDetokenizer()
            var streamed = ""
            for id in ids { streamed += (try? streaming.append(id)) ?? "" }
            streamed += streaming.finish()
            let plain = (try? tokenizer.decode(ids)) ?? ""
            check(streamed == plain, "streaming differs from decoding")
        }
    }
    return 0
})
