// Throughput of single vector instructions on this core: twelve independent chains of one
// instruction (inline assembly, so the compiler can neither merge nor drop them), reported in
// instructions per nanosecond, and dependent scalar adds, whose rate is the clock.
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
    return 0;
}
