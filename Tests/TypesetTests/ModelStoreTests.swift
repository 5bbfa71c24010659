import TypesetTestSupport
import Testing
import Typeset

@Suite struct ModelStoreTests {
    @Test func knownModels() {
        #expect(KnownModel.default == .smolLM2)
        #expect(Set(KnownModel.all.map(\.name)) == ["smollm2", "gemma3", "qwen0.5b", "qwen1.5b"])
        #expect(ModelStore.cachedPath(of: .gemma3).hasSuffix("/models/gemma-3-270m-q4_k_m.gguf"))
    }

    @Test func explicitPathsAndNames() throws {
        #expect(try ModelStore.resolve("/dev/null") == "/dev/null")
        #expect(throws: ModelLocationError.missingFile("/no/such.gguf", variable: nil)) { try ModelStore.resolve("/no/such.gguf") }
        if TestModels.shouldRun(TestModels.gemma3FileName) {
            #expect(try ModelStore.resolve("gemma3") == TestModels.gemma3Path)
            #expect(try ModelStore.resolve("GEMMA3") == TestModels.gemma3Path)
        }
    }

    @Test func missingModelErrorNamesTheFetchScript() {
        let error = ModelLocationError.notFetched(.smolLM2, expectedPath: "/x/SmolLM2-135M-Instruct.Q4_1.gguf")
        #expect(error.description.contains("Fixtures/fetch.sh"))
        #expect(error.description.contains("/x/SmolLM2-135M-Instruct.Q4_1.gguf"))
    }
}
