/// One key–value pair of a file's metadata, with where it was read.
public struct GGUFMetadataEntry: Sendable, Equatable {
    public let key: String
    public let value: GGUFValue
    /// Byte offset of the entry (its key's length field) in the file; 0 for entries built in memory.
    public let offset: Int

    public init(key: String, value: GGUFValue, offset: Int = 0) {
        self.key = key
        self.value = value
        self.offset = offset
    }
}

/// A file's metadata: the entries in file order, with lookup by key.
///
/// Typed accessors return `nil` for an absent key and throw ``GGUFError/typeMismatch(key:expected:found:)``
/// when the key holds another type, so a malformed file is never silently read as "absent".
/// Integer accessors accept any of the eight integer types, as writers differ (`uint32` vs `int32`).
public struct GGUFMetadata: Sendable, RandomAccessCollection {
    public let entries: [GGUFMetadataEntry]
    private let indexByKey: [String: Int]

    /// Builds metadata from entries with distinct keys. Throws ``GGUFError/duplicateKey(_:offset:)``.
    public init(_ entries: [GGUFMetadataEntry]) throws(GGUFError) {
        var index: [String: Int] = [:]
        index.reserveCapacity(entries.count)
        for (position, entry) in entries.enumerated() {
            guard index.updateValue(position, forKey: entry.key) == nil else {
                throw .duplicateKey(entry.key, offset: entry.offset)
            }
        }
        self.entries = entries
        self.indexByKey = index
    }

    public var startIndex: Int { entries.startIndex }
    public var endIndex: Int { entries.endIndex }
    public subscript(position: Int) -> GGUFMetadataEntry { entries[position] }

    /// The value stored under `key`, if any. O(1).
    public subscript(key: String) -> GGUFValue? {
        indexByKey[key].map { entries[$0].value }
    }

    public func contains(key: String) -> Bool { indexByKey[key] != nil }

    // MARK: Typed accessors

    public func string(_ key: String) throws(GGUFError) -> String? {
        guard let value = self[key] else { return nil }
        guard case let .string(string) = value else { throw mismatch(key, "string", value) }
        return string
    }

    public func integer(_ key: String) throws(GGUFError) -> Int? {
        guard let value = self[key] else { return nil }
        switch value {
        case .uint8, .int8, .uint16, .int16, .uint32, .int32, .uint64, .int64:
            guard let integer = value.integerValue else {
                throw .valueOutOfRange(key: key, value: "\(value)")
            }
            return integer
        default:
            throw mismatch(key, "an integer", value)
        }
    }

    /// A floating-point value; integer values are accepted and converted.
    public func double(_ key: String) throws(GGUFError) -> Double? {
        guard let value = self[key] else { return nil }
        if let double = value.floatingPointValue { return double }
        if let integer = value.integerValue { return Double(integer) }
        throw mismatch(key, "a number", value)
    }

    public func bool(_ key: String) throws(GGUFError) -> Bool? {
        guard let value = self[key] else { return nil }
        guard case let .bool(bool) = value else { throw mismatch(key, "bool", value) }
        return bool
    }

    public func array(_ key: String) throws(GGUFError) -> GGUFArray? {
        guard let value = self[key] else { return nil }
        guard case let .array(array) = value else { throw mismatch(key, "array", value) }
        return array
    }

    public func stringArray(_ key: String) throws(GGUFError) -> [String]? {
        guard let array = try array(key) else { return nil }
        guard let strings = array.strings() else { throw mismatch(key, "array[string]", .array(array)) }
        return strings
    }

    public func integerArray(_ key: String) throws(GGUFError) -> [Int]? {
        guard let array = try array(key) else { return nil }
        guard let integers = array.integers() else { throw mismatch(key, "array of integers", .array(array)) }
        return integers
    }

    public func booleanArray(_ key: String) throws(GGUFError) -> [Bool]? {
        guard let array = try array(key) else { return nil }
        guard array.elementType == .bool else { throw mismatch(key, "array[bool]", .array(array)) }
        return array.map { if case let .bool(flag) = $0 { flag } else { false } }
    }

    public func floatArray(_ key: String) throws(GGUFError) -> [Float]? {
        guard let array = try array(key) else { return nil }
        guard let floats = array.floats() else { throw mismatch(key, "array[float32]", .array(array)) }
        return floats
    }

    /// Unwraps an optional accessor result, throwing ``GGUFError/missingKey(_:)`` for `nil`.
    ///
    ///     let length = try metadata.required("llama.context_length", metadata.integer)
    public func required<T>(_ key: String, _ accessor: (String) throws(GGUFError) -> T?) throws(GGUFError) -> T {
        guard let value = try accessor(key) else { throw .missingKey(key) }
        return value
    }

    private func mismatch(_ key: String, _ expected: String, _ value: GGUFValue) -> GGUFError {
        .typeMismatch(key: key, expected: expected, found: value.typeDescription)
    }
}

// MARK: - Well-known keys

extension GGUFMetadata {
    /// `general.architecture`, for example `llama` or `gemma3`.
    public var architecture: String? { get throws(GGUFError) { try string("general.architecture") } }
    /// `general.name`.
    public var name: String? { get throws(GGUFError) { try string("general.name") } }
    /// `general.alignment`, the alignment of tensor data in bytes (32 when absent).
    public var alignment: Int { get throws(GGUFError) {
        if let alignment = try integer("general.alignment") { return alignment }
        return GGUFFile.defaultAlignment
    } }
    /// `general.file_type`, llama.cpp's code for the dominant quantisation.
    public var fileType: Int? { get throws(GGUFError) { try integer("general.file_type") } }

