import Foundation
import GGUF
import Testing
import TypesetTokenizer
import TypesetTestSupport

/// Token ids, pieces and special-token sets compared with llama.cpp's, as recorded once by
/// `Fixtures/make_tokenizer_fixtures.py` (llama-cpp-python 0.3.36) in `Fixtures/tokenizer/expected/`.
///
/// Each fixture key is a model: the three real ones, and SmolLM2's and Qwen's vocabularies under
/// other pre-tokenizers (the same metadata with only `tokenizer.ggml.pre` changed), which
/// exercises the splitters on vocabularies llama.cpp can load. Qwen's is a tiktoken-style
/// vocabulary like Llama 3's, SmolLM3's and LFM2's, so `qwen0.5b-pre-llama-bpe` (the whole
/// corpus) stands in for Llama 3, `-smaug-bpe` for SmolLM3, `-lfm2` for LFM2 and `-gpt-4o` for
/// Phi-4-mini. `gemma3-as-gemma4` is Gemma 3's vocabulary read as Gemma 4's tokenizer
/// (`gemma4`: SentencePiece's alphabet merged by rank), with merges derived from its scores the
/// way the fixture script derives them (``gemma4Merges(_:)``; their digest is recorded).
@Suite struct LlamaCppParityTests {
    static let realKeys = ["smollm2", "gemma3", "qwen0.5b"]
    static let keys = realKeys + [
        "smollm2-pre-default", "smollm2-pre-gpt-2", "smollm2-pre-llama-bpe", "smollm2-pre-qwen2", "smollm2-pre-deepseek-llm",
        "smollm2-pre-gpt-4o", "qwen0.5b-pre-llama-bpe", "qwen0.5b-pre-smaug-bpe", "qwen0.5b-pre-lfm2", "qwen0.5b-pre-gpt-4o",
        "gemma3-as-gemma4",
    ]

    /// The expectation files of one key.
    struct Expected {
        let json: [String: Any]
        /// Per document index: (plain ids, ids with special tokens added and parsed).
        let ids: [Int: (plain: [Int], special: [Int])]

        init(key: String) throws {
            json = try JSONSerialization.jsonObject(with: Fixtures.data("tokenizer/expected/\(key).json")) as! [String: Any]
            ids = try Self.readIDs(Fixtures.data("tokenizer/expected/\(key).ids"))
        }

        /// `TSID`, u32 version 1, u32 document count; per document u32 index, u32 count and
        /// LEB128 ids (plain), then u8 1 ("same as plain") or 0 + u32 count + ids (special).
        static func readIDs(_ data: Data) throws -> [Int: (plain: [Int], special: [Int])] {
            let bytes = [UInt8](data)
            var offset = 0
            func u32() -> Int {
                defer { offset += 4 }
                return Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 24
            }
            func varint() -> Int {
                var value = 0, shift = 0
                while true {
                    let byte = bytes[offset]
                    offset += 1
                    value |= Int(byte & 0x7F) << shift
                    if byte & 0x80 == 0 { return value }
                    shift += 7
                }
            }
            func list() -> [Int] { (0 ..< u32()).map { _ in varint() } }
            try #require(Array(bytes.prefix(4)) == Array("TSID".utf8))
            offset = 4
            try #require(u32() == 1)
            var result: [Int: (plain: [Int], special: [Int])] = [:]
            for _ in 0 ..< u32() {
                let index = u32()
                let plain = list()
                let same = bytes[offset] == 1
                offset += 1
                result[index] = (plain, same ? plain : list())
            }
            try #require(offset == bytes.count)
            return result
        }
    }

