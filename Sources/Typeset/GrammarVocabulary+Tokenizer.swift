import TypesetGrammar
import TypesetTokenizer

extension GrammarVocabulary {
    /// The grammar compiler's view of a model vocabulary: each token's bytes as the model
    /// writes them (`Vocabulary.writtenBytes`: control, unknown and unused tokens are never
    /// text); the model's end-of-generation tokens end a constrained reply.
    package convenience init(_ vocabulary: Vocabulary) {
        self.init(tokens: vocabulary.writtenBytes, endOfGeneration: vocabulary.endOfGenerationTokenIDs)
    }
}
