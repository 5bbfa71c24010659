import ArgumentParser
import Foundation
import Typeset
import TypesetGrammar

// MARK: - typeset grammar

struct GrammarCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "grammar",
        abstract: "Look inside the grammar compiler: rules, automaton, token masks.",
        subcommands: [GrammarCompile.self, GrammarTrace.self]
    )
}

/// `--whitespace`'s value: `compact`, or `flexible[:N]` (at most N bytes in a row, default 4).
func parseWhitespace(_ text: String) throws -> JSONSchemaOptions.Whitespace {
    if text == "compact" { return .compact }
    let parts = text.split(separator: ":")
    guard parts.first == "flexible", parts.count <= 2, let maximum = parts.count == 2 ? Int(parts[1]) : 4, maximum >= 0 else {
        throw ValidationError("--whitespace must be compact or flexible[:N]")
    }
    return .flexible(maximum: maximum)
}

/// Where a constraint comes from: a JSON Schema file, a regular expression or a GBNF text.
struct ConstraintOptions: ParsableArguments {
    @Option(help: "A JSON Schema file.")
    var schema: String?

    @Option(help: "A regular expression the whole output must match.")
    var regex: String?

    @Option(help: "A GBNF grammar file (root rule 'root').")
    var ebnf: String?

    @Option(help: "Whitespace in JSON: compact, or flexible[:N] (at most N bytes in a row, default 4).")
    var whitespace = "compact"

    @Flag(help: "Drop JSON Schema keywords that cannot be enforced instead of failing (and list them).")
    var lenient = false

    @Flag(help: "Check values as a validator does: an object's properties in any order, unknown formats as annotations.")
    var validation = false

    @OptionGroup var budgetOptions: CompilationBudgetOptions

    func validate() throws {
        guard [schema, regex, ebnf].compactMap({ $0 }).count == 1 else {
            throw ValidationError("give exactly one of --schema, --regex and --ebnf")
        }
    }

    var schemaOptions: JSONSchemaOptions {
        get throws {
            var options = validation ? JSONSchemaOptions.validation : JSONSchemaOptions()
            options.lenient = lenient
            options.whitespace = try parseWhitespace(whitespace)
            return options
        }
    }

    /// The constraint's grammar, and the grammar compiled against `vocabulary`, within one
    /// compilation budget.
    func compile(against vocabulary: GrammarVocabulary) throws -> (Grammar, CompiledGrammar) {
        let budget = budgetOptions.budget, options = try schemaOptions
        // The files are read first; only the compilation spends the budget.
        let build: () throws(GrammarError) -> Grammar
        if let schema {
            let text = try readText(schema, what: "schema")
            build = { () throws(GrammarError) in try Grammar(jsonSchema: text, options: options, budget: budget) }
        } else if let regex {
            build = { () throws(GrammarError) in try Grammar(regex: regex, budget: budget) }
        } else {
            let text = try readText(ebnf!, what: "grammar")
            build = { () throws(GrammarError) in try Grammar(ebnf: text, budget: budget) }
        }
        return try budget.spending { () throws(GrammarError) in
            let grammar = try build()
            return (grammar, try CompiledGrammar(grammar, vocabulary: vocabulary, budget: budget))
        }
    }
}