    /// Merges for a SentencePiece vocabulary read as Gemma 4's, as `make_tokenizer_fixtures.py`
    /// derives them: every split of a normal token (of two characters or more) into two normal
    /// tokens, ordered by the token's score (highest first), then its id, then the split's
    /// position in Unicode scalars. Texts compare as bytes, as Python's strings compare.
    static func gemma4Merges(_ vocabulary: Vocabulary) -> [String] {
        var normal = Set<[UInt8]>()
        for (token, type) in zip(vocabulary.tokens, vocabulary.types) where type == .normal { normal.insert(Array(token.utf8)) }
        var candidates: [(score: Float, id: Int, split: Int, merge: String)] = []
        for (id, token) in vocabulary.tokens.enumerated() where vocabulary.types[id] == .normal {
            let scalars = Array(token.unicodeScalars)
            guard scalars.count >= 2 else { continue }
            for split in 1 ..< scalars.count {
                var left = String.UnicodeScalarView(), right = String.UnicodeScalarView()
                left.append(contentsOf: scalars[..<split])
                right.append(contentsOf: scalars[split...])
                let (leftText, rightText) = (String(left), String(right))
                if normal.contains(Array(leftText.utf8)), normal.contains(Array(rightText.utf8)) {
                    candidates.append((vocabulary.scores[id], id, split, leftText + " " + rightText))
                }
            }
        }
        candidates.sort { ($0.score, -$0.id, -$0.split) > ($1.score, -$1.id, -$1.split) }
        return candidates.map(\.merge)
    }

