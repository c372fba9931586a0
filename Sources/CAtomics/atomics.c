#include "CAtomics.h"

int64_t CAtomics_add(int64_t *p, int64_t delta) { return __atomic_add_fetch(p, delta, __ATOMIC_RELAXED); }
int64_t CAtomics_load(const int64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
void CAtomics_store(int64_t *p, int64_t value) { __atomic_store_n(p, value, __ATOMIC_RELAXED); }
