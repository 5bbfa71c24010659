import Foundation
import TypesetGrammar
import Testing
import TypesetTestSupport

/// A partial value as a tree with a completeness flag on every string and container, built
/// from `PartialJSONValue` through `child(_:)`: how the expectations below are written.
indirect enum PartialTree: Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    case number(String)
    case string(String, isComplete: Bool)
    case array([PartialTree], isComplete: Bool)
    case object([(name: String, value: PartialTree)], isComplete: Bool)

    init(_ partial: PartialJSONValue) {
        let isComplete = partial.isComplete
        switch partial.value {
        case .null: self = .null
        case .bool(let flag): self = .bool(flag)
        case .number(let text): self = .number(text)
        case .string(let text): self = .string(text, isComplete: isComplete)
        case .array(let items): self = .array(items.indices.map { PartialTree(partial.child($0)) }, isComplete: isComplete)
        case .object(let members):
            self = .object(members.indices.map { (name: members[$0].0, value: PartialTree(partial.child($0))) }, isComplete: isComplete)
        }
    }

    /// A complete value.
    init(_ value: JSONValue) { self.init(PartialJSONValue(value)) }

    static func == (lhs: Self, rhs: Self) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.number(a), .number(b)): a == b
        case let (.string(a, aIsComplete), .string(b, bIsComplete)): a == b && aIsComplete == bIsComplete
        case let (.array(a, aIsComplete), .array(b, bIsComplete)): a == b && aIsComplete == bIsComplete
        case let (.object(a, aIsComplete), .object(b, bIsComplete)):
            aIsComplete == bIsComplete && a.count == b.count
                && zip(a, b).allSatisfy { $0.name == $1.name && $0.value == $1.value }
        default: false
        }
    }

    var description: String {
        switch self {
        case .null: "null"
        case .bool(let flag): "\(flag)"
        case .number(let text): text
        case let .string(text, isComplete): text.debugDescription + (isComplete ? "" : "…")
        case let .array(items, isComplete): "[" + items.map(\.description).joined(separator: ",") + (isComplete ? "]" : "…")
        case let .object(members, isComplete):
            "{" + members.map { $0.name.debugDescription + ":" + $0.value.description }.joined(separator: ",") + (isComplete ? "}" : "…")
        }
    }
}

/// Whether `ours` is the value Foundation's `JSONSerialization` read (`theirs`): numbers
/// compared as doubles, strings by scalars, objects by name (Foundation's do not keep order).
func sameAsFoundation(_ ours: JSONValue, _ theirs: Any) -> Bool {
    switch ours {
    case .null: return theirs is NSNull
    case .bool(let flag): return (theirs as? Bool) == flag
    case .number(let text):
        guard let double = Double(text) else { return false }
        let theirDouble: Double? = (theirs as? NSNumber)?.doubleValue ?? (theirs as? Int).map(Double.init) ?? (theirs as? Double)
            ?? (theirs as? Decimal).map { NSDecimalNumber(decimal: $0).doubleValue }
        guard let theirDouble else { return false }
        return theirDouble == double || abs(theirDouble - double) <= abs(double) * 1e-15
    case .string(let text): return (theirs as? String).map { Array($0.unicodeScalars) == Array(text.unicodeScalars) } ?? false
    case .array(let items):
        guard let array = theirs as? [Any], array.count == items.count else { return false }
        return zip(items, array).allSatisfy { sameAsFoundation($0, $1) }
    case .object(let members):
        guard let dictionary = theirs as? [String: Any], dictionary.count == members.count else { return false }
        return members.allSatisfy { name, value in dictionary[name].map { sameAsFoundation(value, $0) } ?? false }
    }
}

/// Foundation's reading of `bytes`, `nil` when it rejects them. (Foundation is no judge of
/// acceptance: it takes `[1,]` and refuses numbers beyond `Double`'s range.)
func foundationValue(_ bytes: [UInt8]) -> Any? {
    try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
}

/// Whether every number of `value` is within `Double`'s range (Foundation reads no others).
func numbersAreFinite(_ value: JSONValue) -> Bool {
    switch value {
    case .number(let text): return Double(text)?.isFinite ?? false
    case .array(let items): return items.allSatisfy(numbersAreFinite)
    case .object(let members): return members.allSatisfy { numbersAreFinite($0.1) }
    case .null, .bool, .string: return true
    }
}

