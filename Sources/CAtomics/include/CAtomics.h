#ifndef CATOMICS_H
#define CATOMICS_H

#include <stdint.h>

/// Relaxed atomic operations on a 64-bit integer (Locking's AtomicCounter): the new value, the value, nothing.
/// C11's atomics, because Swift's Synchronization needs macOS 15.
int64_t CAtomics_add(int64_t *p, int64_t delta);
int64_t CAtomics_load(const int64_t *p);
void CAtomics_store(int64_t *p, int64_t value);

#endif