    /// The tokenizer for a fixture key.
    static func tokenizer(for key: String) throws -> Tokenizer {
        if key == "gemma3-as-gemma4" {
            let metadata = try GGUFFile(contentsOf: TestModels.path(of: TestModels.fileName(of: "gemma3"))).metadata
            let merges = gemma4Merges(try Vocabulary(metadata: metadata))
            let identity = try Expected(key: key).json["model"] as! [String: Any]
            try #require(sha256(Array(merges.joined(separator: "\n").utf8)) == identity["merges_sha256"] as! String,
                         "the merges derived here differ from the fixture script's")
            var entries = metadata.entries.map { entry in
                entry.key == "tokenizer.ggml.model" ? GGUFMetadataEntry(key: entry.key, value: .string("gemma4")) : entry
            }
            entries.append(GGUFMetadataEntry(
                key: "tokenizer.ggml.merges", value: .array(try GGUFArray(elementType: .string, elements: merges.map(GGUFValue.string)))))
            return try Tokenizer(metadata: try GGUFMetadata(entries))
        }
        let parts = key.components(separatedBy: "-pre-")
        let metadata = try GGUFFile(contentsOf: TestModels.path(of: TestModels.fileName(of: parts[0]))).metadata
        guard parts.count == 2 else { return try Tokenizer(metadata: metadata) }
        let pre = parts[1]
        let entries = metadata.entries.map { entry in
            entry.key == "tokenizer.ggml.pre" ? GGUFMetadataEntry(key: entry.key, value: .string(pre)) : entry
        }
        return try Tokenizer(metadata: try GGUFMetadata(entries))
    }

    static func hex(_ text: String) -> [UInt8] {
        var result: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let high = iterator.next(), let low = iterator.next() {
            result.append(UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)!)
        }
        return result
    }

    static func sha256(_ bytes: [UInt8]) -> String {
        var digest = SHA256Digest()
        digest.update(bytes)
        return digest.finalize()
    }

    @Test(.enabled(if: TokenizerCorpus.shouldRun && TestModels.shouldRun(TestModels.qwen05FileName)), arguments: keys)
    func corpusIDsMatch(key: String) throws {
        let tokenizer = try Self.tokenizer(for: key)
        let expected = try Expected(key: key)
        let documents = try TokenizerCorpus.documents()
        let recorded = expected.json["documents"] as! [[String: Any]]
        #expect(!recorded.isEmpty)
        var compared = 0
        for record in recorded {
            let document = documents[record["index"] as! Int]
            let ids = try #require(expected.ids[document.index])
            let plain = document.bytes.withUnsafeBufferPointer {
                tokenizer.encode(bytes: $0, addingSpecialTokens: false, parsingSpecialTokens: false)
            }
            let special = document.bytes.withUnsafeBufferPointer {
                tokenizer.encode(bytes: $0, addingSpecialTokens: true, parsingSpecialTokens: true)
            }
            for (mode, ours, theirs) in [("plain", plain, ids.plain), ("special", special, ids.special)] where ours != theirs {
                let at = (0 ..< min(ours.count, theirs.count)).first { ours[$0] != theirs[$0] } ?? min(ours.count, theirs.count)
                Issue.record("\(key) \(document.name) (\(mode)): first difference at token \(at) of \(theirs.count): ours \(Array(ours[at...].prefix(8))), llama.cpp \(Array(theirs[at...].prefix(8)))")
            }
            let decoded = try tokenizer.decodeBytes(ids.plain)
            #expect(Self.sha256(decoded) == record["detokenized_sha256"] as! String, "\(key) \(document.name): detokenized text differs")
            compared += ids.plain.count + ids.special.count
        }
        #expect(compared > 100_000)
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.qwen05FileName)), arguments: realKeys)
    func vocabularyMatches(key: String) throws {
        let tokenizer = try Self.tokenizer(for: key)
        let vocabulary = tokenizer.vocabulary
        let json = try Expected(key: key).json
        #expect(vocabulary.count == json["n_vocab"] as! Int)
        #expect(vocabulary.bosTokenID == json["bos"] as? Int)
        #expect(vocabulary.eosTokenID == json["eos"] as? Int)
        // Without an end-of-turn id in the file, llama.cpp takes the first token named like one
        // in its hash map's iteration order (a property of the C++ library); with several such
        // tokens (Qwen: <|endoftext|> and <|im_end|>) ours may be another of them. Both end
        // generation either way.
        let eog = json["eog_ids"] as! [Int]
        #expect(vocabulary.eotTokenID == json["eot"] as? Int
                || (vocabulary.eotTokenID.map(eog.contains) == true && (json["eot"] as? Int).map(eog.contains) == true))
        #expect(vocabulary.addBOS == json["add_bos"] as! Bool)
        #expect(vocabulary.endOfGenerationTokenIDs == json["eog_ids"] as! [Int])
        // Attributes of every token that is not plainly normal, and its rendered piece.
        let nonNormal = json["non_normal_tokens"] as! [[Any]]
        var listed = Set<Int>()
        for entry in nonNormal {
            let id = entry[0] as! Int
            listed.insert(id)
            #expect(vocabulary.attributes[id].rawValue == UInt32(entry[1] as! Int), "attributes of \(id)")
            #expect(vocabulary.piece(of: id, rendersSpecialTokens: true) == Self.hex(entry[2] as! String), "piece of \(id)")
        }
        for id in 0 ..< vocabulary.count where !listed.contains(id) {
            #expect(vocabulary.attributes[id] == .normal, "token \(id) should be normal")
        }
        // Every piece, in both renderings, digested in chunks of 4,096 ids.
        let pieces = json["pieces"] as! [String: [String: Any]]
        for (mode, renders) in [("special", true), ("plain", false)] {
            let chunks = pieces[mode]!["chunks"] as! [String]
            let chunkSize = Int("\(pieces[mode]!["chunk_ids"]!)")!
            var whole = SHA256Digest()
            for (chunk, expectedDigest) in chunks.enumerated() {
                var digest = SHA256Digest()
                for id in chunk * chunkSize ..< min((chunk + 1) * chunkSize, vocabulary.count) {
                    let piece = vocabulary.piece(of: id, rendersSpecialTokens: renders)
                    let record = withUnsafeBytes(of: UInt32(piece.count).littleEndian, Array.init) + piece
                    digest.update(record)
                    whole.update(record)
                }
                #expect(digest.finalize() == expectedDigest, "\(key) pieces (\(mode)) ids \(chunk * chunkSize)…")
            }
            #expect(whole.finalize() == pieces[mode]!["sha256"] as! String)
        }
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.qwen05FileName)), arguments: realKeys)
    func probesMatch(key: String) throws {
        let tokenizer = try Self.tokenizer(for: key)
        let probes = try Expected(key: key).json["probes"] as! [[String: Any]]
        #expect(probes.count >= 15)
        for probe in probes {
            let bytes = Self.hex(probe["hex"] as! String)
            let plain = bytes.withUnsafeBufferPointer { tokenizer.encode(bytes: $0, addingSpecialTokens: false) }
            let special = bytes.withUnsafeBufferPointer {
                tokenizer.encode(bytes: $0, addingSpecialTokens: true, parsingSpecialTokens: true)
            }
            #expect(plain == probe["plain"] as! [Int], "\(key) probe \(String(decoding: bytes.prefix(40), as: UTF8.self).debugDescription)")
            #expect(special == probe["special"] as! [Int], "\(key) probe \(String(decoding: bytes.prefix(40), as: UTF8.self).debugDescription) (special)")
        }
    }
}
