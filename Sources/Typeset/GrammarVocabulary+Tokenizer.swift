import Grammar
import Tokenizer

extension GrammarVocabulary {
    /// The grammar compiler's view of a model vocabulary: each token's bytes as the model
    /// writes them (`Vocabulary.bytes(of:)`); control, unknown and unused tokens are never
    /// text; the model's end-of-generation tokens end a constrained reply.
    public convenience init(_ vocabulary: Vocabulary) {
        let tokens: [[UInt8]?] = (0 ..< vocabulary.count).map { id in
            vocabulary.attributes[id].isDisjoint(with: [.control, .unknown, .unused]) ? vocabulary.bytes(of: id) : nil
        }
        self.init(tokens: tokens, endOfGeneration: vocabulary.endOfGenerationTokenIDs)
    }
}