struct GrammarCompile: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "compile",
        abstract: "Compile a constraint against a model's vocabulary and show what was built.",
        discussion: """
        Shows the grammar's rules, the pushdown automaton's size, for each position the \
        matcher can stand at the number of accepted, rejected and undecided tokens and how \
        its mask is stored, the mask cache's bytes and the compile time. With --dot, the \
        automaton as a Graphviz graph instead.
        """
    )

    @OptionGroup var constraint: ConstraintOptions

    @Option(help: "A GGUF file or known model name.")
    var model: String?

    @Flag(help: "Print JSON.")
    var json = false

    @Flag(help: "Print the automaton in Graphviz's DOT language, with each state's token counts (render it with dot -Tsvg).")
    var dot = false

    func validate() throws {
        if json && dot { throw ValidationError("--json and --dot print different things; choose one") }
    }

    func run() throws {
        let tokenizer = try loadTokenizer(model)
        let vocabulary = GrammarVocabulary(tokenizer.vocabulary)
        let start = ContinuousClock.now
        let (grammar, compiled) = try constraint.compile(against: vocabulary)
        let seconds = (ContinuousClock.now - start).seconds
        if dot {
            print(compiled.graphviz, terminator: "")
            return
        }
        let statistics = compiled.statistics
        let positions = compiled.positionSummaries
        if json {
            let output = JSONValue.object([
                ("rules", .array(compiled.ruleSummaries.map { rule in
                    .object([("name", .string(rule.name)), ("states", JSONValue(rule.states)), ("terminal", .bool(rule.isTerminal)),
                             ("nullable", .bool(rule.isNullable)), ("first", .string(rule.first)), ("follow", .string(rule.follow)),
                             ("calls", .array(rule.calls.map { .string($0) }))])
                })),
                ("root", .string(grammar.rootName)),
                ("automaton_states", JSONValue(statistics.automatonStates)),
                ("positions", JSONValue(statistics.positions)),
                ("shared_positions", JSONValue(statistics.sharedPositions)),
                ("sliced_positions", JSONValue(statistics.slicedPositions)),
                ("accepted_tokens", JSONValue(statistics.acceptedTokens)),
                ("rejected_tokens", JSONValue(statistics.rejectedTokens)),
                ("undecided_tokens", JSONValue(statistics.undecidedTokens)),
                ("mask_bytes", JSONValue(statistics.maskBytes)),
                ("compile_ms", JSONValue(seconds * 1000)),
                ("automaton_ms", JSONValue(statistics.automatonSeconds * 1000)),
                ("masks_ms", JSONValue(statistics.maskSeconds * 1000)),
                ("dropped_keywords", .array(grammar.droppedKeywords.map { .string($0.description) })),
                ("per_position", .array(positions.map { position in
                    .object([("rule", .string(position.rule)), ("state", JSONValue(position.state)),
                             ("accepted", JSONValue(position.accepted)), ("rejected", JSONValue(position.rejected)),
                             ("undecided", JSONValue(position.undecided)), ("form", .string(position.form)),
                             ("bytes", JSONValue(position.storageBytes)), ("compute_us", JSONValue(position.computeMicroseconds)),
                             ("shared", .bool(position.isShared)), ("wholesale", JSONValue(position.wholesaleAccepted)),
                             ("count", position.count.map { JSONValue($0) } ?? .null)])
                })),
            ])
            print(output.formatted())
            return
        }
        print("rules (root '\(grammar.rootName)'):")
        for rule in compiled.ruleSummaries {
            print("  \(rule.name): \(rule.states) states\(rule.isTerminal ? ", terminal" : "")\(rule.isNullable ? ", nullable" : ""); "
                  + "first \(rule.first), follow \(rule.follow)\(rule.calls.isEmpty ? "" : "; calls " + rule.calls.joined(separator: ", "))")
        }
        print("automaton: \(statistics.rules) rules, \(statistics.automatonStates) states; \(statistics.positions) positions with a mask"
              + (statistics.sharedPositions > 0 ? " (\(statistics.sharedPositions) shared with an identical rule)" : "")
              + (statistics.slicedPositions > 0 ? "; \(statistics.slicedPositions) took plain tokens wholesale (marked *)" : "")
              + (positions.contains { $0.count != nil } ? "; n=N: in a counted string, the mask of counts like N" : ""))
        print("vocabulary: \(vocabulary.size) tokens")
        print("position                         accepted   rejected  undecided  form        bytes       µs")
        for position in positions {
            let name = "\(position.rule)@\(position.state)" + (position.count.map { " n=\($0)" } ?? "")
                + (position.wholesaleAccepted > 0 ? " *" : "")
            print(name.padding(toLength: 30, withPad: " ", startingAt: 0)
                  + String(format: " %10d %10d %10d  %-9@ %7d %8@", position.accepted, position.rejected, position.undecided, position.form,
                           position.storageBytes, position.isShared ? "shared" : String(format: "%.1f", position.computeMicroseconds)))
        }
        print(String(format: "mask cache: %d bytes; compile %.2f ms (automaton %.2f ms, masks %.2f ms)",
                     statistics.maskBytes, seconds * 1000, statistics.automatonSeconds * 1000, statistics.maskSeconds * 1000))
        for dropped in grammar.droppedKeywords { print("not enforced: \(dropped)") }
    }
}

