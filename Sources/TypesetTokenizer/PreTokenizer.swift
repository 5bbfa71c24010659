/// How byte-level BPE text is cut into words before merging, chosen by the GGUF key
/// `tokenizer.ggml.pre`. Each pre-tokenizer is a list of splitting steps, each applied to every
/// piece the previous step produced, exactly as llama.cpp does it: the GPT-2 and Llama 3 steps
/// are hand-written scanners, the rest are patterns run by a small backtracking matcher
/// (no `NSRegularExpression`, no Foundation).
public struct PreTokenizer: Sendable {
    /// The family, which fixes the splitting steps.
    public enum Kind: String, Sendable, CaseIterable {
        case `default`, gpt2, llama3, qwen2, deepSeekLLM = "deepseek-llm", gpt4o = "gpt-4o", falcon
        /// Digits one by one, then GPT-2 (SmolLM, StarCoder and relatives).
        case smolLM = "smollm"
    }

    /// The name as found in the model (`tokenizer.ggml.pre`).
    public let name: String
    public let kind: Kind
    /// Whether a word that is itself a token is emitted without merging (Llama 3).
    public let ignoresMerges: Bool
    /// Whether decoding applies the GPT-2 clean-up of spaces before punctuation.
    public let cleansUpSpaces: Bool
    /// Whether a BOS token is added by default (before `tokenizer.ggml.add_bos_token` overrides it).
    public let addsBOSByDefault: Bool

    let steps: [SplitStep]

    /// The pre-tokenizer llama.cpp uses for `name`, or `nil` when Typeset does not know it.
    /// A model without `tokenizer.ggml.pre` uses `default`.
    public init?(named name: String) {
        guard let entry = Self._names[name] else { return nil }
        self.name = name
        self.kind = entry.kind
        self.ignoresMerges = entry.ignoresMerges
        self.cleansUpSpaces = entry.cleansUpSpaces
        self.addsBOSByDefault = entry.addsBOS
        self.steps = Self._steps[entry.kind]!
    }

    /// Every name `init(named:)` accepts.
    public static var knownNames: [String] { _names.keys.sorted() }

    // MARK: Tables

    private struct FamilyEntry {
        var kind: Kind
        var ignoresMerges = false
        var cleansUpSpaces = true
        var addsBOS = false
    }

    /// Names llama.cpp maps to each family, with the flags it sets for them.
    private static let _names: [String: FamilyEntry] = {
        var table: [String: FamilyEntry] = [:]
        table["default"] = FamilyEntry(kind: .default)
        for name in ["gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de",
                     "mpt", "olmo", "jais", "exaone4", "a.x-4.0", "mellum", "modern-bert"] {
            table[name] = FamilyEntry(kind: .gpt2)
        }
        for name in ["trillion", "granite-docling"] { table[name] = FamilyEntry(kind: .gpt2, cleansUpSpaces: false) }
        for name in ["llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano"] {
            table[name] = FamilyEntry(kind: .llama3, ignoresMerges: true, addsBOS: true)
        }
        for name in ["dbrx", "smaug-bpe"] { table[name] = FamilyEntry(kind: .llama3) }
        for name in ["qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "hunyuan", "solar-open"] {
            table[name] = FamilyEntry(kind: .qwen2, cleansUpSpaces: false)
        }
        for name in ["stablelm2", "megrez"] { table[name] = FamilyEntry(kind: .qwen2) }
        table["smollm"] = FamilyEntry(kind: .smolLM, cleansUpSpaces: false)
        table["command-r"] = FamilyEntry(kind: .smolLM, cleansUpSpaces: false)
        for name in ["starcoder", "refact", "codeshell", "exaone", "minerva-7b", "mellum2"] {
            table[name] = FamilyEntry(kind: .smolLM)
        }
        table["deepseek-llm"] = FamilyEntry(kind: .deepSeekLLM, cleansUpSpaces: false)
        for name in ["gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"] {
            table[name] = FamilyEntry(kind: .gpt4o, cleansUpSpaces: false)
        }
        table["falcon"] = FamilyEntry(kind: .falcon)
        return table
    }()

    private static let _gpt2Words = #"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"#