/// Whether Python's `json.loads` accepts each document (RFC 8259 and strict about control
/// characters; it also takes lone surrogate escapes, which the incremental parser refuses).
func pythonAccepts(_ documents: [[UInt8]]) throws -> [Bool] {
    let script = """
        import base64, json, sys
        for line in sys.stdin:
            try:
                json.loads(base64.b64decode(line))
                print(1)
            except Exception:
                print(0)
        """
    let lines = documents.map { Data($0).base64EncodedString() }.joined(separator: "\n") + "\n"
    let answer = try Python.run(script, input: lines).output
    return answer.split(separator: "\n").map { $0 == "1" }
}

@Suite struct IncrementalJSONParserTests {
    // MARK: Helpers

    /// Whether `later` can follow `earlier` in the snapshots of one parse: strings extend by appending
    /// scalars, containers gain elements or members or their last one extends, complete values never change.
    func extends(_ later: PartialTree, _ earlier: PartialTree) -> Bool {
        switch (later, earlier) {
        case let (.string(a, aIsComplete), .string(b, bIsComplete)):
            return bIsComplete ? aIsComplete && a == b : a.unicodeScalars.starts(with: b.unicodeScalars)
        case let (.array(a, aIsComplete), .array(b, bIsComplete)):
            if bIsComplete { return aIsComplete && a == b }
            return a.count >= b.count && zip(a, b).enumerated().allSatisfy { index, pair in
                index == b.count - 1 ? extends(pair.0, pair.1) : pair.0 == pair.1
            }
        case let (.object(a, aIsComplete), .object(b, bIsComplete)):
            if bIsComplete { return aIsComplete && later == earlier }
            return a.count >= b.count && zip(a, b).enumerated().allSatisfy { index, pair in
                pair.0.name == pair.1.name
                    && (index == b.count - 1 ? extends(pair.0.value, pair.1.value) : pair.0.value == pair.1.value)
            }
        default:
            return later == earlier
        }
    }

    /// The whole text read at once (`JSONValue(parsing:)`), checked against Foundation's reading.
    func reference(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> PartialTree {
        let value = try JSONValue(parsing: text)
        if numbersAreFinite(value) {
            let foundation = foundationValue(Array(text.utf8))
            #expect(foundation.map { sameAsFoundation(value, $0) } == true, "\(text): Foundation read \(String(describing: foundation))",
                    sourceLocation: sourceLocation)
        }
        return PartialTree(value)
    }

    /// Feeds `pieces` in order, then finishes, and returns the final value. Records an issue (and returns
    /// `nil`) when a snapshot does not extend the one before or `isComplete` goes back to `false`.
    func parse(_ pieces: [ArraySlice<UInt8>], sourceLocation: SourceLocation = #_sourceLocation) throws -> PartialTree? {
        var parser = IncrementalJSONParser()
        var previous: PartialTree?
        var wasComplete = false
        for piece in pieces.map(Optional.some) + [nil] {
            if let piece { try parser.append(piece) } else { try parser.finish() }
            let current = parser.snapshot.map(PartialTree.init)
            if let previous {
                guard let current, extends(current, previous) else {
                    Issue.record("\(String(describing: current)) does not extend \(previous)", sourceLocation: sourceLocation)
                    return nil
                }
            }
            #expect(!wasComplete || parser.isComplete, sourceLocation: sourceLocation)
            previous = current
            wasComplete = parser.isComplete
        }
        #expect(parser.isComplete, sourceLocation: sourceLocation)
        return previous
    }

    func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    func pieces(_ bytes: [UInt8], cuts: [Int]) -> [ArraySlice<UInt8>] {
        let bounds = [0] + cuts.sorted() + [bytes.count]
        return zip(bounds, bounds.dropFirst()).map { bytes[$0 ..< $1] }
    }

    /// The snapshot after `prefix` arrived in one piece.
    func snapshot(after prefix: [UInt8]) throws -> PartialTree? {
        var parser = IncrementalJSONParser()
        try parser.append(prefix)
        return parser.snapshot.map(PartialTree.init)
    }

    func snapshot(after prefix: String) throws -> PartialTree? { try snapshot(after: bytes(prefix)) }