struct GrammarTrace: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trace",
        abstract: "Run an instance through the matcher token by token: each step's token, allowed-token count and mask time."
    )

    @OptionGroup var constraint: ConstraintOptions

    @Option(help: "A GGUF file or known model name.")
    var model: String?

    @Option(help: "The instance text (for a schema: JSON, written compactly before tokenizing).")
    var instance: String

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        let tokenizer = try loadTokenizer(model)
        let vocabulary = GrammarVocabulary(tokenizer.vocabulary)
        let (_, compiled) = try constraint.compile(against: vocabulary)
        var text = Array(instance.utf8)
        if constraint.schema != nil { text = Array(try JSONValue(parsing: instance).compactText.utf8) }
        let tokens = text.withUnsafeBufferPointer { tokenizer.encode(bytes: $0, addingSpecialTokens: false) }
        var matcher = GrammarMatcher(compiled)
        var mask = TokenBitmask(vocabularySize: vocabulary.size)
        var steps: [JSONValue] = []
        var accepted = true
        for token in tokens + [-1] {
            let start = ContinuousClock.now
            matcher.fillNextTokenMask(into: &mask)
            let microseconds = (ContinuousClock.now - start).seconds * 1e6
            let allowed = mask.allowedCount
            let forced = String(decoding: matcher.forcedBytes(), as: UTF8.self)
            if token < 0 {
                let canEnd = matcher.canTerminate
                if json {
                    steps.append(.object([("token", .string("<end>")), ("allowed", JSONValue(allowed)), ("mask_us", JSONValue(microseconds)), ("ok", .bool(canEnd))]))
                } else {
                    print(String(format: "%5@ %-24@ allowed %7d  mask %8.2f µs  %@", "end", "<end of generation>", allowed, microseconds, canEnd ? "ok" : "REJECTED"))
                }
                accepted = accepted && canEnd
                break
            }
            let ok = mask[token] && matcher.accept(token: token)
            let piece = String(decoding: vocabulary.tokenBytes[token], as: UTF8.self).debugDescription
            if json {
                steps.append(.object([("token", JSONValue(token)), ("piece", .string(piece)), ("allowed", JSONValue(allowed)),
                                      ("mask_us", JSONValue(microseconds)), ("forced", .string(forced)), ("ok", .bool(ok))]))
            } else {
                print(String(format: "%5d %-24@ allowed %7d  mask %8.2f µs  %@%@", token, piece, allowed, microseconds, ok ? "ok" : "REJECTED",
                             forced.isEmpty ? "" : "  forced \(forced.debugDescription)"))
            }
            if !ok { accepted = false; break }
        }
        if json {
            print(JSONValue.object([("accepted", .bool(accepted)), ("steps", .array(steps))]).formatted())
        } else {
            print(accepted ? "accepted" : "rejected")
        }
        if !accepted { throw ExitCode(1) }
    }
}

// MARK: - typeset bench masks

