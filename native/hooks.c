/* The patch table, generated from hooks.def.  Every hooked symbol gets a
 * pointer to the real function (filled by tbio_resolve_reals), a wrapper with
 * the same signature, checked against libc's prototype where glibc declares
 * one (S, SA; N: not declared), and an entry in the table the GOT walker
 * patches with.  The wrappers are in families: wrap_posix.c, wrap_stdio.c,
 * wrap_dl.c, wrap_fd.c, wrap_net.c.
 *
 * Idle cost: a call checks one global and calls the real function; an open,
 * dup or close also forgets what the fd table knew of that number (a store).
 * Nothing is looked up, locked or allocated: a recording names an fd when it
 * first touches it (registry.h).
 * Recording: take a tick count, call, take another, then (under the file's
 * record lock) update the Darshan counters and append one trace row. */
#include "wrap.h"

/* `used`: the dlsym/dlvsym entries (SA, assembly in wrap_dl.c) read
 * real_<name> by its symbol name, which LTO must neither drop nor rename */
#define H(ret, name, params, check) __attribute__((used)) ret(*real_##name) params;
#include "hooks.def"
#undef H

#define SIGCHECK_S(ret, name, params) \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&name), ret(*) params), \
                   "wrapper signature of " #name " differs from libc's");
#define SIGCHECK_N(ret, name, params)
#define SIGCHECK_SA SIGCHECK_S
#define H(ret, name, params, check) SIGCHECK_##check(ret, name, params)
#include "hooks.def"
#undef H

const tbio_hook tbio_hooks[TBIO_OP_COUNT] = {
#define H(ret, name, params, check) {#name, (void *)&tbio_w_##name, (void **)&real_##name},
#include "hooks.def"
#undef H
};
