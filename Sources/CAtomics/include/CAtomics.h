#ifndef CATOMICS_H
#define CATOMICS_H

#include <stdint.h>

/// Relaxed atomic operations on a 64-bit integer (Locking's AtomicCounter and AtomicCounters): the new value, the
/// value, nothing. C11's atomics, because Swift's Synchronization needs macOS 15. Inline in the header, so that
/// Swift inlines them where they are used (a call per add cost more than the add: the metrics add a few per line).
static inline int64_t CAtomics_add(int64_t *p, int64_t delta) { return __atomic_add_fetch(p, delta, __ATOMIC_RELAXED); }
static inline int64_t CAtomics_load(const int64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static inline void CAtomics_store(int64_t *p, int64_t value) { __atomic_store_n(p, value, __ATOMIC_RELAXED); }

#endif