    /// The splitting steps of each family (patterns as published with the models' tokenizers,
    /// in the forms llama.cpp runs them).
    private static let _steps: [Kind: [SplitStep]] = {
        func pattern(_ source: String) -> SplitStep {
            // The patterns below are fixed; a failure here is a bug in this file.
            do { return .pattern(try SplitPattern(source)) } catch { fatalError("\(error)") }
        }
        let contractions = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
        return [
            .default: [pattern(#"[\p{P}\$\+<=>\^~\|]+"#), .gpt2, pattern(#"\p{N}+"#), pattern("[0-9][0-9][0-9]")],
            .gpt2: [.gpt2],
            .smolLM: [pattern(#"\p{N}"#), .gpt2],
            .llama3: [.llama3],
            .qwen2: [pattern(contractions + #"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"#)],
            .deepSeekLLM: [
                pattern("[\r\n]"),
                // Written with scalar escapes: several ranges start or end at characters that
                // source-text normalization would silently change (U+1FBB → U+0386, …).
                pattern(#"\s?[A-Za-z\#u{B5}\#u{C0}-\#u{D6}\#u{D8}-\#u{F6}\#u{F8}-\#u{1BA}\#u{1BC}-\#u{1BF}\#u{1C4}-\#u{293}\#u{295}-\#u{2AF}"#
                    + #"\#u{370}-\#u{373}\#u{376}\#u{377}\#u{37B}-\#u{37D}\#u{37F}\#u{386}\#u{388}-\#u{38A}\#u{38C}\#u{38E}-\#u{3A1}"#
                    + #"\#u{3A3}-\#u{3F5}\#u{3F7}-\#u{481}\#u{48A}-\#u{52F}\#u{531}-\#u{556}\#u{10A0}-\#u{10C5}\#u{13A0}-\#u{13F5}"#
                    + #"\#u{13F8}-\#u{13FD}\#u{1C90}-\#u{1CBA}\#u{1CBD}-\#u{1CBF}\#u{1D00}-\#u{1D2B}\#u{1D6B}-\#u{1D77}\#u{1D79}-\#u{1D9A}"#
                    + #"\#u{1E00}-\#u{1F15}\#u{1F18}-\#u{1F1D}\#u{1F20}-\#u{1F45}\#u{1F48}-\#u{1F4D}\#u{1F50}-\#u{1F57}\#u{1F59}\#u{1F5B}"#
                    + #"\#u{1F5D}\#u{1F5F}-\#u{1F7D}\#u{1F80}-\#u{1FB4}\#u{1FB6}-\#u{1FBC}\#u{1FBE}\#u{1FC2}-\#u{1FC4}\#u{1FC6}-\#u{1FCC}"#
                    + #"\#u{1FD0}-\#u{1FD3}\#u{1FD6}-\#u{1FDB}\#u{1FE0}-\#u{1FEC}\#u{1FF2}-\#u{1FF4}\#u{1FF6}-\#u{1FFC}\#u{2102}\#u{2107}"#
                    + #"\#u{210A}-\#u{2113}\#u{2115}\#u{2119}-\#u{211D}\#u{2124}\#u{2126}\#u{2128}\#u{212A}-\#u{212D}\#u{212F}-\#u{2134}"#
                    + #"\#u{2139}\#u{213C}-\#u{213F}\#u{2145}-\#u{2149}\#u{214E}\#u{2183}\#u{2184}\#u{2C00}-\#u{2C7B}\#u{2C7E}-\#u{2CE4}"#
                    + #"\#u{2CEB}-\#u{2CEE}\#u{2CF2}\#u{2CF3}\#u{A640}-\#u{A66D}\#u{A680}-\#u{A69B}\#u{A722}-\#u{A76F}\#u{A771}-\#u{A787}"#
                    + #"\#u{A78B}-\#u{A78E}\#u{AB70}-\#u{ABBF}\#u{FB00}-\#u{FB06}\#u{FB13}-\#u{FB17}\#u{FF21}-\#u{FF3A}\#u{FF41}-\#u{FF5A}"#
                    + #"\#u{10400}-\#u{1044F}\#u{104B0}-\#u{104D3}\#u{104D8}-\#u{104FB}\#u{10C80}-\#u{10CB2}\#u{10CC0}-\#u{10CF2}"#
                    + #"\#u{118A0}-\#u{118DF}\#u{1E900}-\#u{1E943}]+"#),
                pattern(#"\s?[!-/:-~\#u{FF01}-\#u{FF0F}\#u{FF1A}-\#u{FF5E}\#u{2018}-\#u{201F}\#u{3000}-\#u{3002}]+"#),
                pattern(#"\s+$"#),
                pattern("[\u{4E00}-\u{9FA5}\u{800}-\u{4E00}\u{AC00}-\u{D7FF}]+"),
                pattern(#"\p{N}+"#),
            ],
            .gpt4o: [pattern(
                #"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+"# + contractions + "?"
                + #"|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*"# + contractions + "?"
                + #"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"#)],
            .falcon: [pattern(#"[\p{P}\$\+<=>\^~\|`]+"#), .gpt2, pattern("[0-9][0-9][0-9]")],
        ]
    }()

    /// Splits `text` (the code points of one fragment) into words; appends the word lengths in
    /// code points to `lengths`.
    func split(_ text: DecodedText, into lengths: inout [Int32]) {
        lengths.removeAll(keepingCapacity: true)
        let count = text.codePoints.count
        guard count > 0 else { return }
        lengths.append(Int32(count))
        var next: [Int32] = []
        var collapsed: [UInt32] = []
        var wide: [UInt32] = []
        for step in steps {
            next.removeAll(keepingCapacity: true)
            next.reserveCapacity(lengths.count * 2)
            var start = 0
            switch step {
            case .gpt2, .llama3:
                text.codePoints.withUnsafeBufferPointer { codePoints in
                    text.classes.withUnsafeBufferPointer { classes in
                        for length in lengths {
                            let range = start ..< start + Int(length)
                            if case .gpt2 = step {
                                _splitGPT2(codePoints, classes, range, into: &next)
                            } else {
                                _splitLlama3(codePoints, classes, range, into: &next)
                            }
                            start = range.upperBound
                        }
                    }
                }
            case let .pattern(pattern):
                if pattern.usesCategories && collapsed.isEmpty {
                    collapsed = (0 ..< count).map { CodePointClass.collapsed(text.codePoints[$0], text.classes[$0]) }
                } else if !pattern.usesCategories && wide.isEmpty {
                    wide = (0 ..< count).map {
                        text.codePoints[$0] > 0x7F && text.classes[$0].contains(.whitespace) ? 0x0B : text.codePoints[$0]
                    }
                }
                (pattern.usesCategories ? collapsed : wide).withUnsafeBufferPointer { units in
                    for length in lengths {
                        pattern.split(units, range: start ..< start + Int(length), into: &next)
                        start += Int(length)
                    }
                }
            }
            swap(&lengths, &next)
        }
    }
}

enum SplitStep: Sendable {
    case gpt2
    case llama3
    case pattern(SplitPattern)
}

// MARK: - Hand-written steps

/// The length of the English contraction (`'s 't 'm 'd 're 've 'll`) at `position`, or 0.
@inline(__always)
func _contractionLength(_ codePoints: UnsafeBufferPointer<UInt32>, at position: Int, end: Int, ignoringCase: Bool) -> Int {
    guard codePoints[position] == 0x27, position + 1 < end else { return 0 }  // '
    @inline(__always) func letter(_ index: Int) -> UInt32 {
        let codePoint = codePoints[index]
        return ignoringCase && (0x41 ... 0x5A).contains(codePoint) ? codePoint + 0x20 : codePoint
    }
    let next = letter(position + 1)
    if next == 0x73 || next == 0x74 || next == 0x6D || next == 0x64 { return 2 }  // s t m d
    guard position + 2 < end else { return 0 }
    let pair = (next, letter(position + 2))
    return pair == (0x72, 0x65) || pair == (0x76, 0x65) || pair == (0x6C, 0x6C) ? 3 : 0  // re ve ll
}

/// The GPT-2 pattern `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)`,
/// scanned directly over the code points of `range`, with llama.cpp's handling of stretches no
/// alternative matches (each such code point is a piece of its own).
func _splitGPT2(
    _ codePoints: UnsafeBufferPointer<UInt32>, _ classes: UnsafeBufferPointer<CodePointClass>,
    _ range: Range<Int>, into lengths: inout [Int32]
) {
    let end = range.upperBound
    @inline(__always) func classAt(_ position: Int) -> CodePointClass { position < end ? classes[position] : [] }
    let wordClasses: CodePointClass = [.whitespace, .letter, .number]
    var position = range.lowerBound
    while position < end {
        let start = position
        let codePoint = codePoints[position]
        let current = classes[position]
        defer { lengths.append(Int32(position - start)) }
        let contraction = _contractionLength(codePoints, at: position, end: end, ignoringCase: false)
        if contraction > 0 { position += contraction; continue }
        let isSpace = codePoint == 0x20
        let following = isSpace ? classAt(position + 1) : current
        if following.contains(.letter) {
            if isSpace { position += 1 }
            while classAt(position).contains(.letter) { position += 1 }
            continue
        }
        if following.contains(.number) {
            if isSpace { position += 1 }
            while classAt(position).contains(.number) { position += 1 }
            continue
        }
        if following.isDisjoint(with: wordClasses) && following.rawValue != 0 {
            if isSpace { position += 1 }
            while true {
                let next = classAt(position)
                guard next.isDisjoint(with: wordClasses) && next.rawValue != 0 else { break }
                position += 1
            }
            continue
        }
        var spaces = 0
        while classAt(position + spaces).contains(.whitespace) { spaces += 1 }
        if spaces > 1 && position + spaces < end {
            position += spaces - 1  // \s+(?!\S): leave the last space to the next word
        } else if spaces > 0 {
            position += spaces
        } else {
            position += 1
        }
    }
}

/// The Llama 3 pattern `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
/// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`, scanned directly as llama.cpp does.
func _splitLlama3(
    _ codePoints: UnsafeBufferPointer<UInt32>, _ classes: UnsafeBufferPointer<CodePointClass>,
    _ range: Range<Int>, into lengths: inout [Int32]
) {
    let end = range.upperBound
    @inline(__always) func classAt(_ position: Int) -> CodePointClass { position < end ? classes[position] : [] }
    @inline(__always) func codePointAt(_ position: Int) -> UInt32 { position < end ? codePoints[position] : .max }
    let wordClasses: CodePointClass = [.whitespace, .letter, .number]
    var position = range.lowerBound
    while position < end {
        let start = position
        let codePoint = codePoints[position]
        let current = classes[position]
        let contraction = _contractionLength(codePoints, at: position, end: end, ignoringCase: true)
        if contraction > 0 {
            position += contraction
            lengths.append(Int32(contraction))
            continue
        }
        if !(codePoint == 0x0D || codePoint == 0x0A || current.contains(.number)),
           current.contains(.letter) || classAt(position + 1).contains(.letter) {
            position += 1
            while classAt(position).contains(.letter) { position += 1 }
            lengths.append(Int32(position - start))
            continue
        }
        if current.contains(.number) {
            var groupStart = position
            while classAt(position).contains(.number) {
                position += 1
                if position - groupStart >= 3 {
                    lengths.append(Int32(position - groupStart))
                    groupStart = position
                }
            }
            if position > groupStart { lengths.append(Int32(position - groupStart)) }
            continue
        }
        let isSpace = codePoint == 0x20
        var following = isSpace ? classAt(position + 1) : current
        if following.isDisjoint(with: wordClasses) && current.rawValue != 0 {
            if isSpace { position += 1 }
            while following.isDisjoint(with: wordClasses) && following.rawValue != 0 {
                position += 1
                following = classAt(position)
            }
            while codePointAt(position) == 0x0D || codePointAt(position) == 0x0A { position += 1 }
            lengths.append(Int32(position - start))
            continue
        }
        var spaces = 0
        var afterLastNewline = 0
        while classAt(position + spaces).contains(.whitespace) {
            let space = codePoints[position + spaces]
            if space == 0x0D || space == 0x0A { afterLastNewline = position + spaces + 1 }
            spaces += 1
        }
        if afterLastNewline > 0 {
            position = afterLastNewline
        } else if spaces > 1 && position + spaces < end {
            position += spaces - 1
        } else if spaces > 0 {
            position += spaces
        } else {
            position += 1
        }
        lengths.append(Int32(position - start))
    }
}