    /// The error from feeding `bytes` in pieces of `pieceSize` bytes and finishing, `nil` if none.
    func firstError(in bytes: [UInt8], pieceSize: Int) -> (offset: Int, message: String)? {
        var parser = IncrementalJSONParser()
        do throws(GrammarError) {
            for start in stride(from: 0, to: bytes.count, by: pieceSize) {
                try parser.append(bytes[start ..< min(start + pieceSize, bytes.count)])
            }
            try parser.finish()
            return nil
        } catch {
            guard case let .invalidJSON(offset, message) = error else { return (-1, "\(error)") }
            return (offset, message)
        }
    }

    // MARK: Split points

    static let trickyDocuments = [
        #"{"name":"Caf\u00e9 \"quoted\" \\ \/ \b\f\n\r\t","emoji":"\ud83d\udc4b👋","cjk":"世界"}"#,
        #"[]"#, #"{}"#, #"[[],{},[[]],{"":[]},[{}]]"#, #""""#, "0", "-12.5E+07", "true", "null", "false",
        " \t\n\r[ 1 , -0.5e+10 , 2E-3 , 0 , -0 , 123456789012345678901234567890 , 1.25e3 ] \n",
        #""é世👋""#, "\"e\u{301}\u{7F}\"",
        #"{"a":{"b":{"c":[true,false,null]}},"d":"","e":[1,[2,[3e1]]]}"#,
        #"["\u0000\u001f\u00E9\u4e16\ud83d\udc4b", "\uD834\uDD1E", "\/\\\""]"#,
        #"{ "key with spaces" : [ 1 , { } , [ ] , "x" ] , "n" : 1e5 , "é世👋" : -0.0 }"#,
        "  42  ",
    ]

    @Test(arguments: trickyDocuments)
    func everySplitPointMatchesOneShotParsing(document: String) throws {
        let expected = try reference(document)
        let input = bytes(document)
        #expect(try parse([input[...]]) == expected)
        for cut in 0 ... input.count {
            #expect(try parse(pieces(input, cuts: [cut])) == expected, "cut at \(cut)")
        }
        #expect(try parse(pieces(input, cuts: Array(1 ..< max(1, input.count)))) == expected, "byte by byte")
    }

    @Test(arguments: trickyDocuments)
    func snapshotsDependOnlyOnThePrefix(document: String) throws {
        let input = bytes(document)
        var parser = IncrementalJSONParser()
        for (index, byte) in input.enumerated() {
            try parser.append(CollectionOfOne(byte))
            #expect(try snapshot(after: Array(input[...index])) == parser.snapshot.map(PartialTree.init), "prefix of \(index + 1) bytes")
        }
    }

    // MARK: Random documents

    /// Random JSON texts together with the value they denote.
    struct DocumentGenerator {
        var random: SplitMix64
        static let scalars: [Unicode.Scalar] = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{0}", "\u{1F}", "\u{7F}",
                                                "é", "\u{301}", "ß", "世", "\u{FFFF}", "👋", "\u{1D11E}", "\u{10FFFF}"]

        mutating func whitespace() -> String {
            random.below(4) == 0 ? [" ", "\n", "\t", "\r\n", "  "][random.below(5)] : ""
        }

        mutating func digits(_ count: Int, leading: Bool = false) -> String {
            String((0 ..< count).map { index in
                let digit = leading && index == 0 ? 1 + random.below(9) : random.below(10)
                return Character(Unicode.Scalar(UInt8(ascii: "0") + UInt8(digit)))
            })
        }

        mutating func number() -> String {
            var text = random.below(3) == 0 ? "-" : ""
            text += random.below(4) == 0 ? "0" : digits(1 + random.below(6), leading: true)
            if random.below(3) == 0 { text += "." + digits(1 + random.below(4)) }
            if random.below(3) == 0 {
                text += ["e", "E"][random.below(2)] + ["", "+", "-"][random.below(3)] + digits(1 + random.below(3))
            }
            return text
        }

        mutating func hex(_ unit: UInt32) -> String {
            let digits = String(unit, radix: 16, uppercase: random.below(2) == 0)
            return "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
        }

