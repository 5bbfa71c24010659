import Dispatch
import Foundation
import GGUF
import Kernels
import SyntheticTensors

/// The kernel benchmark behind `typeset bench kernels`: matrix-vector GB/s (scalar, SIMD row
/// kernels on the mapped tensor, packed kernels, and OpenBLAS on f32), matrix-matrix GFLOP/s
/// (packed kernels, BLAS tiles, integer rows, and plain f32 sgemm as the peak), and a
/// memory-bandwidth reference measured in the same run.
///
/// Weights are synthetic (random blocks with finite scales) in the real shapes of SmolLM2 and
/// Gemma 3; speed does not depend on the values. A type is measured only on shapes whose row
/// length is a whole number of its blocks (no K-quant has SmolLM2's 576). Every figure is the median of `runs` timed
/// runs after one warm-up.
public struct KernelBenchmark {
    public struct Options: Sendable {
        public var runs = 5
        public var threadCounts = [1, 2]
        public var matrixVectorTypes: [GGMLType] = [.q4_0, .q4_1, .q5_0, .q8_0, .q4_K, .q6_K, .mxfp4, .q5_1, .q2_K, .q3_K, .q5_K, .f16, .bf16, .f32]
        public var matrixMultiplyTypes: [GGMLType] = [.q4_0, .q4_1, .q5_0, .q8_0, .q4_K, .q6_K, .mxfp4]
        /// (row length k, rows n): the projections of SmolLM2 (576, 1536) and Gemma 3 (640, 2048),
        /// Gemma 3's output layer, and 2048×32768, a synthetic shape beyond the last-level cache
        /// whose rows are whole 256-element super-blocks, so the K-quants are measured there too.
        public var matrixVectorShapes: [(k: Int, n: Int)] = [(576, 1536), (1536, 576), (640, 2048), (2048, 640), (640, 262_144), (2048, 32_768)]
        public var matrixMultiplyShapes: [(k: Int, n: Int)] = [(576, 1536), (1536, 576), (640, 2048), (2048, 640)]
        public var batches = [1, 32, 128]
        public var includeScalar = true
        public init() {}
    }

    public struct MemoryBandwidth: Sendable { public var threads: Int; public var readGBPerSecond: Double }

    public struct MatrixVectorResult: Sendable {
        public var type: GGMLType, k: Int, n: Int, threads: Int
        /// Bytes of quantized weights streamed per product.
        public var weightBytes: Int
        public var scalarGBPerSecond: Double?
        /// Row kernels on the mapped tensor (integer SIMD, or block decoding).
        public var rowsGBPerSecond: Double
        /// Packed kernels, for the types and shapes that pack.
        public var packedGBPerSecond: Double?
        /// OpenBLAS sgemv on the same matrix dequantized to f32 (4 bytes per weight streamed).
        public var blasF32GBPerSecond: Double
        public var blasF32Microseconds: Double
        /// What the products use by default: packed when there is a packed copy, else rows.
        public var simdGBPerSecond: Double { packedGBPerSecond ?? rowsGBPerSecond }
        public var simdMicroseconds: Double { Double(weightBytes) / simdGBPerSecond / 1e3 }
    }

    public struct MatrixMultiplyResult: Sendable {
        public var type: GGMLType, k: Int, n: Int, batch: Int, threads: Int
        public var packedGFLOPPerSecond: Double?
        public var blasTilesGFLOPPerSecond: Double
        public var integerRowsGFLOPPerSecond: Double
        /// OpenBLAS sgemm on the weights already dequantized to f32: the peak to compare with.
        public var sgemmF32GFLOPPerSecond: Double
    }

    public struct Report: Sendable {
        public var cpu: String
        public var build: String
        public var memory: [MemoryBandwidth]
        public var matrixVector: [MatrixVectorResult]
        public var matrixMultiply: [MatrixMultiplyResult]
    }

    public let options: Options

    public init(options: Options = Options()) { self.options = options }

