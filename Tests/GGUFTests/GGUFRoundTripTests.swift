import GGUF
import Testing
import TypesetTestSupport

/// Writer → reader round trips: every metadata type, nested arrays, both versions, custom
/// alignment, tensors of every type, and randomly generated files.
@Suite struct GGUFRoundTripTests {
    /// One value of each of the thirteen types, plus edge values and nested arrays.
    static func everyTypeEntries() throws -> [(String, GGUFValue)] {
        [
            ("t.uint8", .uint8(255)),
            ("t.int8", .int8(-128)),
            ("t.uint16", .uint16(65535)),
            ("t.int16", .int16(-32768)),
            ("t.uint32", .uint32(4_000_000_000)),
            ("t.int32", .int32(-2_000_000_000)),
            ("t.float32", .float32(-1.5e-7)),
            ("t.bool.true", .bool(true)),
            ("t.bool.false", .bool(false)),
            ("t.string", .string("héllo, wörld ▁ 🙂 中文 \u{0}")),
            ("t.string.empty", .string("")),
            ("t.uint64", .uint64(UInt64.max)),
            ("t.int64", .int64(Int64.min)),
            ("t.float64", .float64(.pi)),
            ("t.array.empty", .array(try GGUFArray(elementType: .float32, elements: []))),
            ("t.array.int32", .array(try GGUFArray(elementType: .int32, elements: (0..<100).map { .int32(Int32($0) * -7) }))),
            ("t.array.string", .array(try GGUFArray(elementType: .string, elements: ["a", "", "▁the", "<0x0A>", "🙂"].map { .string($0) }))),
            ("t.array.bool", .array(try GGUFArray(elementType: .bool, elements: [.bool(true), .bool(false)]))),
            ("t.array.float64", .array(try GGUFArray(elementType: .float64, elements: [.float64(-0.0), .float64(1e300)]))),
            ("t.array.nested", .array(try GGUFArray(elementType: .array, elements: [
                .array(try GGUFArray(elementType: .uint8, elements: [.uint8(1), .uint8(2)])),
                .array(try GGUFArray(elementType: .string, elements: [.string("x")])),
                .array(try GGUFArray(elementType: .array, elements: [
                    .array(try GGUFArray(elementType: .int64, elements: [.int64(-1)])),
                ])),
                .array(try GGUFArray(elementType: .uint16, elements: [])),
            ]))),
        ]
    }

    @Test(arguments: [UInt32(2), 3])
    func everyMetadataTypeRoundTrips(version: UInt32) throws {
        var writer = GGUFWriter(version: version)
        let entries = try Self.everyTypeEntries()
        for (key, value) in entries { writer.setValue(value, forKey: key) }
        let file = try GGUFFile(bytes: try writer.encoded())
        #expect(file.version == version)
        #expect(file.metadata.count == entries.count)
        #expect(file.tensorInfos.isEmpty)
        for ((key, value), entry) in zip(entries, file.metadata) {
            #expect(entry.key == key)
            #expect(entry.value == value, "\(key)")
            #expect(file.metadata[key] == value)
        }
        // Every type id the format defines is exercised.
        let types = Set(file.metadata.map(\.value.type))
        #expect(types == Set(GGUFValueType.allCases))
    }

    /// A file-backed integer array is read in place by `integers()`: the same values as its
    /// elements one by one (and as written), every width and signedness at its extremes, and
    /// `nil` for a `uint64` past `Int.max` as element by element.
    @Test func integerArraysReadInPlaceMatchTheirElements() throws {
        func entry<T: FixedWidthInteger>(_: T.Type, _ type: GGUFValueType, _ make: (T) -> GGUFValue) throws -> (String, GGUFValue, [Int]?) {
            let values: [T] = [T.min, T.max, 0, 1, T.max / 3, T.min / 5, T.max - 1]
            let exact = values.map { Int(exactly: $0) }
            return ("t.\(type)", .array(try GGUFArray(elementType: type, elements: values.map(make))),
                    exact.contains(nil) ? nil : exact.map { $0! })
        }
        let entries = [
            try entry(UInt8.self, .uint8, GGUFValue.uint8), try entry(Int8.self, .int8, GGUFValue.int8),
            try entry(UInt16.self, .uint16, GGUFValue.uint16), try entry(Int16.self, .int16, GGUFValue.int16),
            try entry(UInt32.self, .uint32, GGUFValue.uint32), try entry(Int32.self, .int32, GGUFValue.int32),
            try entry(UInt64.self, .uint64, GGUFValue.uint64), try entry(Int64.self, .int64, GGUFValue.int64),
        ]
        var writer = GGUFWriter(version: 3)
        for (key, value, _) in entries { writer.setValue(value, forKey: key) }
        let file = try GGUFFile(bytes: try writer.encoded())
        for (key, _, expected) in entries {
            guard case let .array(array)? = file.metadata[key] else { Issue.record("\(key) is missing"); continue }
            #expect(array.fileByteRange != nil, "\(key) is read in place")
            let oneByOne = array.map(\.integerValue)
            #expect(array.integers() == expected, "\(key)")
            #expect(array.integers() == (oneByOne.contains(nil) ? nil : oneByOne.map { $0! }), "\(key)")
        }
        // Both outcomes are exercised: only uint64's maximum does not fit.
        #expect(entries.filter { $0.2 == nil }.map(\.0) == ["t.uint64"])
        // Not integers, even with no element to say so.
        #expect(try GGUFArray(elementType: .float32, elements: []).integers() == nil)
        #expect(try GGUFArray(elementType: .int16, elements: []).integers() == [])
    }