        mutating func encode(_ scalar: Unicode.Scalar) -> String {
            let shortForms: [Unicode.Scalar: String] = ["\"": "\\\"", "\\": "\\\\", "/": "\\/", "\u{8}": "\\b",
                                                       "\u{C}": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"]
            let mustEscape = scalar.value < 0x20 || scalar == "\"" || scalar == "\\"
            switch random.below(3) {
            case 0 where !mustEscape: return String(scalar)
            case 1 where shortForms[scalar] != nil: return shortForms[scalar] ?? ""
            default:
                guard scalar.value > 0xFFFF else { return hex(scalar.value) }
                let offset = scalar.value - 0x10000
                return hex(0xD800 + offset >> 10) + hex(0xDC00 + offset & 0x3FF)
            }
        }

        mutating func string() -> (text: String, value: String) {
            var text = "\"", value = ""
            for _ in 0 ..< random.below(8) {
                let scalar = Self.scalars[random.below(Self.scalars.count)]
                text += encode(scalar)
                value.unicodeScalars.append(scalar)
            }
            return (text + "\"", value)
        }

        mutating func value(depth: Int) -> (text: String, value: PartialTree) {
            switch random.below(depth >= 4 ? 5 : 8) {
            case 0:
                return [("true", .bool(true)), ("false", .bool(false)), ("null", .null)][random.below(3)]
            case 1, 2:
                let text = number()
                return (text, .number(text))
            case 3, 4:
                let (text, value) = string()
                return (text, .string(value, isComplete: true))
            case 5, 6:
                var text = "[" + whitespace(), items: [PartialTree] = []
                for index in 0 ..< random.below(6) {
                    let item = value(depth: depth + 1)
                    text += (index == 0 ? "" : "," + whitespace()) + item.text + whitespace()
                    items.append(item.value)
                }
                return (text + "]", .array(items, isComplete: true))
            default:
                var text = "{" + whitespace(), members: [(name: String, value: PartialTree)] = []
                for index in 0 ..< random.below(6) {
                    let name = string(), member = value(depth: depth + 1)  // names made unique by a suffix
                    text += (index == 0 ? "" : "," + whitespace()) + name.text.dropLast() + "#\(index)\"" + whitespace()
                    text += ":" + whitespace() + member.text + whitespace()
                    members.append((name: name.value + "#\(index)", value: member.value))
                }
                return (text + "}", .object(members, isComplete: true))
            }
        }
    }

    @Test func randomDocumentsMatchTheReferenceInAnyPieces() throws {
        var generator = DocumentGenerator(random: SplitMix64(seed: 0x5EED_1234))
        for round in 0 ..< 300 {
            let generated = generator.value(depth: 0)
            let document = generator.whitespace() + generated.text + generator.whitespace()
            let input = bytes(document)
            #expect(try reference(document) == generated.value, "round \(round): \(document)")
            #expect(try parse([input[...]]) == generated.value, "round \(round)")
            #expect(try parse(pieces(input, cuts: Array(1 ..< max(1, input.count)))) == generated.value, "round \(round)")
            for _ in 0 ..< 3 {
                let cuts = (0 ..< generator.random.below(6)).map { _ in generator.random.below(input.count + 1) }
                #expect(try parse(pieces(input, cuts: cuts)) == generated.value, "round \(round), cuts \(cuts)")
            }
        }
    }

