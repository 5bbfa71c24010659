import Foundation
import GGUF
import TypesetTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The real models against gguf-py's reading of them (`Fixtures/expected/*.gguf-py.json`,
/// produced once by `Fixtures/gguf_py_dump.py`), and hostile mutations of their headers.
@Suite struct GGUFRealModelTests {
    static let models = TestModels.realModels.map(\.fileName)

    struct Expected: Decodable {
        struct Entry: Decodable {
            var key: String
            var type: String
            var value: JSONScalar?
            var element_type: String?
            var count: Int?
            var head: [JSONScalar]?
        }
        struct Tensor: Decodable {
            var name: String
            var type: String
            var shape: [Int]
            var offset: Int
            var file_offset: Int
            var n_bytes: Int
        }
        var version: Int
        var tensor_count: Int
        var kv_count: Int
        var alignment: Int
        var data_offset: Int
        var metadata: [Entry]
        var tensors: [Tensor]
    }

    enum JSONScalar: Decodable, Equatable {
        case bool(Bool), integer(Int), number(Double), string(String)
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(Bool.self) { self = .bool(value) }
            else if let value = try? container.decode(Int.self) { self = .integer(value) }
            else if let value = try? container.decode(Double.self) { self = .number(value) }
            else { self = .string(try container.decode(String.self)) }
        }