    /// Runs everything; `progress` receives one line per measurement group.
    public func run(progress: (String) -> Void = { _ in }) throws -> Report {
        var report = Report(cpu: Self.cpuDescription(), build: Self.buildDescription, memory: [], matrixVector: [], matrixMultiply: [])
        for threads in options.threadCounts {
            report.memory.append(MemoryBandwidth(threads: threads, readGBPerSecond: Self.memoryReadBandwidth(threads: threads, runs: options.runs)))
            progress("memory read, \(threads) thread(s): \(String(format: "%.1f", report.memory.last!.readGBPerSecond)) GB/s")
        }
        var generator = SplitMix64(seed: 1)
        for (k, n) in options.matrixVectorShapes {
            let f32 = (0 ..< k * n).map { _ in Float.random(in: -1...1, using: &generator) }
            let values = (0..<k).map { _ in Float.random(in: -1...1, using: &generator) }
            var output = [Float](repeating: 0, count: n)
            for type in options.matrixVectorTypes where k % type.blockSize == 0 {
                let input = ActivationVector(values, for: type)
                let weights = try SyntheticWeights.tensor(type, rowLength: k, rows: n, seed: UInt64(k * n) ^ UInt64(type.rawValue))
                let packed = PackedMatrix.canPack(weights) ? try WeightMatrix(weights, packing: true, threadCount: 2) : nil
                for threads in options.threadCounts {
                    let rows = try Self.median(runs: options.runs) {
                        try output.withUnsafeMutableBufferPointer { (buffer) throws(KernelError) in
                            try MatrixVectorProduct.multiply(weights, by: input, into: buffer, threadCount: threads)
                        }
                    }
                    var packedSeconds: Double?
                    if let packed {
                        packedSeconds = try Self.median(runs: options.runs) {
                            try output.withUnsafeMutableBufferPointer { (buffer) throws(KernelError) in
                                try MatrixVectorProduct.multiply(packed, by: input, into: buffer, threadCount: threads)
                            }
                        }
                    }
                    var scalar: Double?
                    if options.includeScalar && threads == 1 {
                        scalar = try Self.median(runs: max(1, options.runs / 2)) {
                            try output.withUnsafeMutableBufferPointer { (buffer) throws(KernelError) in
                                try MatrixVectorProduct.multiply(weights, by: input, into: buffer, threadCount: 1, implementation: .scalar)
                            }
                        }
                    }
                    BLAS.setThreadCount(threads)
                    let blas = Self.median(runs: options.runs) {
                        f32.withUnsafeBufferPointer { a in
                            values.withUnsafeBufferPointer { x in
                                output.withUnsafeMutableBufferPointer { y in
                                    BLAS.multiply(m: n, n: k, a: a.baseAddress!, x: x.baseAddress!, y: y.baseAddress!)
                                }
                            }
                        }
                    }
                    let bytes = weights.bytes.count
                    report.matrixVector.append(MatrixVectorResult(
                        type: type, k: k, n: n, threads: threads, weightBytes: bytes,
                        scalarGBPerSecond: scalar.map { Double(bytes) / $0 / 1e9 },
                        rowsGBPerSecond: Double(bytes) / rows / 1e9,
                        packedGBPerSecond: packedSeconds.map { Double(bytes) / $0 / 1e9 },
                        blasF32GBPerSecond: Double(4 * k * n) / blas / 1e9,
                        blasF32Microseconds: blas * 1e6))
                }
            }
            progress("matvec \(k)×\(n): done")
        }
        for (k, n) in options.matrixMultiplyShapes {
            for type in options.matrixMultiplyTypes where k % type.blockSize == 0 {
                let weights = try SyntheticWeights.tensor(type, rowLength: k, rows: n, seed: UInt64(n) &* 7 ^ UInt64(type.rawValue))
                let matrix = try WeightMatrix(weights, packing: true, threadCount: 2)
                let dequantized = try Dequantization.dequantize(weights)
                for batch in options.batches {
                    let inputs = (0 ..< batch * k).map { _ in Float.random(in: -1...1, using: &generator) }
                    var output = [Float](repeating: 0, count: batch * n)
                    let flops = 2.0 * Double(batch * n * k)
                    for threads in options.threadCounts {
                        func timed(_ strategy: MatrixMultiplication.Strategy) throws -> Double {
                            try Self.median(runs: options.runs) {
                                try inputs.withUnsafeBufferPointer { (input) throws(KernelError) in
                                    try output.withUnsafeMutableBufferPointer { (result) throws(KernelError) in
                                        try MatrixMultiplication.multiply(matrix, inputs: input, batch: batch, into: result,
                                                                          threadCount: threads, strategy: strategy)
                                    }
                                }
                            }
                        }
                        let packedSeconds = matrix.packed == nil ? nil : try timed(.packed)
                        let tiles = try timed(.blasTiles)
                        let rows = try timed(.integerRows)
                        BLAS.setThreadCount(threads)
                        let sgemm = Self.median(runs: options.runs) {
                            inputs.withUnsafeBufferPointer { a in
                                dequantized.withUnsafeBufferPointer { b in
                                    output.withUnsafeMutableBufferPointer { c in
                                        BLAS.multiplyTransposed(m: batch, n: n, k: k, a: a.baseAddress!, b: b.baseAddress!, c: c.baseAddress!)
                                    }
                                }
                            }
                        }
                        report.matrixMultiply.append(MatrixMultiplyResult(
                            type: type, k: k, n: n, batch: batch, threads: threads,
                            packedGFLOPPerSecond: packedSeconds.map { flops / $0 / 1e9 },
                            blasTilesGFLOPPerSecond: flops / tiles / 1e9,
                            integerRowsGFLOPPerSecond: flops / rows / 1e9,
                            sgemmF32GFLOPPerSecond: flops / sgemm / 1e9))
                    }
                }
            }
            progress("matmul \(k)×\(n): done")
        }
        return report
    }