    /// Random documents with one byte replaced, removed or inserted: accepted exactly when
    /// Python's `json` accepts them (a `\u` escape of a lone surrogate aside, which Python
    /// reads and this parser refuses), with the value Foundation reads where it reads one.
    @Test func corruptedDocumentsAreAcceptedExactlyWhenPythonAcceptsThem() throws {
        var generator = DocumentGenerator(random: SplitMix64(seed: 0xBAD_5EED))
        let replacements = Array(#"",:[]{}\0.e-+ uEa"#.utf8) + [0xC3, 0x80, 0xFF, 0x01]
        let documents = (0 ..< 400).map { _ in
            var input = bytes(generator.value(depth: 0).text)
            let position = generator.random.below(input.count)
            let replacement = replacements[generator.random.below(replacements.count)]
            switch generator.random.below(3) {
            case 0: input[position] = replacement
            case 1: input.remove(at: position)
            default: input.insert(replacement, at: position)
            }
            return input
        }
        let accepted = try pythonAccepts(documents)
        try #require(accepted.count == documents.count, "python3 answered \(accepted.count) of \(documents.count)")
        #expect(accepted.contains(true) && accepted.contains(false))
        for (round, input) in documents.enumerated() {
            let text = String(decoding: input, as: UTF8.self).debugDescription
            var parser = IncrementalJSONParser()
            do throws(GrammarError) {
                try parser.append(input)
                try parser.finish()
                #expect(accepted[round], "round \(round): accepted \(text)")
                if let value = parser.value, numbersAreFinite(value) {
                    #expect(foundationValue(input).map { sameAsFoundation(value, $0) } == true, "round \(round): \(text)")
                }
            } catch {
                #expect(!accepted[round] || "\(error)".contains("surrogate"), "round \(round): \(error): \(text)")
            }
        }
    }

    /// Read as `JSONValue(parsing:)` reads documents, a lone surrogate escape is U+FFFD and
    /// what follows it is read as if it were not there.
    @Test func loneSurrogatesCanBeReplaced() throws {
        let cases: [(String, String)] = [
            (#""\ud800x""#, "\u{FFFD}x"), (#""\udc00""#, "\u{FFFD}"), (#""\ud83d\u0041""#, "\u{FFFD}A"),
            (#""\ud800\ud83d\udc4b""#, "\u{FFFD}👋"), (#""\ud800""#, "\u{FFFD}"), (#""\ud800\n""#, "\u{FFFD}\n"),
        ]
        for (text, value) in cases {
            #expect(try JSONValue(parsing: text) == .string(value), "\(text)")
            var strict = IncrementalJSONParser()
            #expect(throws: GrammarError.self, "\(text)") {
                try strict.append(Array(text.utf8))
                try strict.finish()
            }
        }
        #expect(try JSONValue(parsing: #""a\udbff\udfffb""#) == .string("a\u{10FFFF}b"))
    }

    // MARK: Snapshots

    @Test func snapshotsAtChosenPrefixes() throws {
        #expect(try snapshot(after: #"{"name":"Ca"#)
            == .object([(name: "name", value: .string("Ca", isComplete: false))], isComplete: false))
        #expect(try snapshot(after: #"{"a":12"#) == .object([], isComplete: false))
        #expect(try snapshot(after: #"{"a":12,"#) == .object([(name: "a", value: .number("12"))], isComplete: false))
        #expect(try snapshot(after: #"[1,"x"#) == .array([.number("1"), .string("x", isComplete: false)], isComplete: false))
        #expect(try snapshot(after: "") == nil)
        #expect(try snapshot(after: " \n") == nil)
        #expect(try snapshot(after: "12") == nil)
        #expect(try snapshot(after: "tr") == nil)
        #expect(try snapshot(after: "true") == .bool(true))
        #expect(try snapshot(after: "12 ") == .number("12"))
        #expect(try snapshot(after: #"""#) == .string("", isComplete: false))
        #expect(try snapshot(after: #"{"a"#) == .object([], isComplete: false))
        #expect(try snapshot(after: #"{"a":"#) == .object([], isComplete: false))
        #expect(try snapshot(after: #"{"a":""#) == .object([(name: "a", value: .string("", isComplete: false))], isComplete: false))
        #expect(try snapshot(after: #"{"a":[{"#)
            == .object([(name: "a", value: .array([.object([], isComplete: false)], isComplete: false))], isComplete: false))
        #expect(try snapshot(after: #"[tru"#) == .array([], isComplete: false))
        #expect(try snapshot(after: #"[true"#) == .array([.bool(true)], isComplete: false))
        #expect(try snapshot(after: #"[[1],{}"#)
            == .array([.array([.number("1")], isComplete: true), .object([], isComplete: true)], isComplete: false))
        // A repeated name keeps its first position and takes the last value (as Python's json
        // and JSON.parse read it), also while that value is still arriving.
        #expect(try snapshot(after: #"{"a":1,"b":2,"a":3}"#)
            == .object([(name: "a", value: .number("3")), (name: "b", value: .number("2"))], isComplete: true))
        #expect(try snapshot(after: #"{"a":1,"b":2,"a":"x"#)
            == .object([(name: "a", value: .string("x", isComplete: false)), (name: "b", value: .number("2"))], isComplete: false))
        #expect(try JSONValue(parsing: #"{"a":1,"b":2,"a":3}"#) == .object([("a", .number("3")), ("b", .number("2"))]))
    }

    @Test func partialEscapesAndCodePointsAreWithheld() throws {
        #expect(try snapshot(after: #""ab\"#) == .string("ab", isComplete: false))
        #expect(try snapshot(after: #""ab\u00"#) == .string("ab", isComplete: false))
        #expect(try snapshot(after: #""a\u00e9"#) == .string("aé", isComplete: false))
        #expect(try snapshot(after: #""\ud83d"#) == .string("", isComplete: false))
        #expect(try snapshot(after: #""\ud83d\"#) == .string("", isComplete: false))
        #expect(try snapshot(after: #""\ud83d\udc4"#) == .string("", isComplete: false))
        #expect(try snapshot(after: #""\ud83d\udc4b"#) == .string("👋", isComplete: false))
        let text = bytes(#""é世👋""#)
        // é is 2 bytes, 世 3 and 👋 4: a split code point is withheld until its last byte.
        for (length, value) in [(2, ""), (3, "é"), (5, "é"), (6, "é世"), (9, "é世"), (10, "é世👋")] {
            #expect(try snapshot(after: Array(text[..<length])) == .string(value, isComplete: false), "\(length) bytes")
        }
    }

    @Test func topLevelNumbersCompleteAtADelimiterOrFinish() throws {
        var parser = IncrementalJSONParser()
        try parser.append(bytes("123"))
        #expect(parser.snapshot == nil && !parser.isComplete)
        try parser.finish()
        #expect(parser.snapshot == PartialJSONValue(.number("123")) && parser.isComplete)
        try parser.finish()  // idempotent

        var spaced = IncrementalJSONParser()
        try spaced.append(bytes("-1.5e3\n"))
        #expect(spaced.snapshot == PartialJSONValue(.number("-1.5e3")) && spaced.isComplete)
    }

    // MARK: Errors

    struct Failure: Sendable, CustomTestStringConvertible {
        var input: [UInt8]
        var offset: Int
        init(_ text: String, _ offset: Int) { (input, self.offset) = (Array(text.utf8), offset) }
        init(bytes: [UInt8], _ offset: Int) { (input, self.offset) = (bytes, offset) }
        var testDescription: String { "\(String(decoding: input, as: UTF8.self).debugDescription) at \(offset)" }
    }

    static let failures: [Failure] = [
        Failure("01", 1), Failure("1.", 2), Failure("[1.]", 3), Failure("-", 1), Failure("[-]", 2), Failure("-a", 1),
        Failure(".5", 0), Failure("+1", 0), Failure("[01]", 2), Failure("[1e]", 3), Failure("1e+", 3), Failure("1E+x", 3),
        Failure("1e5.", 3), Failure("[1.5.2]", 4), Failure("1.e3", 2), Failure("0e", 2), Failure("-0.", 3), Failure("1ee", 2),
        Failure("[1,]", 3), Failure(#"{"a" 1}"#, 5), Failure(#"{"a":1,}"#, 7), Failure("{,}", 1), Failure("{1:2}", 1),
        Failure("[1 2]", 3), Failure("1 2", 2), Failure(#"{"a":1 "b":2}"#, 7), Failure(#"["a" "b"]"#, 5),
        Failure("[1}", 2), Failure(#"{"a":1]"#, 6), Failure("[1] 2", 4),
        Failure("tru", 3), Failure("trUe", 2), Failure("nul1", 3), Failure("fals3", 4), Failure("nan", 1), Failure("NaN", 0),
        Failure("", 0), Failure("   ", 3), Failure("[", 1), Failure(#"{"a":"#, 5), Failure(#""abc"#, 4),
        Failure("\"a\u{1}\"", 2), Failure("\"a\nb\"", 2), Failure("\"\u{1F}\"", 1),
        Failure(#""\q""#, 2), Failure(#""\u12G4""#, 5), Failure(#""\u0""#, 4),
        Failure(#""\udc00""#, 4), Failure(#""\uDFFF""#, 4), Failure(#""\ud83d""#, 7), Failure(#""\ud83dx""#, 7),
        Failure(#""\ud83d\n""#, 8), Failure(#""\ud83d\u0041""#, 9), Failure(#""\ud83d\udbff""#, 10),
        // Invalid UTF-8: bad continuation, truncated sequence, overlong, encoded surrogate, past U+10FFFF, stray bytes.
        Failure(bytes: [0x22, 0xC3, 0x28, 0x22], 2), Failure(bytes: [0x22, 0xC3, 0x22], 2),
        Failure(bytes: [0x22, 0xC0, 0x80, 0x22], 1), Failure(bytes: [0x22, 0xE0, 0x80], 2),
        Failure(bytes: [0x22, 0xED, 0xA0, 0x80, 0x22], 2), Failure(bytes: [0x22, 0xF5], 1),
        Failure(bytes: [0x22, 0xF4, 0x90], 2), Failure(bytes: [0x22, 0x80], 1), Failure(bytes: [0xFF], 0),
    ]

    @Test(arguments: failures)
    func errorsAreReportedAtTheFirstBadByte(failure: Failure) {
        for pieceSize in [max(1, failure.input.count), 1, 2] {
            let error = firstError(in: failure.input, pieceSize: pieceSize)
            #expect(error?.offset == failure.offset, "pieces of \(pieceSize): \(String(describing: error))")
            #expect(error?.message.isEmpty == false)
        }
    }

    @Test func errorsAreStickyAndInputEndsAtFinish() throws {
        var parser = IncrementalJSONParser()
        try parser.append(bytes("[1,"))
        #expect(throws: GrammarError.invalidJSON(offset: 3, message: "expected a value")) { try parser.append(self.bytes("]")) }
        #expect(throws: GrammarError.invalidJSON(offset: 3, message: "expected a value")) { try parser.append(self.bytes("2]")) }
        #expect(throws: GrammarError.invalidJSON(offset: 3, message: "expected a value")) { try parser.finish() }
        #expect(parser.snapshot.map(PartialTree.init) == .array([.number("1")], isComplete: false))

        var finished = IncrementalJSONParser()
        try finished.append(bytes("{} "))
        try finished.finish()
        #expect(throws: GrammarError.self) { try finished.append(self.bytes(" ")) }
        #expect("\(GrammarError.invalidJSON(offset: 3, message: "expected ':'"))".contains("byte 3: expected ':'"))
    }

    // MARK: Depth

    @Test func nestingDeeperThanTheLimitThrowsAtTheOpeningBracket() throws {
        var shallow = IncrementalJSONParser(maximumDepth: 3)
        try shallow.append(bytes("[[[1]]]"))
        #expect(shallow.isComplete)
        var tooDeep = IncrementalJSONParser(maximumDepth: 3)
        #expect(throws: GrammarError.invalidJSON(offset: 3, message: "nesting deeper than 3")) {
            try tooDeep.append(self.bytes("[[[[1]]]]"))
        }
        var objects = IncrementalJSONParser(maximumDepth: 3)
        #expect(throws: GrammarError.invalidJSON(offset: 15, message: "nesting deeper than 3")) {
            try objects.append(self.bytes(#"{"a":{"b":{"c":[]}}}"#))
        }
        var scalarsOnly = IncrementalJSONParser(maximumDepth: 0)
        try scalarsOnly.append(bytes("1 "))
        #expect(scalarsOnly.isComplete)
        var noContainers = IncrementalJSONParser(maximumDepth: 0)
        #expect(throws: GrammarError.invalidJSON(offset: 0, message: "nesting deeper than 0")) {
            try noContainers.append(self.bytes("[]"))
        }

        let deepest = String(repeating: "[", count: 512) + String(repeating: "]", count: 512)
        #expect(try parse([bytes(deepest)[...]]) == reference(deepest))
        var hostile = IncrementalJSONParser()
        #expect(throws: GrammarError.invalidJSON(offset: 512, message: "nesting deeper than 512")) {
            try hostile.append(repeatElement(UInt8(ascii: "["), count: 100_000))
        }
    }

    // MARK: Cost

    @Test func longInputInTinyPiecesStaysLinear() throws {
        let element = #"{"k":"vvvvvvvv","n":-1.5e3}"#
        let document = bytes("[" + Array(repeating: element, count: 20_000).joined(separator: ",") + "]")
        var parser = IncrementalJSONParser()
        for byte in document { try parser.append(CollectionOfOne(byte)) }
        guard case .array(let items, isComplete: true) = parser.snapshot.map(PartialTree.init) else { Issue.record("not a complete array"); return }
        #expect(items.count == 20_000)
    }
}
