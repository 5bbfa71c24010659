// A C replica of the byte kernels' four-column Q4_1 block loop on AVX2 (PackedByteKernels.swift):
// 16 rows × 576 weights (18 blocks of 32) against four activation columns, all in L1, so that
// only the arithmetic is timed. Per block: the nibbles of four packed words unpacked into eight
// quads, each multiplied with every column's broadcast codes (`vpmaddubsw`) into 16-bit sums,
// the sums widened (`vpmaddwd` by ones), converted and scaled by the block's scales and
// minimums. The variants, chosen at compile time, are the rearrangements docs/benchmarks.md
// ("Serving → On a Zen 1") reports:
//
//   gcc -O3 -mavx2 -mfma -o replica Benchmarks/q4_1_block_replica.c && ./replica
//   -DWITHOUT_SCALING      integer sums only (no conversion, scales or minimums)
//   -DWIDEN_BY_SHIFTS      the 16-bit sums widened with shifts and adds instead of `vpmaddwd`
//   -DCODES_BROADCAST      each code word broadcast once into memory beforehand, read by the multiplies
//   -DCOLUMNS_PER_PASS=2   two passes of two columns over each block (1: four passes of one)
//
// It prints the best of seven runs in nanoseconds and cycles a block (at the clock given as the
// first argument in GHz, 2.5 by default) and GFLOP/s for one thread.
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BLOCKS 18
#define COLUMNS 4
#define REPETITIONS 200000
#ifndef COLUMNS_PER_PASS
#define COLUMNS_PER_PASS 4
#endif

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

// Per block: four words of 16 rows (low nibbles quads 0-3, high nibbles quads 4-7), 16 scales
// and 16 minimums (floats here: the fp16 conversion is the same per block in every variant).
static uint32_t words[BLOCKS * 64] __attribute__((aligned(64)));
static float scales[BLOCKS * 16], minimums[BLOCKS * 16];
static int8_t codes[COLUMNS][BLOCKS * 32] __attribute__((aligned(64)));
static __m256i broadcastCodes[COLUMNS][BLOCKS * 8];
static float codeScales[COLUMNS][BLOCKS], codeSums[COLUMNS][BLOCKS];
static float results[COLUMNS * 16];

#ifdef CODES_BROADCAST
#define CODE_WORD(column, block, word) _mm256_load_si256(&broadcastCodes[column][8 * (block) + (word)])
#else
#define CODE_WORD(column, block, word) _mm256_set1_epi32(*(const int32_t *)&codes[column][32 * (block) + 4 * (word)])
#endif

static inline __m256i widen(__m256i pairs) {
#ifdef WIDEN_BY_SHIFTS
    return _mm256_add_epi32(_mm256_srai_epi32(_mm256_slli_epi32(pairs, 16), 16), _mm256_srai_epi32(pairs, 16));
#else
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
#endif
}

