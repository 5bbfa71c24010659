#if canImport(Accelerate)
import Accelerate
#elseif canImport(COpenBLAS)
import COpenBLAS
#endif

/// The bridge to the system BLAS: OpenBLAS on Linux (`libopenblas-dev`), Accelerate on Apple
/// platforms. Only single-precision general matrix multiplication is needed; everything else
/// in Typeset's kernels is its own code.
///
/// **Threads.** OpenBLAS runs single-threaded here: before the first call, its thread count is
/// set to 1. Typeset splits products across its own `KernelThreadPool` instead, each thread
/// calling BLAS on its own tile. This is also a matter of safety: OpenBLAS's thread server (up
/// to 0.3.21, Debian 12's version) can crash when several threads call it at once while it
/// runs more than one thread itself (OpenBLAS issues #3787/#3788), and a process that
/// generates and evaluates in parallel does exactly that.
public enum BLAS {
    /// Sets OpenBLAS to one thread, once, before any BLAS call.
    private static let singleThreaded: Void = {
        #if canImport(COpenBLAS) && !canImport(Accelerate)
        openblas_set_num_threads(1)
        #endif
    }()

    /// Computes `c = alpha * a · bᵀ + beta * c` for row-major matrices, the shape of a
    /// transformer projection: `a` is `m × k` activations, `b` is `n × k` weights (one output
    /// feature per row, as ggml stores them) and `c` is `m × n`.
    ///
    /// `c`'s rows are `ldc` floats apart (default `n`), so a product can fill a band of
    /// columns of a wider matrix.
    ///
    /// - Precondition: the buffers hold at least `m*k`, `n*k` and `(m-1)*ldc + n` floats;
    ///   `ldc >= n`.
    /// - Complexity: `2·m·n·k` floating-point operations, run on BLAS's own threads.
    public static func multiplyTransposed(
        m: Int, n: Int, k: Int,
        a: UnsafePointer<Float>, b: UnsafePointer<Float>, c: UnsafeMutablePointer<Float>,
        ldc: Int? = nil, alpha: Float = 1, beta: Float = 0
    ) {
        precondition(m >= 0 && n >= 0 && k >= 0, "negative matrix dimension")
        precondition((ldc ?? n) >= n, "ldc smaller than n")
        guard m > 0, n > 0 else { return }
        _ = singleThreaded
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans,
                    _blasInt(m), _blasInt(n), _blasInt(k),
                    alpha, a, _blasInt(max(k, 1)), b, _blasInt(max(k, 1)),
                    beta, c, _blasInt(max(ldc ?? n, 1)))
    }

    /// Computes `y = a · x` for a row-major `m × n` matrix `a` (single precision).
    public static func multiply(
        m: Int, n: Int, a: UnsafePointer<Float>, x: UnsafePointer<Float>, y: UnsafeMutablePointer<Float>
    ) {
        precondition(m >= 0 && n >= 0, "negative matrix dimension")
        guard m > 0, n > 0 else { return }
        _ = singleThreaded
        cblas_sgemv(CblasRowMajor, CblasNoTrans, _blasInt(m), _blasInt(n), 1, a, _blasInt(n), x, 1, 0, y, 1)
    }

    /// Sets the number of threads OpenBLAS may use (no effect with Accelerate).
    ///
    /// For benchmarks that compare OpenBLAS's own threading: above 1, calls from several
    /// threads at once are unsafe (see the type's documentation), so set it back to 1 before
    /// anything else in the process uses BLAS.
    public static func setThreadCount(_ count: Int) {
        _ = singleThreaded
        #if canImport(COpenBLAS) && !canImport(Accelerate)
        openblas_set_num_threads(Int32(max(1, count)))
        #endif
    }
}

@inline(__always)
private func _blasInt(_ value: Int) -> Int32 {
    precondition(value <= Int(Int32.max), "matrix dimension \(value) exceeds the BLAS integer range")
    return Int32(value)
}