    // MARK: Measurement

    /// Median seconds of `runs` calls after one warm-up.
    static func median<E: Error>(runs: Int, _ body: () throws(E) -> Void) throws(E) -> Double {
        try body()
        var times: [Double] = []
        for _ in 0 ..< max(1, runs) {
            let start = DispatchTime.now().uptimeNanoseconds
            try body()
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        times.sort()
        return times[times.count / 2]
    }

    /// A STREAM-like read: summing a 512 MiB array (far beyond the last-level cache) with
    /// `threads` threads, each over its own contiguous part. GB/s = bytes read / seconds.
    static func memoryReadBandwidth(threads: Int, runs: Int) -> Double {
        let count = 128 << 20   // floats
        let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: count)
        defer { buffer.deallocate() }
        buffer.initialize(repeating: 1)
        let job = ReadJob(base: UnsafePointer(buffer.baseAddress!), count: count, parts: threads)
        let seconds = median(runs: runs) {
            DispatchQueue.concurrentPerform(iterations: threads) { part in job.read(part: part) }
        }
        return Double(count * 4) / seconds / 1e9
    }

    // MARK: Environment

    static func cpuDescription() -> String {
        let info = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model = info.split(separator: "\n").first { $0.hasPrefix("model name") }
            .map { $0.split(separator: ":", maxSplits: 1).last!.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
        let flags = Set(info.split(separator: "\n").first { $0.hasPrefix("flags") }?.split(separator: " ").map(String.init) ?? [])
        let features = ["avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16"].filter(flags.contains)
        return "\(model), \(ProcessInfo.processInfo.activeProcessorCount) cores" + (features.isEmpty ? "" : " (\(features.joined(separator: " ")))")
    }

    static var buildDescription: String {
        #if TYPESET_TUNED_CPU
        "kernels built for the host CPU (or TYPESET_TARGET_CPU)"
        #else
        "kernels built for the baseline CPU (TYPESET_TARGET_CPU=baseline, or a dependency resolved by URL)"
        #endif
    }
}

/// One memory-read measurement shared by the threads that perform it; each thread reads a
/// disjoint part of an array that outlives the synchronous call.
struct ReadJob: @unchecked Sendable {
    let base: UnsafePointer<Float>
    let count: Int
    let parts: Int

    func read(part: Int) {
        let length = count / parts
        let start = base + part * length
        var sum = SIMD16<Float>()
        var index = 0
        while index + 16 <= length {
            sum += UnsafeRawPointer(start + index).loadUnaligned(as: SIMD16<Float>.self)
            index += 16
        }
        if sum.sum() == -1 { print("") }   // keeps the loads from being optimised away
    }
}