    @Test func typedAccessors() throws {
        var writer = GGUFWriter()
        writer.setValue(.string("llama"), forKey: "general.architecture")
        writer.setValue(.uint32(8192), forKey: "llama.context_length")
        writer.setValue(.int32(576), forKey: "llama.embedding_length")
        writer.setValue(.float32(1e-5), forKey: "llama.attention.layer_norm_rms_epsilon")
        writer.setValue(.uint64(UInt64.max), forKey: "big")
        writer.setValue(.bool(true), forKey: "tokenizer.ggml.add_bos_token")
        writer.setValue(.array(try GGUFArray(elementType: .string, elements: [.string("a"), .string("b")])), forKey: "tokenizer.ggml.tokens")
        writer.setValue(.array(try GGUFArray(elementType: .float32, elements: [.float32(-1), .float32(0.5)])), forKey: "tokenizer.ggml.scores")
        writer.setValue(.array(try GGUFArray(elementType: .int32, elements: [.int32(3), .int32(1)])), forKey: "tokenizer.ggml.token_type")
        let metadata = try GGUFFile(bytes: try writer.encoded()).metadata

        #expect(try metadata.architecture == "llama")
        #expect(try metadata.hyperparameters.contextLength == 8192)
        #expect(try metadata.hyperparameters.embeddingLength == 576)
        #expect(try metadata.hyperparameters.rmsNormEpsilon == Double(Float(1e-5)))
        #expect(try metadata.hyperparameters.blockCount == nil)
        #expect(try metadata.tokenizer.addBOSToken == true)
        #expect(try metadata.tokenizer.tokens?.strings() == ["a", "b"])
        #expect(try metadata.tokenizer.scores == [-1, 0.5])
        #expect(try metadata.tokenizer.tokenTypes == [3, 1])
        #expect(try metadata.alignment == 32)

        #expect(throws: GGUFError.typeMismatch(key: "general.architecture", expected: "an integer", found: "string")) {
            try metadata.integer("general.architecture")
        }
        #expect(throws: GGUFError.valueOutOfRange(key: "big", value: "\(GGUFValue.uint64(UInt64.max))")) {
            try metadata.integer("big")
        }
        #expect(throws: GGUFError.missingKey("absent")) { try metadata.required("absent", metadata.string) }
        #expect(throws: GGUFError.typeMismatch(key: "tokenizer.ggml.tokens", expected: "array[float32]", found: "array[string]")) {
            try metadata.floatArray("tokenizer.ggml.tokens")
        }
    }

    @Test(arguments: [32, 64, 1, 4096])
    func tensorsOfEveryTypeRoundTrip(alignment: Int) throws {
        var writer = GGUFWriter()
        if alignment != 32 { writer.setValue(.uint32(UInt32(alignment)), forKey: "general.alignment") }
        var generator = SplitMix64(seed: UInt64(alignment))
        var expected: [String: [UInt8]] = [:]
        for type in GGMLType.allCases {
            let shape = [type.blockSize * 3, 2]
            let byteCount = try #require(type.byteCount(elementCount: shape.reduce(1, *)))
            let data = (0..<byteCount).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let name = "tensor.\(type.name.lowercased())"
            try writer.addTensor(name: name, shape: shape, type: type, data: data)
            expected[name] = data
        }
        try writer.addTensor(name: "scalar", shape: [], type: .f32, data: [0, 0, 0x80, 0x3f])
        try writer.addTensor(name: "empty", shape: [0, 7], type: .q8_0, data: [])

        let file = try GGUFFile(bytes: try writer.encoded())
        #expect(file.alignment == alignment)
        #expect(file.dataSectionOffset % alignment == 0)
        #expect(file.tensorInfos.count == GGMLType.allCases.count + 2)
        for tensor in file.tensors {
            #expect(tensor.info.fileOffset % alignment == 0)
            #expect(tensor.info.fileOffset == file.dataSectionOffset + tensor.info.dataOffset)
            if let data = expected[tensor.name] {
                #expect(Array(tensor.bytes) == data, "\(tensor.name)")
                #expect(tensor.info.rowCount == 2)
                #expect(Array(tensor.row(1)) == Array(data.suffix(data.count / 2)))
            }
        }
        let scalar = try file.tensor(named: "scalar")
        #expect(scalar.info.elementCount == 1 && scalar.shape == [])
        #expect(scalar.bytes.loadUnaligned(as: Float.self) == 1)
        #expect(try file.tensor(named: "empty").info.byteCount == 0)
        #expect(throws: GGUFError.missingTensor("nope")) { try file.tensor(named: "nope") }
    }

    @Test func writerRejectsInconsistentTensors() throws {
        var writer = GGUFWriter()
        #expect(throws: GGUFError.self) { try writer.addTensor(name: "a", shape: [33], type: .q4_0, data: []) }
        #expect(throws: GGUFError.self) { try writer.addTensor(name: "a", shape: [32], type: .q4_0, data: [0]) }
        #expect(throws: GGUFError.self) { try writer.addTensor(name: "a", shape: [1, 1, 1, 1, 1], type: .f32, data: [0, 0, 0, 0]) }
        try writer.addTensor(name: "a", shape: [32], type: .q4_0, data: Array(repeating: 0, count: 18))
        #expect(throws: GGUFError.self) { try writer.addTensor(name: "a", shape: [32], type: .q4_0, data: Array(repeating: 0, count: 18)) }
        #expect(throws: GGUFError.self) { try GGUFArray(elementType: .int32, elements: [.uint8(1)]) }
    }

    /// Random files: random keys, types (nesting included) and tensors, written and read back.
    @Test(arguments: 0..<50)
    func randomFilesRoundTrip(seed: Int) throws {
        var generator = SplitMix64(seed: UInt64(seed) &* 0x9E37_79B9)
        var writer = GGUFWriter(version: seed % 2 == 0 ? 3 : 2)
        var entries: [(String, GGUFValue)] = []
        for index in 0..<Int.random(in: 0...30, using: &generator) {
            let value = try randomValue(depth: 0, using: &generator)
            entries.append(("key.\(index).\(value.type)", value))
            writer.setValue(value, forKey: entries.last!.0)
        }
        let types: [GGMLType] = [.f32, .f16, .q4_0, .q4_K, .q6_K, .bf16, .iq2_XXS]
        for index in 0..<Int.random(in: 0...6, using: &generator) {
            let type = types.randomElement(using: &generator)!
            let shape = [type.blockSize * Int.random(in: 0...3, using: &generator), Int.random(in: 1...3, using: &generator)]
            let data = (0..<type.byteCount(elementCount: shape[0] * shape[1])!).map { _ in UInt8.random(in: 0...255, using: &generator) }
            try writer.addTensor(name: "w\(index)", shape: shape, type: type, data: data)
        }
        let file = try GGUFFile(bytes: try writer.encoded())
        #expect(file.metadata.map(\.key) == entries.map(\.0))
        #expect(file.metadata.map(\.value) == entries.map(\.1))
        #expect(file.tensorInfos.count == writer.tensors.count)
        for (written, read) in zip(writer.tensors, file.tensors) {
            #expect(read.name == written.name && read.shape == written.shape && read.type == written.type)
            #expect(Array(read.bytes) == written.data)
        }
    }

    /// A random value of a random type; arrays nest at most three deep.
    private func randomValue(depth: Int, using generator: inout SplitMix64) throws -> GGUFValue {
        let types = depth < 3 ? GGUFValueType.allCases : GGUFValueType.allCases.filter { $0 != .array }
        return try randomValue(of: types.randomElement(using: &generator)!, depth: depth, using: &generator)
    }

    private func randomValue(of type: GGUFValueType, depth: Int, using generator: inout SplitMix64) throws -> GGUFValue {
        switch type {
        case .array:
            let elementTypes = depth < 2 ? GGUFValueType.allCases : GGUFValueType.allCases.filter { $0 != .array }
            let elementType = elementTypes.randomElement(using: &generator)!
            let elements = try (0..<Int.random(in: 0...5, using: &generator)).map { _ in
                try randomValue(of: elementType, depth: depth + 1, using: &generator)
            }
            return .array(try GGUFArray(elementType: elementType, elements: elements))
        case .string:
            let scalars = (0..<Int.random(in: 0...12, using: &generator)).map { _ in
                ["a", "é", "▁", "🙂", "中", "\n", "\u{0}"].randomElement(using: &generator)!
            }
            return .string(scalars.joined())
        case .uint8: return .uint8(.random(in: .min ... .max, using: &generator))
        case .int8: return .int8(.random(in: .min ... .max, using: &generator))
        case .uint16: return .uint16(.random(in: .min ... .max, using: &generator))
        case .int16: return .int16(.random(in: .min ... .max, using: &generator))
        case .uint32: return .uint32(.random(in: .min ... .max, using: &generator))
        case .int32: return .int32(.random(in: .min ... .max, using: &generator))
        case .uint64: return .uint64(.random(in: .min ... .max, using: &generator))
        case .int64: return .int64(.random(in: .min ... .max, using: &generator))
        case .float32: return .float32(Float.random(in: -1e6...1e6, using: &generator))
        case .float64: return .float64(Double.random(in: -1e12...1e12, using: &generator))
        case .bool: return .bool(Bool.random(using: &generator))
        }
    }
}
