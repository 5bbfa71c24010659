// Counts the heap allocations a process makes, for `allocations_per_token.sh`.
//
// Preloaded (LD_PRELOAD), it wraps glibc's allocation entry points and prints, at exit, one
// line to standard error: `allocations: N`. Every call counts (malloc, calloc, realloc,
// posix_memalign, aligned_alloc, memalign), whoever makes it: the Swift runtime, Foundation,
// OpenBLAS.
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_long allocations;

void *malloc(size_t size) { atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed); return __libc_malloc(size); }
void *calloc(size_t count, size_t size) { atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed); return __libc_calloc(count, size); }
void *realloc(void *pointer, size_t size) { atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed); return __libc_realloc(pointer, size); }
void *memalign(size_t alignment, size_t size) { atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { return memalign(alignment, size); }
int posix_memalign(void **result, size_t alignment, size_t size) {
    void *pointer = memalign(alignment, size);
    if (!pointer) return 12;  // ENOMEM
    *result = pointer;
    return 0;
}

__attribute__((destructor)) static void report(void) {
    fprintf(stderr, "allocations: %ld\n", atomic_load(&allocations));
}
