// Counts heap allocations for cookie-bench by interposing the allocator entry points and forwarding to
// glibc's internal ones. Linked into the benchmark executable only, never into the product.
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include "CBenchSupport.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static _Atomic uint64_t allocations = 0;

uint64_t CBenchSupport_allocationCount(void) { return allocations; }

void *malloc(size_t size) {
    allocations++;
    return __libc_malloc(size);
}

void *calloc(size_t n, size_t size) {
    allocations++;
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size) {
    allocations++;
    return __libc_realloc(p, size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    allocations++;
    void *p = __libc_memalign(alignment, size);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

void *aligned_alloc(size_t alignment, size_t size) {
    allocations++;
    return __libc_memalign(alignment, size);
}
