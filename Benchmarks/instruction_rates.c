// Throughput of single vector instructions on this core: twelve independent chains of one
// instruction (inline assembly, so the compiler can neither merge nor drop them), reported in
// instructions per nanosecond, and dependent scalar adds, whose rate is the clock. Then the
// byte kernels' mix: eight `vpmaddubsw`, each added into its own accumulator with `vpaddw`,
// alone and beside four other instructions, reported in `vpmaddubsw` per nanosecond: an
// instruction that slows them shares their port.
//
//   gcc -O2 -mavx2 -mfma -o instruction_rates Benchmarks/instruction_rates.c && ./instruction_rates
//
// docs/benchmarks.md ("Serving", "On a Zen 1") reads the byte kernels' bound from these rates.
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#define ITERATIONS 50000000L
#define CHAINS(op) \
    op " %%ymm15, %%ymm0, %%ymm0\n" op " %%ymm15, %%ymm1, %%ymm1\n" op " %%ymm15, %%ymm2, %%ymm2\n" \
    op " %%ymm15, %%ymm3, %%ymm3\n" op " %%ymm15, %%ymm4, %%ymm4\n" op " %%ymm15, %%ymm5, %%ymm5\n" \
    op " %%ymm15, %%ymm6, %%ymm6\n" op " %%ymm15, %%ymm7, %%ymm7\n" op " %%ymm15, %%ymm8, %%ymm8\n" \
    op " %%ymm15, %%ymm9, %%ymm9\n" op " %%ymm15, %%ymm10, %%ymm10\n" op " %%ymm15, %%ymm11, %%ymm11\n"
#define MEASURE(name, op) { \
    double start = now(); \
    for (long i = 0; i < ITERATIONS; i++) \
        __asm__ volatile(CHAINS(op) ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", \
                         "xmm8", "xmm9", "xmm10", "xmm11"); \
    printf("%-22s %.2f per ns\n", name, 12.0 * ITERATIONS / (now() - start) / 1e9); }

// Eight products of bytes, each added into its own 16-bit accumulator (ymm0-7).
#define PRODUCT(t, a) "vpmaddubsw %%ymm15, %%ymm14, %%ymm" #t "\n vpaddw %%ymm" #t ", %%ymm" #a ", %%ymm" #a "\n"
#define PRODUCTS PRODUCT(8, 0) PRODUCT(9, 1) PRODUCT(10, 2) PRODUCT(11, 3) PRODUCT(12, 4) PRODUCT(13, 5) PRODUCT(8, 6) PRODUCT(9, 7)
#define FOUR(op) op " %%ymm15, %%ymm14, %%ymm10\n" op " %%ymm15, %%ymm14, %%ymm11\n" op " %%ymm15, %%ymm14, %%ymm12\n" op " %%ymm15, %%ymm14, %%ymm13\n"
#define BROADCASTS "vpbroadcastd (%0), %%ymm10\n vpbroadcastd 4(%0), %%ymm11\n vpbroadcastd 8(%0), %%ymm12\n vpbroadcastd 12(%0), %%ymm13\n"
static int codes[16];
#define MEASURE_MIX(name, body) { \
    double start = now(); \
    for (long i = 0; i < ITERATIONS; i++) \
        __asm__ volatile(body :: "r"(codes) : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", \
                         "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "memory"); \
    printf("%-34s %.2f vpmaddubsw per ns\n", name, 8.0 * ITERATIONS / (now() - start) / 1e9); }

int main(void) {
    MEASURE("vpmaddubsw ymm", "vpmaddubsw")
    MEASURE("vpmaddwd ymm", "vpmaddwd")
    MEASURE("vpmullw ymm", "vpmullw")
    MEASURE("vpaddw ymm", "vpaddw")
    MEASURE("vfmadd231ps ymm", "vfmadd231ps")
    long x = 0;
    double start = now();
    for (long i = 0; i < 8 * ITERATIONS; i++) __asm__ volatile("add $1, %0" : "+r"(x));
    printf("%-22s %.2f per ns (the clock, GHz)\n", "dependent scalar adds", 8.0 * ITERATIONS / (now() - start) / 1e9);
    MEASURE_MIX("8 vpmaddubsw + 8 vpaddw", PRODUCTS)
    MEASURE_MIX("  + 4 vpbroadcastd from memory", PRODUCTS BROADCASTS)
    MEASURE_MIX("  + 4 vpand", PRODUCTS FOUR("vpand"))
    MEASURE_MIX("  + 4 vfmadd231ps", PRODUCTS FOUR("vfmadd231ps"))
    return 0;
}