        /// Whether a GGUF value equals what gguf-py printed (float32 compared after rounding
        /// gguf-py's double back to float32, bit for bit).
        func matches(_ value: GGUFValue) -> Bool {
            switch (self, value) {
            case let (.bool(expected), .bool(actual)): expected == actual
            case let (.string(expected), .string(actual)): expected == actual
            case let (.integer(expected), .float32(actual)): Float(expected) == actual   // JSON "100000.0"
            case let (.integer(expected), .float64(actual)): Double(expected) == actual
            case let (.integer(expected), _): value.integerValue == expected
            case let (.number(expected), .float32(actual)): Float(expected).bitPattern == actual.bitPattern
            case let (.number(expected), .float64(actual)): expected == actual
            default: false
            }
        }
    }

    static func expected(for fileName: String) throws -> Expected {
        try JSONDecoder().decode(Expected.self, from: Fixtures.data("expected/\(fileName).gguf-py.json"))
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName) && TestModels.shouldRun(TestModels.gemma3FileName)),
          arguments: models)
    func matchesGGUFPy(fileName: String) throws {
        let expected = try Self.expected(for: fileName)
        let file = try GGUFFile(contentsOf: TestModels.path(of: fileName))

        #expect(Int(file.version) == expected.version)
        #expect(file.tensorInfos.count == expected.tensor_count)
        #expect(file.metadata.count == expected.kv_count)
        #expect(file.alignment == expected.alignment)
        #expect(file.dataSectionOffset == expected.data_offset)

        #expect(file.metadata.map(\.key) == expected.metadata.map(\.key))
        for (entry, reference) in zip(file.metadata, expected.metadata) {
            #expect(entry.value.type.description == reference.type, "\(entry.key)")
            if case let .array(array) = entry.value {
                #expect(array.elementType.description == reference.element_type, "\(entry.key)")
                #expect(array.count == reference.count, "\(entry.key)")
                let head = Array(array.prefix(reference.head?.count ?? 0))
                #expect(zip(reference.head ?? [], head).allSatisfy { $0.matches($1) }, "\(entry.key)")
            } else {
                #expect(reference.value?.matches(entry.value) == true, "\(entry.key): \(entry.value)")
            }
        }

        #expect(file.tensorInfos.map(\.name) == expected.tensors.map(\.name))
        for (info, reference) in zip(file.tensorInfos, expected.tensors) {
            #expect(info.type.name == reference.type, "\(info.name)")
            #expect(info.shape == reference.shape, "\(info.name)")
            #expect(info.dataOffset == reference.offset, "\(info.name)")
            #expect(info.fileOffset == reference.file_offset, "\(info.name)")
            #expect(info.byteCount == reference.n_bytes, "\(info.name)")
        }
    }

    /// Tensor views point into the mapping itself: nothing is copied to read a tensor.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName)))
    func tensorViewsAreZeroCopy() throws {
        let file = try GGUFFile(contentsOf: TestModels.smolLM2Path)
        let base = file.withUnsafeFileBytes { UInt(bitPattern: $0.baseAddress) }
        for tensor in file.tensors {
            let start = UInt(bitPattern: tensor.bytes.baseAddress)
            #expect(start == base + UInt(tensor.info.fileOffset))
            #expect(start % UInt(file.alignment) == 0)
        }
        // The view outlives the file value and stays readable.
        let embedding = try GGUFFile(contentsOf: TestModels.smolLM2Path).tensor(named: "token_embd.weight")
        #expect(embedding.type == .q8_0 && embedding.shape == [576, 49152])
        #expect(embedding.bytes.count == 49152 * 576 / 32 * 34)
        #expect(embedding.row(49151).count == 576 / 32 * 34)
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName) && TestModels.shouldRun(TestModels.gemma3FileName)))
    func typedAccessorsOnRealModels() throws {
        let smol = try GGUFFile(contentsOf: TestModels.smolLM2Path).metadata
        #expect(try smol.architecture == "llama")
        #expect(try smol.hyperparameters.contextLength == 8192)
        #expect(try smol.hyperparameters.headCountKV == 3)
        #expect(try smol.tokenizer.model == "gpt2")
        #expect(try smol.tokenizer.preTokenizer == "smollm")
        #expect(try smol.tokenizer.merges?.count == 48900)
        #expect(try smol.tokenizer.chatTemplate?.contains("<|im_start|>") == true)
        let tokens = try #require(try smol.tokenizer.tokens?.strings())
        #expect(tokens.count == 49152 && tokens[1] == "<|im_start|>")

        let gemma = try GGUFFile(contentsOf: TestModels.gemma3Path).metadata
        #expect(try gemma.architecture == "gemma3")
        #expect(try gemma.hyperparameters.slidingWindow == 512)
        #expect(try gemma.hyperparameters.keyLength == 256)
        #expect(try gemma.tokenizer.scores?.count == 262_144)
        #expect(try gemma.tokenizer.addBOSToken == true)
        #expect(try gemma.tokenizer.chatTemplate == nil)
    }

    // MARK: Mutating real headers

    /// Every byte position of the header region of both real models, mutated in place in a
    /// private copy-on-write mapping and parsed again: each result is a typed error or a file
    /// whose every array, accessor and tensor view can be used safely.
    ///
    /// The header region is all of it (magic, counts, every metadata key, type and value,
    /// every array header, the tensor infos), except the middle of arrays longer than
    /// `2 * MutationPlan.arrayEdge` elements: there, the first and last `arrayEdge` elements
    /// and a seeded sample of `MutationPlan.sampledElements` others are mutated byte by byte
    /// (length fields included). The elements of such an array are interchangeable to the
    /// parser, so this covers every distinct structural situation. Tensor infos are sampled
    /// likewise, keeping also the first of each kind (`MutationPlan.sampleTensorInfos`):
    /// Gemma's 236 were three quarters of its header's positions.
    ///
    /// SmolLM2's and Gemma's files only: Qwen's header has the same structure as SmolLM2's
    /// (byte-level BPE, token and merge arrays, a chat template) at three times the size, and
    /// every mutation re-parses the whole header, so it would add five minutes and no case.
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName) && TestModels.shouldRun(TestModels.gemma3FileName)),
          arguments: [TestModels.smolLM2FileName, TestModels.gemma3FileName], 0..<MutationPlan.shardCount)
    func mutateEveryHeaderByte(fileName: String, shard: Int) throws {
        let mapping = try PrivateMapping(path: TestModels.path(of: fileName))
        let plan = try MutationPlan(mapping.bytes)
        var outcomes = (accepted: 0, rejected: 0)
        for (index, position) in plan.positions.enumerated() where index % MutationPlan.shardCount == shard {
            let original = mapping.bytes[position]
            for replacement in MutationPlan.replacements(of: original) {
                mapping.bytes[position] = replacement
                do {
                    try GGUFFile.withBorrowedBytes(UnsafeRawBufferPointer(mapping.bytes)) { file in
                        GGUFChecks.exercise(file, deep: false)
                    }
                    outcomes.accepted += 1
                } catch {
                    #expect(error is GGUFError)
                    if let error = error as? GGUFError, let offset = GGUFChecks.offset(of: error) {
                        #expect(offset <= mapping.bytes.count, "\(error)")
                    }
                    outcomes.rejected += 1
                }
            }
            mapping.bytes[position] = original
        }
        #expect(outcomes.accepted + outcomes.rejected >= plan.positions.count / MutationPlan.shardCount)
        #expect(outcomes.rejected > 0)
        print("mutation shard \(shard) of \(fileName): \(plan.positions.count) positions in the plan (\(plan.tensorInfosLeftOut) tensor infos left out), \(outcomes.accepted) mutations accepted, \(outcomes.rejected) rejected")
    }

    /// The plan lines up every tensor-info record, ending where gguf-py's data section begins
    /// (less its alignment padding), and leaves most of them out on both real models (if it
    /// could not line them up it would keep every byte, slowly).
    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName) && TestModels.shouldRun(TestModels.gemma3FileName)),
          arguments: [TestModels.smolLM2FileName, TestModels.gemma3FileName])
    func mutationPlanSamplesTensorInfos(fileName: String) throws {
        let mapping = try PrivateMapping(path: TestModels.path(of: fileName))
        let plan = try MutationPlan(mapping.bytes)
        let expected = try Self.expected(for: fileName)
        #expect(plan.tensorInfoRecords.count == expected.tensor_count)
        let headerEnd = try #require(plan.tensorInfoRecords.last?.upperBound)
        #expect(headerEnd <= expected.data_offset && expected.data_offset - headerEnd < expected.alignment)
        #expect(plan.tensorInfosLeftOut > expected.tensor_count / 2)
        #expect(plan.tensorInfosLeftOut < expected.tensor_count - 2 * MutationPlan.tensorInfoEdge)
        // The last record is kept: its final byte is in the plan.
        #expect(plan.positions.contains(headerEnd - 1))
    }
}