    /// The architecture's hyper-parameters, which GGUF stores under `<architecture>.<name>`.
    public var hyperparameters: GGUFHyperparameters { get throws(GGUFError) {
        GGUFHyperparameters(metadata: self, architecture: try required("general.architecture", string))
    } }

    /// The tokenizer description stored under `tokenizer.ggml.*`.
    public var tokenizer: GGUFTokenizerMetadata { GGUFTokenizerMetadata(metadata: self) }
}

/// Typed access to `<architecture>.*` hyper-parameters. Each accessor returns `nil` when the key
/// is absent and throws when it holds the wrong type.
public struct GGUFHyperparameters: Sendable {
    public let metadata: GGUFMetadata
    public let architecture: String

    /// The full key of an architecture-scoped parameter: `"\(architecture).\(name)"`.
    public func key(_ name: String) -> String { "\(architecture).\(name)" }

    public func integer(_ name: String) throws(GGUFError) -> Int? { try metadata.integer(key(name)) }
    public func double(_ name: String) throws(GGUFError) -> Double? { try metadata.double(key(name)) }

    /// Training context length in tokens.
    public var contextLength: Int? { get throws(GGUFError) { try integer("context_length") } }
    /// Width of the residual stream.
    public var embeddingLength: Int? { get throws(GGUFError) { try integer("embedding_length") } }
    /// Number of transformer blocks.
    public var blockCount: Int? { get throws(GGUFError) { try integer("block_count") } }
    /// Hidden width of the feed-forward network.
    public var feedForwardLength: Int? { get throws(GGUFError) { try integer("feed_forward_length") } }
    /// Query heads.
    public var headCount: Int? { get throws(GGUFError) { try integer("attention.head_count") } }
    /// Key/value heads (grouped-query attention); equals `headCount` when absent.
    public var headCountKV: Int? { get throws(GGUFError) {
        if let count = try integer("attention.head_count_kv") { return count }
        return try headCount
    } }
    /// Per-head key width, when the model states it.
    public var keyLength: Int? { get throws(GGUFError) { try integer("attention.key_length") } }
    /// Per-head value width, when the model states it.
    public var valueLength: Int? { get throws(GGUFError) { try integer("attention.value_length") } }
    /// RMSNorm epsilon.
    public var rmsNormEpsilon: Double? { get throws(GGUFError) { try double("attention.layer_norm_rms_epsilon") } }
    /// RoPE base frequency.
    public var ropeFrequencyBase: Double? { get throws(GGUFError) { try double("rope.freq_base") } }
    /// Sliding-window width for local attention layers (gemma3).
    public var slidingWindow: Int? { get throws(GGUFError) { try integer("attention.sliding_window") } }
    /// Vocabulary size, when the model states it (otherwise the token list's length).
    public var vocabularySize: Int? { get throws(GGUFError) { try integer("vocab_size") } }
}

/// Typed access to `tokenizer.ggml.*` and `tokenizer.chat_template`.
public struct GGUFTokenizerMetadata: Sendable {
    public let metadata: GGUFMetadata

    /// `tokenizer.ggml.model`: `gpt2` (byte-level BPE), `llama` (SentencePiece), …
    public var model: String? { get throws(GGUFError) { try metadata.string("tokenizer.ggml.model") } }
    /// `tokenizer.ggml.pre`: the pre-tokenizer name (`smollm`, `llama-bpe`, `default`, …).
    public var preTokenizer: String? { get throws(GGUFError) { try metadata.string("tokenizer.ggml.pre") } }
    /// `tokenizer.ggml.tokens`, undecoded.
    public var tokens: GGUFArray? { get throws(GGUFError) { try metadata.array("tokenizer.ggml.tokens") } }
    /// `tokenizer.ggml.token_type`: llama.cpp's token attributes (1 normal, 2 unknown, 3 control,
    /// 4 user-defined, 5 unused, 6 byte).
    public var tokenTypes: [Int]? { get throws(GGUFError) { try metadata.integerArray("tokenizer.ggml.token_type") } }
    /// `tokenizer.ggml.scores` (SentencePiece piece scores).
    public var scores: [Float]? { get throws(GGUFError) { try metadata.floatArray("tokenizer.ggml.scores") } }
    /// `tokenizer.ggml.merges`, undecoded (`"a b"` pairs in rank order).
    public var merges: GGUFArray? { get throws(GGUFError) { try metadata.array("tokenizer.ggml.merges") } }
    public var bosTokenID: Int? { get throws(GGUFError) { try metadata.integer("tokenizer.ggml.bos_token_id") } }
    public var eosTokenID: Int? { get throws(GGUFError) { try metadata.integer("tokenizer.ggml.eos_token_id") } }
    public var eotTokenID: Int? { get throws(GGUFError) { try metadata.integer("tokenizer.ggml.eot_token_id") } }
    public var unknownTokenID: Int? { get throws(GGUFError) { try metadata.integer("tokenizer.ggml.unknown_token_id") } }
    public var paddingTokenID: Int? { get throws(GGUFError) { try metadata.integer("tokenizer.ggml.padding_token_id") } }
    public var addBOSToken: Bool? { get throws(GGUFError) { try metadata.bool("tokenizer.ggml.add_bos_token") } }
    public var addEOSToken: Bool? { get throws(GGUFError) { try metadata.bool("tokenizer.ggml.add_eos_token") } }
    public var addSpacePrefix: Bool? { get throws(GGUFError) { try metadata.bool("tokenizer.ggml.add_space_prefix") } }
    /// `tokenizer.chat_template` (a Jinja template), when the model has one.
    public var chatTemplate: String? { get throws(GGUFError) { try metadata.string("tokenizer.chat_template") } }
}