struct BenchMasks: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "masks",
        abstract: "MaskBench-style run: compile each schema, then mask and accept each test instance token by token.",
        discussion: """
        MaskBench's procedure (as its peers' script runs XGrammar and llguidance), single-threaded: compile time per \
        schema, the time to first mask (the compile and the mask at the grammar's start), the \
        time of every full-vocabulary mask, and whether each valid instance is \
        accepted and each invalid one rejected. Instances are serialized as json.dumps does \
        (compact, ensure_ascii=False) and tokenized without BOS or special tokens.
        """
    )

    @OptionGroup var progressOptions: ProgressOptions

    @Option(help: "A GGUF file or known model name.")
    var model: String?

    @Argument(help: "MaskBench files or directories of them (default: the MaskBench slice that Fixtures/fetch.sh unpacks into $TYPESET_CACHE/maskbench-dev).")
    var paths: [String] = []

    @Option(help: "A file listing the schema files to run, one per line (e.g. the peers' --limit sample).")
    var files: String?

    @Option(help: "Run every N-th file of the sorted list (1: all).")
    var stride = 1

    @Option(help: "Whitespace in JSON: compact, or flexible[:N].")
    var whitespace = "compact"

    @Option(help: "Seconds a schema's compilation may take.")
    var timeout = 120.0

    @Option(help: "Threads that may determinize a large grammar's rules at once (1: single-threaded, as the peers run).")
    var compileThreads = 1

    @Flag(help: "Check values as a validator does: an object's properties in any order, unknown formats as annotations (by default, the schema's order, and unknown formats refused).")
    var validation = false

    @Option(help: "Write one JSON record per schema to this file.")
    var jsonl: String?

    @Option(help: "When masks are computed: upfront (while compiling), first-use (when a matcher first stands at a position), or background (first use, and the rest on another thread as soon as the automaton is built).")
    var masks: MaskComputationArgument = .upfront

    @Flag(help: "Archive each compiled grammar, load it back, and walk the tests on the loaded one; reports the load time (archive_load_ms) and size (archive_kb).")
    var archive = false

    @Flag(help: "Print JSON.")
    var json = false

    /// Where `Fixtures/fetch.sh` unpacks the MaskBench slice the repository carries.
    static var defaultDirectory: String { ModelStore.cacheDirectory + "/maskbench-dev" }

    func schemaFiles() throws -> [String] {
        if let files {
            return String(decoding: try readInput(files), as: UTF8.self).split(separator: "\n").map(String.init).filter { !$0.isEmpty }
        }
        var result: [String] = []
        if paths.isEmpty, !FileManager.default.fileExists(atPath: Self.defaultDirectory) {
            throw InputError.defaultMissing(
                "the MaskBench slice", path: Self.defaultDirectory,
                remedy: "unpack it with `\(ModelStore.fetchCommand(part: "maskbench"))`, or name MaskBench files")
        }
        for path in paths.isEmpty ? [Self.defaultDirectory] : paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw InputError.unreadable(path, "no such file or directory")
            }
            if isDirectory.boolValue {
                result += try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".json") }.map { path + "/" + $0 }
            } else {
                result.append(path)
            }
        }
        let sorted = Array(Set(result)).sorted()
        return Swift.stride(from: 0, to: sorted.count, by: max(1, stride)).map { sorted[$0] }
    }

    func validate() throws {
        guard compileThreads > 0 else { throw ValidationError("--compile-threads must be a positive number") }
    }

    func run() throws {
        let files = try schemaFiles()   // before the model: a missing input fails at once
        let initStart = ContinuousClock.now
        let tokenizer = try loadTokenizer(model)
        let vocabulary = GrammarVocabulary(tokenizer.vocabulary)
        let initSeconds = (ContinuousClock.now - initStart).seconds
        var options = validation ? JSONSchemaOptions.validation : JSONSchemaOptions()
        if whitespace.hasPrefix("flexible") {
            options.whitespace = .flexible(maximum: Int(whitespace.split(separator: ":").last ?? "") ?? 4)
        }
        let wallStart = ContinuousClock.now
        var compileMilliseconds: [Double] = [], maskMicroseconds: [Double] = [], firstMasks: [Double] = [], timesToFirstMask: [Double] = []
        var archiveLoads: [Double] = [], archiveKilobytes: [Double] = []
        var schemas = 0, compiled = 0, compileErrors = 0, timeouts = 0, testsNotRun = 0
        var validAccepted = 0, validTotal = 0, invalidRejected = 0, invalidTotal = 0, fullyPassing = 0
        var errorKinds: [String: Int] = [:]
        var records: [String] = []
        let reporter = progressOptions.makeReporter()
        for (number, file) in files.enumerated() {
            reporter.report("schema \(number + 1) of \(files.count), \(fullyPassing) fully passing so far",
                            fraction: Double(number) / Double(files.count))
            let document = try JSONValue(parsing: try readInput(file))
            let schema = document["schema"] ?? document
            var tests: [(JSONValue, Bool)] = []
            if case .array(let list)? = document["tests"] {
                for test in list { if let data = test["data"], case .bool(let valid)? = test["valid"] { tests.append((data, valid)) } }
            }
            schemas += 1
            let start = ContinuousClock.now
            var grammar: CompiledGrammar
            var schemaTime = 0.0
            do {
                let budget = CompilationBudget(seconds: timeout, maskSeconds: timeout, threads: compileThreads)
                let rules = try Grammar(jsonSchema: schema, options: options, budget: budget)
                schemaTime = (ContinuousClock.now - start).seconds * 1000
                grammar = try CompiledGrammar(rules, vocabulary: vocabulary, budget: budget, maskComputation: masks.value)
            } catch {
                let description = "\(error)"
                if case .budgetExceeded(let what, _) = error, what.contains("seconds") { timeouts += 1 } else { compileErrors += 1 }
                errorKinds[Self.kind(error), default: 0] += 1
                testsNotRun += tests.count
                records.append(JSONValue.object([("id", .string((file as NSString).lastPathComponent)), ("status", .string("compile_error")),
                                                ("error", .string(description))]).compactText)
                continue
            }
            let compileTime = (ContinuousClock.now - start).seconds * 1000
            compileMilliseconds.append(compileTime)
            if archive {
                // The tests then run on the grammar as loaded: what a cache directory serves.
                let bytes = grammar.archive(key: file)
                let loadStart = ContinuousClock.now
                grammar = try CompiledGrammar(archive: bytes, key: file, vocabulary: vocabulary, maskComputation: .onFirstUse)
                archiveLoads.append((ContinuousClock.now - loadStart).seconds * 1000)
                archiveKilobytes.append(Double(bytes.count) / 1024)
            }
            // Time to first mask: the compile and the mask at the grammar's start, as a
            // generation asks for it (not counted among the masks below).
            var firstMask = TokenBitmask(vocabularySize: vocabulary.size)
            GrammarMatcher(grammar).fillNextTokenMask(into: &firstMask)
            let timeToFirstMask = (ContinuousClock.now - start).seconds * 1000
            timesToFirstMask.append(timeToFirstMask)
            compiled += 1
            var wrong: [JSONValue] = []
            var schemaPasses = true
            let masksBefore = maskMicroseconds.count
            for (index, (data, valid)) in tests.enumerated() {
                let text = Array(data.compactTextWithDoubleNumbers.utf8)
                let tokens = text.withUnsafeBufferPointer { tokenizer.encode(bytes: $0, addingSpecialTokens: false) }
                var times: [Double] = []
                let accepted = Self.walk(grammar, tokens, times: &times)
                if index == 0, let first = times.first { firstMasks.append(first) }
                maskMicroseconds += times
                if valid { validTotal += 1; validAccepted += accepted ? 1 : 0 } else { invalidTotal += 1; invalidRejected += accepted ? 0 : 1 }
                if accepted != valid {
                    schemaPasses = false
                    wrong.append(.object([("test", JSONValue(index)), ("valid", .bool(valid))]))
                }
            }
            if schemaPasses { fullyPassing += 1 }
            let schemaMasks = maskMicroseconds[masksBefore...]
            records.append(JSONValue.object([("id", .string((file as NSString).lastPathComponent)), ("status", .string("ok")),
                                            ("compile_ms", JSONValue(compileTime)), ("ttfm_ms", JSONValue(timeToFirstMask)),
                                            ("schema_ms", JSONValue(schemaTime)),
                                            ("automaton_ms", JSONValue(grammar.statistics.automatonSeconds * 1000)),
                                            ("masks", JSONValue(schemaMasks.count)), ("mask_max_us", JSONValue(schemaMasks.max() ?? 0)),
                                            ("masks_over_100us", JSONValue(schemaMasks.count { $0 > 100 })),
                                            ("archive_load_ms", archive ? JSONValue(archiveLoads.last ?? 0) : .null),
                                            ("wrong", .array(wrong))]).compactText)
        }
        let wallSeconds = (ContinuousClock.now - wallStart).seconds
        if let jsonl { try writeText(records.joined(separator: "\n") + "\n", to: jsonl) }
        reporter.clear()
        compileMilliseconds.sort()
        maskMicroseconds.sort()
        firstMasks.sort()
        timesToFirstMask.sort()
        archiveLoads.sort()
        archiveKilobytes.sort()
        func percentiles(_ values: [Double]) -> JSONValue {
            .object([("p50", number(percentile(values, 50))), ("p90", number(percentile(values, 90))),
                     ("p99", number(percentile(values, 99))), ("max", number(percentile(values, 100)))])
        }
        var maskSummary = percentiles(maskMicroseconds)
        if case .object(var members) = maskSummary {
            members.append(("mean", number(maskMicroseconds.isEmpty ? nil : maskMicroseconds.reduce(0, +) / Double(maskMicroseconds.count))))
            maskSummary = .object(members)
        }
        let summary = JSONValue.object([
            ("engine", .string("typeset")), ("model", .string(tokenizer.vocabulary.model)), ("whitespace", .string(whitespace)),
            ("schemas", JSONValue(schemas)), ("compiled", JSONValue(compiled)), ("compile_errors", JSONValue(compileErrors)),
            ("timeouts", JSONValue(timeouts)), ("fully_passing", JSONValue(fullyPassing)),
            ("masks", .string(masks.rawValue)),
            ("compile_ms", percentiles(compileMilliseconds)), ("ttfm_ms", percentiles(timesToFirstMask)), ("n_masks", JSONValue(maskMicroseconds.count)),
            ("tbm_us", maskSummary), ("first_mask_us_p50", number(percentile(firstMasks, 50))),
            ("archive_load_ms", archive ? percentiles(archiveLoads) : .null), ("archive_kb", archive ? percentiles(archiveKilobytes) : .null),
            ("valid_accepted", JSONValue(validAccepted)), ("valid_total", JSONValue(validTotal)),
            ("invalid_rejected", JSONValue(invalidRejected)), ("invalid_total", JSONValue(invalidTotal)),
            ("tests_not_run", JSONValue(testsNotRun)), ("init_s", JSONValue(initSeconds)), ("wall_s", JSONValue(wallSeconds)),
            ("compile_error_kinds", .object(errorKinds.sorted { $0.value > $1.value }.map { ($0.key, JSONValue($0.value)) })),
        ])
        print(json ? summary.formatted() : summary.compactText)
    }

    /// Masks and accepts `tokens` as mask_bench.py does; each mask's time goes to `times` (µs).
    static func walk(_ grammar: CompiledGrammar, _ tokens: [Int], times: inout [Double]) -> Bool {
        var matcher = GrammarMatcher(grammar)
        var mask = TokenBitmask(vocabularySize: grammar.vocabulary.size)
        for token in tokens {
            let start = ContinuousClock.now
            matcher.fillNextTokenMask(into: &mask)
            times.append((ContinuousClock.now - start).seconds * 1e6)
            guard mask[token], matcher.accept(token: token) else { return false }
        }
        let start = ContinuousClock.now
        matcher.fillNextTokenMask(into: &mask)
        times.append((ContinuousClock.now - start).seconds * 1e6)
        return grammar.vocabulary.endOfGenerationTokens.contains { mask[$0] } && matcher.canTerminate
    }

    static func kind(_ error: Error) -> String {
        guard let error = error as? GrammarError else { return "other" }
        switch error {
        case .unsupportedKeyword(let keyword, _, _): return "unsupported \(keyword)"
        case .unresolvedReference: return "unresolved $ref"
        case .invalidRegex: return "regex"
        case .budgetExceeded(let what, _): return "budget: " + what.prefix(while: { $0 != " " })
        case .emptyLanguage, .emptyGrammar: return "empty language"
        case .invalidSchema: return "invalid schema"
        case .invalidJSON: return "invalid JSON"
        default: return "\(error)"
        }
    }

    /// Linear interpolation between closest ranks, as mask_bench.py's `pct`.
    func percentile(_ sorted: [Double], _ q: Double) -> Double? {
        guard !sorted.isEmpty else { return nil }
        let k = Double(sorted.count - 1) * q / 100
        let low = Int(k.rounded(.down)), high = Int(k.rounded(.up))
        return sorted[low] + (sorted[high] - sorted[low]) * (k - Double(low))
    }

    func number(_ value: Double?) -> JSONValue { value.map { JSONValue(($0 * 1000).rounded() / 1000) } ?? .null }
}

