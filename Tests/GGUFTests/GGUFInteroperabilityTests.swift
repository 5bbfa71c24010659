import GGUF
import TypesetTestSupport
import Testing

/// Files written by gguf-py's `GGUFWriter` (an implementation independent of Typeset's),
/// committed as the fuzzer's seeds by `Fixtures/make_fuzz_seeds.py`.
@Suite struct GGUFInteroperabilityTests {
    @Test func readsEveryTypeWrittenByGGUFPy() throws {
        let file = try GGUFFile(contentsOf: Fixtures.path("fuzz-seeds/every-type.gguf"))
        let metadata = file.metadata
        #expect(file.version == 3)
        #expect(metadata["t.u8"] == .uint8(255))
        #expect(metadata["t.i8"] == .int8(-1))
        #expect(metadata["t.u16"] == .uint16(65535))
        #expect(metadata["t.i16"] == .int16(-2))
        #expect(metadata["t.u32"] == .uint32(7))
        #expect(metadata["t.i32"] == .int32(-3))
        #expect(metadata["t.f32"] == .float32(0.5))
        #expect(metadata["t.bool"] == .bool(true))
        #expect(metadata["t.str"] == .string("héllo ▁ 🙂"))
        #expect(metadata["t.u64"] == .uint64(1 << 63))
        #expect(metadata["t.i64"] == .int64(-4))
        #expect(metadata["t.f64"] == .float64(1e300))
        #expect(try metadata.stringArray("t.arr.str") == ["a", "", "<0x0A>"])
        #expect(try metadata.integerArray("t.arr.i32") == [1, 2, 3])
        let nested = try #require(try metadata.array("t.arr.nested"))
        #expect(nested.elementType == .array && nested.count == 2)
        #expect(nested.map { element -> [Int] in
            guard case let .array(inner) = element else { return [] }
            return inner.integers() ?? []
        } == [[1, 2], [3]])

        let a = try file.tensor(named: "a")
        #expect(a.type == .f32 && a.shape == [8, 2])
        #expect((0..<16).allSatisfy { a.bytes.loadUnaligned(fromByteOffset: 4 * $0, as: Float.self) == 1 })
        let b = try file.tensor(named: "b")
        #expect(b.type == .f16 && b.shape == [16])
        // float16 1.0 is 0x3C00; the tensor holds 0, 1, …, 15.
        #expect(b.bytes.loadUnaligned(fromByteOffset: 2, as: UInt16.self) == 0x3C00)
    }

    @Test func readsRealMetadataRewrittenByGGUFPy() throws {
        let file = try GGUFFile(contentsOf: Fixtures.path("fuzz-seeds/model-metadata.gguf"))
        #expect(try file.metadata.architecture == "llama")
        #expect(try file.metadata.tokenizer.tokens?.count == 40)
        #expect(try file.metadata.tokenizer.merges?.strings()?.first == "Ġ t")
        #expect(file.tensorInfos.count == 4)
    }
}
