import ArgumentParser
import Foundation
import GGUF
import KernelBenchmarks
import Typeset

struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure Typeset's kernels and pipelines.",
        subcommands: [BenchKernels.self, BenchTokenize.self, BenchDecode.self, BenchMasks.self, BenchConstrained.self]
    )
}

struct BenchKernels: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kernels",
        abstract: "Scalar vs SIMD vs BLAS: matvec GB/s and matmul GFLOP/s per type and shape, with a memory-bandwidth reference.",
        discussion: """
        Weights are synthetic blocks in the real shapes of SmolLM2 and Gemma 3. Matvec GB/s \
        counts the quantized weight bytes streamed (BLAS: the f32 matrix); "rows" are the SIMD \
        row kernels on the mapped tensor, "packed" the kernels on the 16-row packed copy (what \
        the engine uses). Matmul GFLOP/s is 2·batch·n·k per second. Every figure is a median. \
        The header says which CPU the kernels were built for (TYPESET_TARGET_CPU=baseline \
        builds the toolchain's baseline, as a dependency resolved by URL gets).
        """
    )

    @Option(help: "Timed runs per measurement (after one warm-up).")
    var runs = 5

    @Option(help: "Comma-separated thread counts.")
    var threads = "1,2"

    @Option(help: "Comma-separated tensor types to measure (default: all supported), e.g. q4_0,q4_K.")
    var types: String?

    @Flag(help: "Skip the shapes beyond the last-level cache and the scalar path.")
    var quick = false

    @Option(help: "Comma-separated matmul batch sizes (rows of activations), e.g. 1,2,4,8 for batched decoding.")
    var batches = "1,32,128"

    @Flag(help: "Print JSON instead of tables.")
    var json = false

    @Option(help: "Also write the matrix-vector GB/s of each type as an SVG bar chart against the measured read bandwidth (a roofline).")
    var svg: String?

    @OptionGroup var progressOptions: ProgressOptions

    func run() throws {
        var options = KernelBenchmark.Options()
        options.runs = max(1, runs)
        options.threadCounts = threads.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.filter { $0 > 0 }
        guard !options.threadCounts.isEmpty else { throw ValidationError("--threads needs at least one positive count") }
        if let types {
            var selected: [GGMLType] = []
            for name in types.split(separator: ",") {
                let wanted = name.trimmingCharacters(in: .whitespaces).uppercased()
                guard let type = GGMLType.allCases.first(where: { $0.name == wanted }) else {
                    throw ValidationError("unknown tensor type '\(name)'")
                }
                selected.append(type)
            }
            options.matrixVectorTypes = options.matrixVectorTypes.filter(selected.contains)
            options.matrixMultiplyTypes = options.matrixMultiplyTypes.filter(selected.contains)
        }
        options.batches = batches.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.filter { $0 > 0 }
        guard !options.batches.isEmpty else { throw ValidationError("--batches needs at least one positive size") }
        if quick {
            options.matrixVectorShapes.removeAll { $0.k * $0.n > 32 << 20 }
            options.includeScalar = false
        }
        let reporter = progressOptions.makeReporter()
        let report = try KernelBenchmark(options: options).run { line in reporter.report(line) }
        reporter.clear()
        if let svg { try rooflineChart(report).write(to: svg) }
        if json {
            print(jsonReport(report).compactText)
        } else {
            printTables(report)
        }
    }

    /// GB/s of the engine's kernels per type and thread count, on the largest shape measured
    /// (beyond the last-level cache unless `--quick`), under dashed lines at the read bandwidth.
    private func rooflineChart(_ report: KernelBenchmark.Report) -> BarChart {
        let largest = report.matrixVector.map { $0.k * $0.n }.max() ?? 0
        let types = report.matrixVector.map(\.type).reduce(into: [GGMLType]()) { if !$0.contains($1) { $0.append($1) } }
        func result(_ type: GGMLType, _ threads: Int) -> KernelBenchmark.MatrixVectorResult? {
            report.matrixVector.filter { $0.type == type && $0.threads == threads }.max { $0.k * $0.n < $1.k * $1.n }
        }
        let threadCounts = report.memory.map(\.threads)
        let shapes = Set(types.compactMap { type in result(type, threadCounts.last ?? 1).map { "\($0.k)×\($0.n)" } })
        return BarChart(
            title: "Matrix-vector products, GB/s of weights read (\(shapes.sorted().joined(separator: ", ")); \(largest > 32 << 20 ? "beyond the last-level cache" : "in cache"))",
            yLabel: "GB/s",
            categories: types.map(\.name),
            series: threadCounts.map { threads in
                BarChart.Series(name: "\(threads) thread\(threads == 1 ? "" : "s")", values: types.map { result($0, threads)?.simdGBPerSecond })
            },
            references: report.memory.map { BarChart.Reference(name: "memory read, \($0.threads) thread\($0.threads == 1 ? "" : "s")", value: $0.readGBPerSecond) })
    }

    private func jsonReport(_ report: KernelBenchmark.Report) -> JSONValue {
        func rounded(_ value: Double) -> JSONValue { JSONValue((value * 100).rounded() / 100) }
        return .object([
            ("cpu", .string(report.cpu)),
            ("build", .string(report.build)),
            ("memory_read_gb_s", .object(report.memory.map { ("\($0.threads)", rounded($0.readGBPerSecond)) })),
            ("matvec", .array(report.matrixVector.map { result in
                .object([
                    ("type", .string(result.type.name)), ("k", JSONValue(result.k)), ("n", JSONValue(result.n)),
                    ("threads", JSONValue(result.threads)), ("weight_bytes", JSONValue(result.weightBytes)),
                    ("scalar_gb_s", result.scalarGBPerSecond.map(rounded) ?? .null),
                    ("simd_gb_s", rounded(result.simdGBPerSecond)),
                    ("rows_gb_s", rounded(result.rowsGBPerSecond)),
                    ("packed_gb_s", result.packedGBPerSecond.map(rounded) ?? .null),
                    ("read_share", rounded(result.simdGBPerSecond / (report.memory.first { $0.threads == result.threads }?.readGBPerSecond ?? .nan))),
                    ("blas_f32_gb_s", rounded(result.blasF32GBPerSecond)),
                    ("simd_us", rounded(result.simdMicroseconds)),
                    ("blas_f32_us", rounded(result.blasF32Microseconds)),
                ])
            })),
            ("matmul", .array(report.matrixMultiply.map { result in
                .object([
                    ("type", .string(result.type.name)), ("k", JSONValue(result.k)), ("n", JSONValue(result.n)),
                    ("batch", JSONValue(result.batch)), ("threads", JSONValue(result.threads)),
                    ("packed_gflop_s", result.packedGFLOPPerSecond.map(rounded) ?? .null),
                    ("blas_tiles_gflop_s", rounded(result.blasTilesGFLOPPerSecond)),
                    ("integer_rows_gflop_s", rounded(result.integerRowsGFLOPPerSecond)),
                    ("sgemm_f32_gflop_s", rounded(result.sgemmF32GFLOPPerSecond)),
                ])
            })),
        ])
    }

    private func printTables(_ report: KernelBenchmark.Report) {
        func format(_ value: Double?) -> String { value.map { String(format1: $0) } ?? "–" }
        print("CPU: \(report.cpu)")
        print("build: \(report.build)")
        print("memory read: " + report.memory.map { "\(format($0.readGBPerSecond)) GB/s at \($0.threads) thread(s)" }.joined(separator: ", "))
        print("\nmatvec (GB/s of weights streamed; BLAS streams the f32 matrix; share = SIMD / read bandwidth)")
        print("| type | k × n | threads | scalar | rows | packed | share | BLAS f32 | SIMD µs | BLAS µs |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in report.matrixVector {
            let read = report.memory.first { $0.threads == r.threads }?.readGBPerSecond ?? .nan
            print("| \(r.type.name) | \(r.k)×\(r.n) | \(r.threads) | \(format(r.scalarGBPerSecond)) | \(format(r.rowsGBPerSecond)) | \(format(r.packedGBPerSecond)) | \(String(format: "%.0f%%", 100 * r.simdGBPerSecond / read)) | \(format(r.blasF32GBPerSecond)) | \(format(r.simdMicroseconds)) | \(format(r.blasF32Microseconds)) |")
        }
        print("\nmatmul (GFLOP/s)")
        print("| type | k × n | batch | threads | packed | BLAS tiles | integer rows | sgemm f32 (peak) | best / sgemm |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for r in report.matrixMultiply {
            let best = max(r.packedGFLOPPerSecond ?? 0, r.blasTilesGFLOPPerSecond, r.integerRowsGFLOPPerSecond)
            print("| \(r.type.name) | \(r.k)×\(r.n) | \(r.batch) | \(r.threads) | \(format(r.packedGFLOPPerSecond)) | \(format(r.blasTilesGFLOPPerSecond)) | \(format(r.integerRowsGFLOPPerSecond)) | \(format(r.sgemmF32GFLOPPerSecond)) | \(String(format: "%.2f", best / r.sgemmF32GFLOPPerSecond)) |")
        }
    }
}

/// The median of timed runs (the upper one of the middle two for an even count).
///
/// - Precondition: `values` is not empty.
func median(_ values: [Double]) -> Double {
    values.sorted()[values.count / 2]
}

/// Why a benchmark could not write its output.
enum BenchError: UserFacingError {
    case cannotWrite(String, String)

    var description: String {
        switch self {
        case let .cannotWrite(path, reason): "cannot write \(path): \(reason)"
        }
    }
}
