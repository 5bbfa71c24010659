import Foundation
import Testing
@testable import TypesetGrammar

/// Compiled grammars archived and loaded (`CompiledGrammar.archive(key:)`, a
/// `CompiledGrammarCache` with a directory): the loaded grammar is the compiled one, mask for
/// mask; an archive that is altered, cut short, stale or from another vocabulary is refused
/// and, in a cache, rebuilt.
@Suite struct GrammarArchiveTests {
    static let vocabulary = StringLengthTests.longTokens
    static let schema = #"{"type":"object","properties":{"name":{"type":"string","maxLength":100},"tags":{"type":"array","items":{"enum":["a","aa","é"]}},"n":{"type":"integer","minimum":-3,"maximum":120}},"required":["name"]}"#
    static let texts = [#"{"name":"aaaa","tags":["a","é"],"n":12}"#, #"{"name":""}"#, "{\"name\":\"" + String(repeating: "a", count: 100) + "\"}"]

    @Test(arguments: [MaskComputation.upfront, .onFirstUse])
    func aLoadedGrammarIsTheCompiledOne(_ computation: MaskComputation) throws {
        let compiled = try CompiledGrammar(Grammar(jsonSchema: Self.schema), vocabulary: Self.vocabulary, maskComputation: computation)
        // Some masks computed on first use before archiving (the others load as missing).
        _ = MaskComputationTests.masks(along: Self.texts[0], in: compiled)
        let archive = compiled.archive(key: "k")
        let loaded = try CompiledGrammar(archive: archive, key: "k", vocabulary: Self.vocabulary, maskComputation: .onFirstUse)
        #expect(loaded.statistics.computedPositions == compiled.statistics.computedPositions)
        #expect(loaded.shortestSentence() == compiled.shortestSentence())
        for text in Self.texts + [#"{"n":1}"#, #"{"name":"x","tags":["b"]}"#] {
            #expect(MaskComputationTests.masks(along: text, in: loaded) == MaskComputationTests.masks(along: text, in: compiled), "\(text)")
            #expect(StringLengthTests.completions(along: text, in: loaded) == StringLengthTests.completions(along: text, in: compiled))
        }
        MaskChecks.expectEveryMaskMatchesAFullWalk(loaded)
        // Archiving the loaded grammar gives the same bytes (with the masks computed since).
        #expect(try CompiledGrammar(archive: loaded.archive(key: "k"), key: "k", vocabulary: Self.vocabulary).archive(key: "k").count > 0)
    }

    /// Cache file names and archive checks are FNV-1a values written to disk: they must stay
    /// the published function (its test vectors), whatever the code computing them becomes.
    @Test func archiveHashesAreFNV1a() {
        #expect(GrammarArchive.fnv1a(Array("a".utf8)) == 0xaf63_dc4c_8601_ec8c)
        #expect(GrammarArchive.fnv1a(Array("foobar".utf8)) == 0x8594_4171_f739_67e8)
        #expect(GrammarArchive.checksum(ArraySlice(Array("a".utf8))) == 0xaf63_dc4c_8601_ec8c)
    }

    @Test func anArchiveIsCheckedNotTrusted() throws {
        let compiled = try CompiledGrammar(Grammar(jsonSchema: Self.schema), vocabulary: Self.vocabulary)
        let archive = compiled.archive(key: "k")
        func load(_ bytes: [UInt8], key: String = "k", vocabulary: GrammarVocabulary = Self.vocabulary) throws {
            _ = try CompiledGrammar(archive: bytes, key: key, vocabulary: vocabulary, maskComputation: .onFirstUse)
        }
        #expect(throws: GrammarArchiveError.notAnArchive) { try load(Array("{}".utf8)) }
        #expect(throws: GrammarArchiveError.checksumMismatch) { try load(Array(archive.dropLast(5))) }
        var altered = archive
        altered[archive.count / 2] ^= 0x40
        #expect(throws: GrammarArchiveError.checksumMismatch) { try load(altered) }
        var version = archive
        version[8] = 99
        #expect(throws: GrammarArchiveError.otherFormatVersion(99)) { try load(version) }
        #expect(throws: GrammarArchiveError.stale("compiled from another schema or options")) { try load(archive, key: "other") }
        #expect(throws: GrammarArchiveError.stale("compiled for another vocabulary")) { try load(archive, vocabulary: .bytes) }
        // A payload altered with its checksum recomputed (what a crafted file would do): every
        // single-byte change is refused or loads a grammar, never traps.
        var refused = 0
        for offset in stride(from: 28, to: archive.count, by: max(1, archive.count / 400)) {
            var crafted = archive
            crafted[offset] = crafted[offset] == 0xFF ? 0 : 0xFF
            let checksum = GrammarArchive.checksum(crafted[28...])
            withUnsafeBytes(of: checksum.littleEndian) { for (index, byte) in $0.enumerated() { crafted[20 + index] = byte } }
            do { try load(crafted) } catch { refused += 1 }
        }
        #expect(refused > 0)
    }

    @Test func aCacheDirectoryLoadsWhatAnotherCacheCompiled() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("typeset-grammars-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let schema = try JSONValue(parsing: Self.schema)
        let first = CompiledGrammarCache(vocabulary: Self.vocabulary, directory: directory)
        let compiled = try first.grammar(forJSONSchema: schema)
        #expect(first.statistics.stores == 1 && first.statistics.loads == 0)
        // Another process, as far as the cache can tell.
        let second = CompiledGrammarCache(vocabulary: Self.vocabulary, directory: directory)
        let loaded = try second.grammar(forJSONSchema: schema)
        #expect(second.statistics.loads == 1 && second.statistics.stores == 0)
        for text in Self.texts {
            #expect(MaskComputationTests.masks(along: text, in: loaded) == MaskComputationTests.masks(along: text, in: compiled))
        }
        // Other options are another file.
        _ = try second.grammar(forJSONSchema: schema, options: JSONSchemaOptions())
        #expect(second.statistics.stores == 1)
        // A corrupt file is ignored, counted, and replaced by a fresh compilation.
        let files = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".grammar") }
        #expect(files.count == 2)
        for file in files { try Data("not a grammar".utf8).write(to: URL(fileURLWithPath: directory + "/" + file)) }
        let third = CompiledGrammarCache(vocabulary: Self.vocabulary, directory: directory)
        let rebuilt = try third.grammar(forJSONSchema: schema)
        #expect(third.statistics.rejectedArchives == 1 && third.statistics.stores == 1 && third.statistics.loads == 0)
        #expect(MaskComputationTests.masks(along: Self.texts[0], in: rebuilt) == MaskComputationTests.masks(along: Self.texts[0], in: compiled))
        let fourth = CompiledGrammarCache(vocabulary: Self.vocabulary, directory: directory)
        _ = try fourth.grammar(forJSONSchema: schema)
        #expect(fourth.statistics.loads == 1)
    }
}