/// Which header bytes the real-model mutation test visits.
struct MutationPlan {
    static let arrayEdge = 16
    static let sampledElements = 96
    static let shardCount = 4

    let positions: [Int]
    let dataSectionOffset: Int
    /// Where each tensor info lies in the header, in order; empty when they could not be
    /// lined up (see `tensorInfoRecords(of:in:)`).
    let tensorInfoRecords: [Range<Int>]
    /// How many tensor infos the plan does not mutate (see `sampleTensorInfos`).
    let tensorInfosLeftOut: Int

    /// The values tried at each position: all bits flipped, and zero (or one when the byte is zero).
    static func replacements(of byte: UInt8) -> [UInt8] {
        [~byte, byte == 0 ? 1 : 0]
    }

    /// Plans the positions for the file in `bytes` (which must parse).
    init(_ bytes: UnsafeMutableRawBufferPointer) throws {
        var covered: [Bool] = []
        var records: [Range<Int>] = []
        var leftOut = 0
        let dataSectionOffset = try GGUFFile.withBorrowedBytes(UnsafeRawBufferPointer(bytes)) { file in
            covered = Array(repeating: true, count: file.dataSectionOffset)
            for entry in file.metadata {
                guard case let .array(array) = entry.value, array.count > 2 * Self.arrayEdge,
                      let range = array.fileByteRange else { continue }
                // Start offset of every element, and the end.
                var starts: [Int] = []
                starts.reserveCapacity(array.count + 1)
                if array.elementType == .string {
                    var offset = range.lowerBound
                    array.forEachStringBytes { _, element in
                        starts.append(offset)
                        offset += 8 + element.count
                    }
                    starts.append(offset)
                } else {
                    let size = range.count / array.count
                    starts = (0...array.count).map { range.lowerBound + $0 * size }
                }
                for position in range { covered[position] = false }
                var generator = SplitMix64(seed: UInt64(range.lowerBound))
                let sampled = (0..<Self.sampledElements).map { _ in Int.random(in: 0..<array.count, using: &generator) }
                let kept = Array(0..<Self.arrayEdge) + Array(array.count - Self.arrayEdge ..< array.count) + sampled
                for element in kept {
                    for position in starts[element] ..< starts[element + 1] { covered[position] = true }
                }
            }
            records = Self.tensorInfoRecords(of: file, in: UnsafeRawBufferPointer(bytes)) ?? []
            leftOut = records.isEmpty ? 0 : Self.sampleTensorInfos(records, of: file.tensorInfos, covered: &covered)
            return file.dataSectionOffset
        }
        self.dataSectionOffset = dataSectionOffset
        self.tensorInfoRecords = records
        self.tensorInfosLeftOut = leftOut
        self.positions = covered.indices.filter { covered[$0] }
    }
}

