#ifndef CBENCHSUPPORT_H
#define CBENCHSUPPORT_H
#include <stdint.h>

/// Number of heap allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc) made by this
/// process so far. Counted by interposing those functions in the benchmark executable only.
uint64_t CBenchSupport_allocationCount(void);

#endif
