/* Small ELF helpers shared by the GOT walker (got.c) and the dlopen search (dlsearch.c). */
#ifndef TBIO_ELF_DYN_H
#define TBIO_ELF_DYN_H
#include <stdint.h>

/* A d_ptr entry of a loaded object's dynamic section as an address: glibc
 * relocates them in place on most targets; others leave them relative. */
static inline uintptr_t tbio_dyn_ptr(uintptr_t base, uintptr_t v) {
    return (base && v < base) ? base + v : v;
}

/* dlsearch.c's share of the fork protocol (called by got.c's) */
void tbio_dlsearch_atfork_prepare(void) __attribute__((visibility("hidden")));
void tbio_dlsearch_atfork_parent(void) __attribute__((visibility("hidden")));
void tbio_dlsearch_atfork_child(void) __attribute__((visibility("hidden")));
#endif