extension MutationPlan {
    /// Tensor infos that the plan mutates byte by byte: the first and last `tensorInfoEdge`,
    /// the first of each kind (element type and dimension count), and a seeded sample of
    /// `sampledTensorInfos` others. The rest are structurally the same records (a name, its
    /// dimensions, a type, an offset, checked alone, against the other names and against the
    /// file's size) and are left out, as the middle of a long array is.
    static let tensorInfoEdge = 4
    static let sampledTensorInfos = 8

    /// Where each tensor info of `file` lies in `bytes`, found from the parsed values: the
    /// first record is the first tensor's name (its `uint64` length, then its bytes) after the
    /// last metadata array, and each record is `8 + name + 4 + 8 × dimensions + 4 + 8` bytes.
    /// Every record's name is checked where it is expected; `nil` when one is not there.
    static func tensorInfoRecords(of file: GGUFFile, in bytes: UnsafeRawBufferPointer) -> [Range<Int>]? {
        guard let first = file.tensorInfos.first else { return [] }
        let searchStart = file.metadata.compactMap { entry -> Int? in
            if case let .array(array) = entry.value { array.fileByteRange?.upperBound } else { nil }
        }.max() ?? 0
        func startsWithName(of info: GGUFTensorInfo, at position: Int) -> Bool {
            let name = GGUFHostileInputTests.string(info.name)
            return position + name.count <= bytes.count && name.indices.allSatisfy { bytes[position + $0] == name[$0] }
        }
        guard var start = (searchStart ..< file.dataSectionOffset).first(where: { startsWithName(of: first, at: $0) }) else { return nil }
        var records: [Range<Int>] = []
        for info in file.tensorInfos {
            guard startsWithName(of: info, at: start) else { return nil }
            let end = start + 8 + info.name.utf8.count + 4 + 8 * info.shape.count + 4 + 8
            records.append(start ..< end)
            start = end
        }
        return records
    }

    /// Unmarks, in `covered`, the tensor-info `records` (of `infos`, in order) the plan
    /// leaves out, and returns how many.
    static func sampleTensorInfos(_ records: [Range<Int>], of infos: [GGUFTensorInfo], covered: inout [Bool]) -> Int {
        guard records.count > 2 * tensorInfoEdge + sampledTensorInfos else { return 0 }
        var kept = Set(0 ..< tensorInfoEdge).union(records.count - tensorInfoEdge ..< records.count)
        var kinds: Set<String> = []
        for (index, info) in infos.enumerated() where kinds.insert("\(info.type.name) \(info.shape.count)").inserted {
            kept.insert(index)
        }
        var generator = SplitMix64(seed: UInt64(records[0].lowerBound))
        for _ in 0 ..< sampledTensorInfos { kept.insert(Int.random(in: 0 ..< records.count, using: &generator)) }
        for (index, record) in records.enumerated() where !kept.contains(index) {
            for position in record { covered[position] = false }
        }
        return records.count - kept.count
    }
}

/// A private, writable, copy-on-write mapping of a file: writes change only this process's
/// view (and copy only the pages written), so a 241 MiB model can be mutated byte by byte
/// without copying it.
final class PrivateMapping {
    let bytes: UnsafeMutableRawBufferPointer

    init(path: String) throws {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { throw GGUFError.cannotOpen(path: path, reason: "open failed") }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_size > 0,
              let address = mmap(nil, Int(status.st_size), PROT_READ | PROT_WRITE, MAP_PRIVATE, descriptor, 0),
              address != MAP_FAILED
        else { throw GGUFError.cannotOpen(path: path, reason: "mmap failed") }
        bytes = UnsafeMutableRawBufferPointer(start: address, count: Int(status.st_size))
    }

    deinit { munmap(bytes.baseAddress, bytes.count) }
}