/// What compiling a constraint may spend (`CompilationBudget`), for every command that compiles one.
struct CompilationBudgetOptions: ParsableArguments {
    @Option(parsing: .unconditional, help: "The most seconds compiling a schema, regular expression or grammar may take before its automaton is built.")
    var compileSeconds: Double = CompilationBudget().seconds

    @Option(parsing: .unconditional, help: "The most memory, in MiB, the grammar compiler may hold.")
    var compileMemory: Int = CompilationBudget().bytes >> 20

    @Option(parsing: .unconditional, help: "Threads that may determinize a large grammar's rules at once.")
    var compileThreads: Int = CompilationBudget().threads

    func validate() throws {
        try validateNumber(compileSeconds, "--compile-seconds", above: 0)
        guard compileMemory > 0 else { throw ValidationError("--compile-memory must be a positive number of MiB") }
        guard compileThreads > 0 else { throw ValidationError("--compile-threads must be a positive number") }
    }

    var budget: CompilationBudget {
        CompilationBudget(seconds: compileSeconds, bytes: compileMemory << 20, threads: compileThreads)
    }

}

/// `--masks`: when a compiled grammar computes its masks.
enum MaskComputationArgument: String, ExpressibleByArgument, CaseIterable {
    case upfront
    case firstUse = "first-use"
    case background

    var value: MaskComputation {
        switch self {
        case .upfront: .upfront
        case .firstUse: .onFirstUse
        case .background: .onFirstUseAndInBackground
        }
    }
}
