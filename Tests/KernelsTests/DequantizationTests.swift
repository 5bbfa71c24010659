import Foundation
import GGUF
import Kernels
import Testing
import TypesetTestSupport

/// Dequantization against gguf-py's `gguf.quants.dequantize`, bit for bit
/// (`Fixtures/make_dequantization_fixtures.py`).
@Suite struct DequantizationTests {
    struct Expected: Decodable {
        var elements: Int
        var sha256: String
        var head: [Double]
        var type: String?
    }

    static func digest(_ values: [Float]) -> String {
        var hash = SHA256Digest()
        values.withUnsafeBytes { hash.update($0) }
        return hash.finalize()
    }

    @Test func sha256KnownAnswers() {
        var empty = SHA256Digest()
        #expect(empty.finalize() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        var abc = SHA256Digest()
        abc.update(Array("abc".utf8))
        #expect(abc.finalize() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        var long = SHA256Digest()
        long.update(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
        #expect(long.finalize() == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        var million = SHA256Digest()
        for _ in 0..<1000 { million.update(Array(repeating: UInt8(ascii: "a"), count: 1000)) }
        #expect(million.finalize() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    #if !(os(macOS) && arch(x86_64))
    /// Every half-precision bit pattern converts exactly as the platform's Float16 does.
    @Test func halfConversionIsExactForAllBitPatterns() {
        for bits in 0 ... UInt16.max {
            let expected = Float(Float16(bitPattern: bits))
            let actual = floatFromHalf(bits)
            if expected.isNaN {
                #expect(actual.isNaN && actual.bitPattern & 0x007F_FFFF == UInt32(bits & 0x3FF) << 13, "\(bits)")
            } else {
                #expect(actual.bitPattern == expected.bitPattern, "\(bits)")
            }
        }
    }
    #endif

    @Test func bfloat16IsTheUpperHalf() {
        #expect(floatFromBFloat16(0x3F80) == 1)
        #expect(floatFromBFloat16(0xC040) == -3)
        #expect(floatFromBFloat16(0x7F80) == .infinity)
    }

    static let syntheticTypes: [GGMLType] = [.f32, .f16, .bf16, .q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .mxfp4, .q2_K, .q3_K, .q4_K, .q5_K, .q6_K]

    @Test(arguments: syntheticTypes)
    func syntheticBlocksMatchGGUFPy(type: GGMLType) throws {
        let expected = try JSONDecoder().decode([String: Expected].self, from: Fixtures.data("quants/expected.json"))
        let reference = try #require(expected[type.name])
        let input = try Fixtures.data("quants/\(type.name).bin")
        #expect(input.count == type.byteCount(elementCount: reference.elements))
        var output = [Float](repeating: .nan, count: reference.elements)
        try input.withUnsafeBytes { bytes in
            try output.withUnsafeMutableBufferPointer { try Dequantization.dequantize(type, from: bytes, into: $0) }
        }
        #expect(Self.digest(output) == reference.sha256)
        #expect(output.prefix(4).map(Double.init) == reference.head)
    }

    @Test(.enabled(if: TestModels.shouldRun(TestModels.smolLM2FileName) && TestModels.shouldRun(TestModels.gemma3FileName)),
          arguments: TestModels.realModels.map(\.fileName))
    func everyRealTensorMatchesGGUFPy(fileName: String) throws {
        struct File: Decodable { var tensors: [String: Expected] }
        let expected = try JSONDecoder().decode(File.self, from: Fixtures.data("expected/\(fileName).dequantized.json")).tensors
        let file = try GGUFFile(contentsOf: TestModels.path(of: fileName))
        #expect(expected.count == file.tensorInfos.count)
        var typesSeen = Set<GGMLType>()
        for tensor in file.tensors {
            let reference = try #require(expected[tensor.name])
            #expect(reference.type == tensor.type.name)
            let values = try Dequantization.dequantize(tensor)
            #expect(values.count == reference.elements)
            #expect(Self.digest(values) == reference.sha256, "\(tensor.name) (\(tensor.type))")
            #expect(values.prefix(4).map(Double.init) == reference.head, "\(tensor.name)")
            typesSeen.insert(tensor.type)
        }
        #expect(typesSeen.count >= 3)
    }

    @Test func rowsDecodeLikeTheWholeTensor() throws {
        var writer = GGUFWriter()
        let bytes = try Fixtures.data("quants/Q6_K.bin")
        try writer.addTensor(name: "w", shape: [512, bytes.count / 420], type: .q6_K, data: Array(bytes))
        let tensor = try GGUFFile(bytes: try writer.encoded()).tensor(named: "w")
        let whole = try Dequantization.dequantize(tensor)
        var row = [Float](repeating: 0, count: 512)
        for index in 0..<tensor.info.rowCount {
            try row.withUnsafeMutableBufferPointer { try Dequantization.dequantizeRow(index, of: tensor, into: $0) }
            #expect(row == Array(whole[512 * index ..< 512 * (index + 1)]))
        }
    }

    @Test func unsupportedAndMismatchedInputsAreTypedErrors() throws {
        var output = [Float](repeating: 0, count: 256)
        let bytes = [UInt8](repeating: 0, count: 210)
        try bytes.withUnsafeBytes { source in
            try output.withUnsafeMutableBufferPointer { destination in
                #expect(throws: KernelError.unsupportedType(.iq2_XXS, operation: "dequantization")) {
                    try Dequantization.dequantize(.iq2_XXS, from: source, into: destination)
                }
                #expect(throws: KernelError.sizeMismatch(what: "Q4_K bytes for 256 elements", expected: 144, actual: 210)) {
                    try Dequantization.dequantize(.q4_K, from: source, into: destination)
                }
                #expect(throws: KernelError.partialBlock(.q6_K, elementCount: 100)) {
                    try Dequantization.dequantize(.q6_K, from: source, into: UnsafeMutableBufferPointer(rebasing: destination[0..<100]))
                }
                try Dequantization.dequantize(.q6_K, from: source, into: destination)
            }
        }
        #expect(Dequantization.supportedTypes.count == 14)
    }
}
