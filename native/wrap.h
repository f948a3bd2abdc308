/* What the wrapper families (wrap_posix.c, wrap_stdio.c, wrap_dl.c,
 * wrap_fd.c, wrap_net.c) share: the real functions and the wrappers generated from
 * hooks.def (defined in hooks.c and in the families), and the idle test. */
#ifndef TBIO_WRAP_H
#define TBIO_WRAP_H
#include "shim.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>

/* glibc 2.36 headers no longer declare these; they are still exported. */
struct stat;
struct stat64;

/* ---- generated from hooks.def: real pointers (hooks.c) and wrappers ---- */
#define H(ret, name, params, check) TBIO_HIDDEN extern ret(*real_##name) params;
#include "hooks.def"
#undef H
#define H(ret, name, params, check) TBIO_HIDDEN ret tbio_w_##name params;
#include "hooks.def"
#undef H

/* After a read (TBIO_K_READ) or write of fd (wrap_posix.c): the accounting
 * of every data call, off < 0 when the call used the file offset. */
enum { TBIO_K_READ = 0, TBIO_K_WRITE = 1 };
TBIO_HIDDEN void tbio_io_done(tbio_call *c, int op, int kind, int fd, int64_t off, int64_t req, int aligned,
                              int64_t ret, int err);
/* After a call that reads `in` and writes `out` (copy_file_range, sendfile, splice). */
TBIO_HIDDEN void tbio_copy_done(tbio_call *c, int op, int in, int64_t inoff, int out, int64_t outoff,
                                int64_t req, int64_t ret, int err);

#define IDLE() LIKELY(atomic_load_explicit(&tbio_g_active, memory_order_relaxed) == NULL)

/* The body every traced wrapper shares: idle, or not recordable now
 * (tbio_call_pre: no thread state, or a signal handler's call while its
 * thread is inside the shim), the real call alone;
 * else the call, its errno kept, then DONE (statements that see the call
 * `c`, its result `ret_` and errno `err_`), and errno given back. */
#define TBIO_TRACED(RTYPE, CALL, ...)                                          \
    do {                                                                       \
        if (IDLE()) return CALL;                                               \
        tbio_call c;                                                           \
        if (!tbio_call_pre(&c)) return CALL;                                   \
        RTYPE ret_ = CALL;                                                     \
        int err_ = errno;                                                      \
        __VA_ARGS__;                                                           \
        errno = err_;                                                          \
        return ret_;                                                           \
    } while (0)

/* The offset a copy (copy_file_range, sendfile, splice) started at: the
 * caller's pointer, read only once the kernel has moved it by RET; -1 for
 * none or a failed call. */
#define TBIO_COPY_OFF(PTR, RET) ((PTR) && (RET) >= 0 ? (int64_t)*(PTR) - (RET) : -1)

static inline int mem_aligned(const void *p) {
    return ((uintptr_t)p & (TBIO_MEM_ALIGNMENT - 1)) == 0;
}
#endif
