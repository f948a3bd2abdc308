/* Internal declarations shared by the shim's C files: the op ids, raw
 * system calls and patching; hot.h, registry.h and session.h hold the rest. */
#ifndef TBIO_SHIM_H
#define TBIO_SHIM_H

#include "hot.h"
#include "registry.h"
#include "session.h"

/* ---- op ids, generated from hooks.def ---- */
enum tbio_op {
#define H(ret, name, params, check) TBIO_OP_##name,
#include "hooks.def"
#undef H
    TBIO_OP_COUNT
};

/* ---- raw syscalls (the shim never calls a function it wraps) ---- */
TBIO_HIDDEN long tbio_sys(long n, long a, long b, long c, long d, long e, long f);
TBIO_HIDDEN int tbio_raw_open(const char *path, int flags);
TBIO_HIDDEN int tbio_raw_close(int fd);
TBIO_HIDDEN ssize_t tbio_raw_read(int fd, void *buf, size_t n);
TBIO_HIDDEN ssize_t tbio_raw_readlink(const char *path, char *buf, size_t n);
TBIO_HIDDEN int64_t tbio_raw_lseek(int fd, int64_t off, int whence);
TBIO_HIDDEN int64_t tbio_raw_blksize_fd(int fd);
TBIO_HIDDEN pid_t tbio_gettid(void);
/* Whole small file (e.g. /proc/self/maps) into a malloc'ed NUL-terminated buffer. */
TBIO_HIDDEN char *tbio_read_file(const char *path, size_t *len);

/* ---- patching ---- */
typedef struct tbio_hook {
    const char *name;
    void *wrapper;
    void **real;
} tbio_hook;
TBIO_HIDDEN extern const tbio_hook tbio_hooks[TBIO_OP_COUNT];
TBIO_HIDDEN int tbio_resolve_reals(void);
TBIO_HIDDEN int tbio_hook_index(const char *name);   /* -1: not hooked */
TBIO_HIDDEN int tbio_patch_all(void);       /* patch objects not yet patched */
TBIO_HIDDEN int tbio_unpatch_all(void);
TBIO_HIDDEN void tbio_patch_atfork_prepare(void);
TBIO_HIDDEN void tbio_patch_atfork_parent(void);
TBIO_HIDDEN void tbio_patch_atfork_child(void);
TBIO_HIDDEN void *tbio_dlopen_like_caller(const char *file, int mode, const void *caller,
                                          void *(*real)(const char *, int));
TBIO_HIDDEN void tbio_set_error(const char *fmt, ...);
TBIO_HIDDEN extern _Atomic int tbio_g_enabled;

#endif