__attribute__((noinline, noclone)) static void pass(int first) {
    __m256 sums[COLUMNS_PER_PASS][2];
    _Pragma("GCC unroll 8") for (int c = 0; c < COLUMNS_PER_PASS; c++) sums[c][0] = sums[c][1] = _mm256_setzero_ps();
    const __m256i nibbles = _mm256_set1_epi8(0x0F);
    for (int block = 0; block < BLOCKS; block++) {
        __m256i pending[COLUMNS_PER_PASS][2];
        _Pragma("GCC unroll 8") for (int c = 0; c < COLUMNS_PER_PASS; c++) pending[c][0] = pending[c][1] = _mm256_setzero_si256();
        _Pragma("GCC unroll 8") for (int word = 0; word < 4; word++) {
            __m256i x0 = _mm256_load_si256((const __m256i *)&words[block * 64 + word * 16]);
            __m256i x1 = _mm256_load_si256((const __m256i *)&words[block * 64 + word * 16 + 8]);
            __m256i low0 = _mm256_and_si256(x0, nibbles), low1 = _mm256_and_si256(x1, nibbles);
            __m256i high0 = _mm256_and_si256(_mm256_srli_epi32(x0, 4), nibbles);
            __m256i high1 = _mm256_and_si256(_mm256_srli_epi32(x1, 4), nibbles);
            _Pragma("GCC unroll 8") for (int c = 0; c < COLUMNS_PER_PASS; c++) {
                __m256i a = CODE_WORD(first + c, block, word);
                pending[c][0] = _mm256_add_epi16(pending[c][0], _mm256_maddubs_epi16(low0, a));
                pending[c][1] = _mm256_add_epi16(pending[c][1], _mm256_maddubs_epi16(low1, a));
            }
            _Pragma("GCC unroll 8") for (int c = 0; c < COLUMNS_PER_PASS; c++) {
                __m256i a = CODE_WORD(first + c, block, word + 4);
                pending[c][0] = _mm256_add_epi16(pending[c][0], _mm256_maddubs_epi16(high0, a));
                pending[c][1] = _mm256_add_epi16(pending[c][1], _mm256_maddubs_epi16(high1, a));
            }
        }
        __m256 s0 = _mm256_loadu_ps(&scales[block * 16]), s1 = _mm256_loadu_ps(&scales[block * 16 + 8]);
        __m256 m0 = _mm256_loadu_ps(&minimums[block * 16]), m1 = _mm256_loadu_ps(&minimums[block * 16 + 8]);
        _Pragma("GCC unroll 8") for (int c = 0; c < COLUMNS_PER_PASS; c++) {
#ifdef WITHOUT_SCALING
            (void)s0; (void)s1; (void)m0; (void)m1;
            sums[c][0] = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(sums[c][0]), widen(pending[c][0])));
            sums[c][1] = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(sums[c][1]), widen(pending[c][1])));
#else
            __m256 scale = _mm256_broadcast_ss(&codeScales[first + c][block]), sum = _mm256_broadcast_ss(&codeSums[first + c][block]);
            sums[c][0] = _mm256_fmadd_ps(m0, sum, sums[c][0]);
            sums[c][1] = _mm256_fmadd_ps(m1, sum, sums[c][1]);
            sums[c][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(widen(pending[c][0])), _mm256_mul_ps(s0, scale), sums[c][0]);
            sums[c][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(widen(pending[c][1])), _mm256_mul_ps(s1, scale), sums[c][1]);
#endif
        }
    }
    _Pragma("GCC unroll 8") for (int c = 0; c < COLUMNS_PER_PASS; c++) {
        _mm256_storeu_ps(results + 16 * (first + c), sums[c][0]);
        _mm256_storeu_ps(results + 16 * (first + c) + 8, sums[c][1]);
    }
}

int main(int argc, char **argv) {
    double gigahertz = argc > 1 ? atof(argv[1]) : 2.5;
    srand(1);
    for (int i = 0; i < BLOCKS * 64; i++) words[i] = (uint32_t)rand();
    for (int i = 0; i < BLOCKS * 16; i++) scales[i] = 1e-3f * (rand() % 100), minimums[i] = 1e-3f * (rand() % 100);
    for (int c = 0; c < COLUMNS; c++) {
        for (int i = 0; i < BLOCKS * 32; i++) codes[c][i] = (int8_t)(rand() % 255 - 127);
        for (int i = 0; i < BLOCKS * 8; i++) broadcastCodes[c][i] = _mm256_set1_epi32(*(const int32_t *)&codes[c][4 * i]);
        for (int b = 0; b < BLOCKS; b++) codeScales[c][b] = 0.01f, codeSums[c][b] = 1;
    }
    double best = 1e9;
    for (int run = 0; run < 7; run++) {
        double start = now();
        for (int i = 0; i < REPETITIONS; i++) {
            for (int first = 0; first < COLUMNS; first += COLUMNS_PER_PASS) pass(first);
            __asm__ volatile("" ::"r"(results) : "memory");
        }
        double elapsed = now() - start;
        if (elapsed < best) best = elapsed;
    }
    double nanoseconds = best / REPETITIONS / BLOCKS * 1e9;
    printf("%.1f ns a block of four columns, %.0f cycles at %.2f GHz, %.1f GFLOP/s (result %g)\n",
           nanoseconds, nanoseconds * gigahertz, gigahertz, 16 * 32 * COLUMNS * 2 / nanoseconds, results[5]);
    return 0;
}
