/* The wrappers.  Every hooked symbol from hooks.def gets a pointer to the
 * real function, a wrapper with the same signature (checked against libc's
 * prototype where glibc declares one) and an entry in the patch table.
 *
 * Idle cost: a call checks one global and calls the real function; an open,
 * dup or close also forgets what the fd table knew of that number (a store).
 * Nothing is looked up, locked or allocated: a recording names an fd when it
 * first touches it (registry.h).
 * Recording: take a tick count, call, take another, then (under the file's
 * record lock) update the Darshan counters and append one trace row. */
#include "shim.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
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

/* ---- generated: real pointers, wrapper prototypes, signature checks ---- */
/* SA: the wrapper is assembly that reads real_<name> by its symbol name: a
 * hidden global kept under LTO, not a static it could rename or drop */
#define RPROTO_S(ret, name, params) static ret(*real_##name) params;
#define RPROTO_N RPROTO_S
#define RPROTO_SA(ret, name, params) TBIO_HIDDEN __attribute__((used)) ret(*real_##name) params;
#define H(ret, name, params, check) RPROTO_##check(ret, name, params)
#include "hooks.def"
#undef H
#define WPROTO_S(ret, name, params) static ret tbio_w_##name params;
#define WPROTO_N WPROTO_S
#define WPROTO_SA(ret, name, params) TBIO_HIDDEN ret tbio_w_##name params;   /* in assembly, below */
#define H(ret, name, params, check) WPROTO_##check(ret, name, params)
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

#define IDLE() LIKELY(atomic_load_explicit(&tbio_g_active, memory_order_relaxed) == NULL)

static inline int mem_aligned(const void *p) {
    return ((uintptr_t)p & (TBIO_MEM_ALIGNMENT - 1)) == 0;
}

/* ---------------- POSIX data calls ---------------- */
enum { K_READ, K_WRITE };

/* After a read/write-like call on fd.  off < 0: the call used the file offset. */
static void io_done(tbio_call *c, int op, int kind, int fd, int64_t off, int64_t req, int aligned,
                    int64_t ret, int err) {
    uint64_t t1;
    if (!tbio_call_post(c, &t1)) return;
    uint32_t id = tbio_fd_posix(fd);
    if (id == TBIO_OVER_FILE) TBIO_EACH_SESSION(c) tbio_count_over(c, kind == K_READ ? ret : 0, kind == K_WRITE ? ret : 0);
    if (tbio_tracked(id)) TBIO_EACH_SESSION(c) {
        int64_t used = off;
        tbio_rec *r = ret >= 0 ? tbio_rec_get(c->s, id) : NULL;
        if (r) {
            tbio_rec_lock(r);
            if (off < 0) {
                if (!r->offset_known) {
                    /* first sight of this file in the session: ask the kernel */
                    int64_t cur = tbio_raw_lseek(fd, 0, SEEK_CUR);
                    r->u.p.offset = cur >= ret ? cur - ret : 0;
                }
                used = r->u.p.offset;
            }
            r->offset_known = 1;
            double a = tbio_sec(c->s, c->t0), b = tbio_sec(c->s, t1);
            if (kind == K_READ) tbio_posix_on_read(&r->u.p, used, ret, aligned, a, b);
            else tbio_posix_on_write(&r->u.p, used, ret, aligned, a, b);
            tbio_rec_unlock(r);
        }
        tbio_trace_add(c, t1, op, id, fd, used, req, ret >= 0 ? ret : -1, ret >= 0 ? 0 : err,
                       r && kind == K_READ ? ret : 0, r && kind == K_WRITE ? ret : 0);
    }
    tbio_call_leave(c);
}

#define IO_CALL(OP, KIND, FD, OFF, REQ, ALIGNED, RTYPE, CALL)                 \
    do {                                                                       \
        if (IDLE()) return CALL;                                               \
        tbio_call c;                                                           \
        if (!tbio_call_pre(&c)) return CALL;                                   \
        RTYPE ret_ = CALL;                                                     \
        int err_ = errno;                                                      \
        io_done(&c, OP, KIND, FD, OFF, REQ, ALIGNED, (int64_t)ret_, err_);     \
        errno = err_;                                                          \
        return ret_;                                                           \
    } while (0)

static int64_t iov_len(const struct iovec *iov, int cnt) {
    int64_t n = 0;
    for (int i = 0; iov && i < cnt; i++) n += (int64_t)iov[i].iov_len;
    return n;
}

static int iov_aligned(const struct iovec *iov, int cnt) {
    for (int i = 0; iov && i < cnt; i++)
        if (!mem_aligned(iov[i].iov_base)) return 0;
    return 1;
}

/* The iovec array is the caller's and may be bad (the kernel answers EFAULT
 * or EINVAL): read it only after the call succeeded, i.e. after the kernel
 * has validated it.  Used inside IO_CALL, where ret_ is the call's result. */
#define IOV_REQ(iov, cnt) (ret_ >= 0 ? iov_len(iov, cnt) : -1)
#define IOV_ALIGNED(iov, cnt) (ret_ >= 0 ? iov_aligned(iov, cnt) : 1)

static ssize_t tbio_w_read(int fd, void *buf, size_t n) {
    IO_CALL(TBIO_OP_read, K_READ, fd, -1, (int64_t)n, mem_aligned(buf), ssize_t, real_read(fd, buf, n));
}
static ssize_t tbio_w___read_chk(int fd, void *buf, size_t n, size_t buflen) {
    IO_CALL(TBIO_OP___read_chk, K_READ, fd, -1, (int64_t)n, mem_aligned(buf), ssize_t,
            real___read_chk(fd, buf, n, buflen));
}
static ssize_t tbio_w_pread(int fd, void *buf, size_t n, off_t off) {
    IO_CALL(TBIO_OP_pread, K_READ, fd, off, (int64_t)n, mem_aligned(buf), ssize_t, real_pread(fd, buf, n, off));
}
static ssize_t tbio_w_pread64(int fd, void *buf, size_t n, off64_t off) {
    IO_CALL(TBIO_OP_pread64, K_READ, fd, off, (int64_t)n, mem_aligned(buf), ssize_t,
            real_pread64(fd, buf, n, off));
}
static ssize_t tbio_w___pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen) {
    IO_CALL(TBIO_OP___pread_chk, K_READ, fd, off, (int64_t)n, mem_aligned(buf), ssize_t,
            real___pread_chk(fd, buf, n, off, buflen));
}
static ssize_t tbio_w___pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen) {
    IO_CALL(TBIO_OP___pread64_chk, K_READ, fd, off, (int64_t)n, mem_aligned(buf), ssize_t,
            real___pread64_chk(fd, buf, n, off, buflen));
}
static ssize_t tbio_w_readv(int fd, const struct iovec *iov, int cnt) {
    IO_CALL(TBIO_OP_readv, K_READ, fd, -1, IOV_REQ(iov, cnt), IOV_ALIGNED(iov, cnt), ssize_t,
            real_readv(fd, iov, cnt));
}
static ssize_t tbio_w_preadv(int fd, const struct iovec *iov, int cnt, off_t off) {
    IO_CALL(TBIO_OP_preadv, K_READ, fd, off, IOV_REQ(iov, cnt), IOV_ALIGNED(iov, cnt), ssize_t,
            real_preadv(fd, iov, cnt, off));
}
static ssize_t tbio_w_preadv64(int fd, const struct iovec *iov, int cnt, off64_t off) {
    IO_CALL(TBIO_OP_preadv64, K_READ, fd, off, IOV_REQ(iov, cnt), IOV_ALIGNED(iov, cnt), ssize_t,
            real_preadv64(fd, iov, cnt, off));
}
static ssize_t tbio_w_preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags) {
    IO_CALL(TBIO_OP_preadv2, K_READ, fd, off, IOV_REQ(iov, cnt), IOV_ALIGNED(iov, cnt), ssize_t,
            real_preadv2(fd, iov, cnt, off, flags));
}
static ssize_t tbio_w_preadv64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags) {
    IO_CALL(TBIO_OP_preadv64v2, K_READ, fd, off, IOV_REQ(iov, cnt), IOV_ALIGNED(iov, cnt), ssize_t,
            real_preadv64v2(fd, iov, cnt, off, flags));
}
static ssize_t tbio_w_write(int fd, const void *buf, size_t n) {
    IO_CALL(TBIO_OP_write, K_WRITE, fd, -1, (int64_t)n, mem_aligned(buf), ssize_t, real_write(fd, buf, n));
}
static ssize_t tbio_w_pwrite(int fd, const void *buf, size_t n, off_t off) {
    IO_CALL(TBIO_OP_pwrite, K_WRITE, fd, off, (int64_t)n, mem_aligned(buf), ssize_t,
            real_pwrite(fd, buf, n, off));
}
static ssize_t tbio_w_pwrite64(int fd, const void *buf, size_t n, off64_t off) {
    IO_CALL(TBIO_OP_pwrite64, K_WRITE, fd, off, (int64_t)n, mem_aligned(buf), ssize_t,
            real_pwrite64(fd, buf, n, off));
}
static ssize_t tbio_w_writev(int fd, const struct iovec *iov, int cnt) {
    IO_CALL(TBIO_OP_writev, K_WRITE, fd, -1, IOV_REQ(iov, cnt), IOV_ALIGNED(iov, cnt), ssize_t,
            real_writev(fd, iov, cnt));
}
static ssize_t tbio_w_pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
    IO_CALL(TBIO_OP_pwritev, K_WRITE, fd, off, IOV_REQ(iov, cnt), IOV_ALIGNED(iov, cnt), ssize_t,
            real_pwritev(fd, iov, cnt, off));
}
static ssize_t tbio_w_pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off) {
    IO_CALL(TBIO_OP_pwritev64, K_WRITE, fd, off, IOV_REQ(iov, cnt), IOV_ALIGNED(iov, cnt), ssize_t,
            real_pwritev64(fd, iov, cnt, off));
}
static ssize_t tbio_w_pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags) {
    IO_CALL(TBIO_OP_pwritev2, K_WRITE, fd, off, IOV_REQ(iov, cnt), IOV_ALIGNED(iov, cnt), ssize_t,
            real_pwritev2(fd, iov, cnt, off, flags));
}
static ssize_t tbio_w_pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags) {
    IO_CALL(TBIO_OP_pwritev64v2, K_WRITE, fd, off, IOV_REQ(iov, cnt), IOV_ALIGNED(iov, cnt), ssize_t,
            real_pwritev64v2(fd, iov, cnt, off, flags));
}

/* ---------------- fd metadata calls ---------------- */
enum { M_SEEK, M_CLOSE, M_FSYNC, M_FDSYNC, M_STAT, M_MMAP, M_DUP, M_NONE };

/* What a metadata call names: looked up only once the call is recorded, never while idle. */
typedef struct names {
    uint32_t id;                /* known already (close: named before the call) */
    int fd;                     /* else this fd, if >= 0 */
    int dirfd;
    const char *path;           /* else this path, relative to dirfd */
} names;
#define NAMES_ID(i) ((names){(i), -1, 0, NULL})
#define NAMES_FD(f) ((names){TBIO_NO_FILE, (f), 0, NULL})
#define NAMES_PATH(d, p) ((names){TBIO_NO_FILE, -1, (d), (p)})
static uint32_t names_id(const names *n) {
    if (n->path) return tbio_path_id(n->dirfd, n->path, TBIO_POSIX);
    if (n->fd >= 0) return tbio_fd_posix(n->fd);
    return n->id;
}

/* The id of fd before a call that closes it: named inside the shim's accounting. */
static uint32_t peek_fd(tbio_call *c, int fd) {
    uint32_t id = tbio_enter_and_load(c->th) ? tbio_fd_posix(fd) : TBIO_NO_FILE;
    tbio_call_leave(c);
    c->t0 = tbio_ticks();
    return id;
}

/* After a metadata call.  M_DUP: fd is the new descriptor, which names what nm names. */
static void meta_done(tbio_call *c, int op, int kind, names nm, int fd, int64_t off, int64_t req,
                      int64_t ret, int ok, int err) {
    uint64_t t1;
    if (!tbio_call_post(c, &t1)) {
        if (kind == M_DUP && ok) tbio_fd_forget(fd);
        return;
    }
    uint32_t id = names_id(&nm);
    if (kind == M_DUP && ok) tbio_fd_set_posix(fd, id);
    if (id == TBIO_OVER_FILE) TBIO_EACH_SESSION(c) tbio_count_over(c, 0, 0);
    if (tbio_tracked(id)) TBIO_EACH_SESSION(c) {
        tbio_rec *r = ok ? tbio_rec_get(c->s, id) : NULL;
        if (r) {
            double a = tbio_sec(c->s, c->t0), b = tbio_sec(c->s, t1);
            tbio_rec_lock(r);
            switch (kind) {
            case M_SEEK: tbio_posix_on_seek(&r->u.p, ret, a, b); r->offset_known = 1; break;
            case M_CLOSE: tbio_posix_on_close(&r->u.p, a, b); break;
            case M_FSYNC: tbio_posix_on_sync(&r->u.p, 0, a, b); break;
            case M_FDSYNC: tbio_posix_on_sync(&r->u.p, 1, a, b); break;
            case M_STAT: tbio_posix_on_stat(&r->u.p, a, b); break;
            case M_MMAP: tbio_posix_on_mmap(&r->u.p, a, b); break;
            case M_DUP: tbio_posix_on_dup(&r->u.p, a, b); break;
            default: break;
            }
            tbio_rec_unlock(r);
        }
        tbio_trace_add(c, t1, op, id, fd, off, req, ok ? ret : -1, ok ? 0 : err, 0, 0);
    }
    tbio_call_leave(c);
}

#define FD_META(OP, KIND, FD, OFF, REQ, RTYPE, CALL, OKEXPR)                    \
    do {                                                                        \
        if (IDLE()) return CALL;                                                \
        tbio_call c;                                                            \
        if (!tbio_call_pre(&c)) return CALL;                                    \
        RTYPE ret = CALL;                                                       \
        int err_ = errno;                                                       \
        meta_done(&c, OP, KIND, NAMES_FD(FD), FD, OFF, REQ, (int64_t)ret, (OKEXPR), err_); \
        errno = err_;                                                           \
        return ret;                                                             \
    } while (0)

static off_t tbio_w_lseek(int fd, off_t off, int whence) {
    FD_META(TBIO_OP_lseek, M_SEEK, fd, off, -1, off_t, real_lseek(fd, off, whence), ret >= 0);
}
static off64_t tbio_w_lseek64(int fd, off64_t off, int whence) {
    FD_META(TBIO_OP_lseek64, M_SEEK, fd, off, -1, off64_t, real_lseek64(fd, off, whence), ret >= 0);
}
static int tbio_w_fsync(int fd) { FD_META(TBIO_OP_fsync, M_FSYNC, fd, -1, -1, int, real_fsync(fd), ret == 0); }
static int tbio_w_fdatasync(int fd) {
    FD_META(TBIO_OP_fdatasync, M_FDSYNC, fd, -1, -1, int, real_fdatasync(fd), ret == 0);
}
static int tbio_w_fstat(int fd, struct stat *st) {
    FD_META(TBIO_OP_fstat, M_STAT, fd, -1, -1, int, real_fstat(fd, st), ret == 0);
}
static int tbio_w_fstat64(int fd, struct stat64 *st) {
    FD_META(TBIO_OP_fstat64, M_STAT, fd, -1, -1, int, real_fstat64(fd, st), ret == 0);
}
static int tbio_w___fxstat(int ver, int fd, struct stat *st) {
    FD_META(TBIO_OP___fxstat, M_STAT, fd, -1, -1, int, real___fxstat(ver, fd, st), ret == 0);
}
static int tbio_w___fxstat64(int ver, int fd, struct stat64 *st) {
    FD_META(TBIO_OP___fxstat64, M_STAT, fd, -1, -1, int, real___fxstat64(ver, fd, st), ret == 0);
}

static void *mmap_common(int op, void *addr, size_t len, int prot, int flags, int fd, int64_t off,
                         void *(*call)(void *, size_t, int, int, int, off64_t)) {
    if (IDLE() || fd < 0 || (flags & MAP_ANONYMOUS)) return call(addr, len, prot, flags, fd, off);
    tbio_call c;
    if (!tbio_call_pre(&c)) return call(addr, len, prot, flags, fd, off);
    void *ret = call(addr, len, prot, flags, fd, off);
    int err = errno;
    meta_done(&c, op, M_MMAP, NAMES_FD(fd), fd, off, (int64_t)len, ret == MAP_FAILED ? -1 : (int64_t)len,
              ret != MAP_FAILED, err);
    errno = err;
    return ret;
}
static void *call_mmap(void *a, size_t l, int p, int f, int fd, off64_t o) { return real_mmap(a, l, p, f, fd, o); }
static void *call_mmap64(void *a, size_t l, int p, int f, int fd, off64_t o) { return real_mmap64(a, l, p, f, fd, o); }
static void *tbio_w_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    return mmap_common(TBIO_OP_mmap, addr, len, prot, flags, fd, off, call_mmap);
}
static void *tbio_w_mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off) {
    return mmap_common(TBIO_OP_mmap64, addr, len, prot, flags, fd, off, call_mmap64);
}

static int tbio_w_close(int fd) {
    /* forget the mapping before the descriptor number can be reused */
    if (IDLE()) {
        tbio_fd_forget(fd);
        return real_close(fd);
    }
    tbio_call c;
    if (!tbio_call_pre(&c)) {
        tbio_fd_forget(fd);
        return real_close(fd);
    }
    uint32_t id = peek_fd(&c, fd);
    tbio_fd_forget(fd);
    int ret = real_close(fd);
    int err = errno;
    meta_done(&c, TBIO_OP_close, M_CLOSE, NAMES_ID(id), fd, -1, -1, ret, ret == 0, err);
    errno = err;
    return ret;
}

static int tbio_w_close_range(unsigned int first, unsigned int last, int flags) {
    int ret = real_close_range(first, last, flags);
    int err = errno;
    if (ret == 0 && !(flags & 4 /* CLOSE_RANGE_CLOEXEC */)) tbio_fd_forget_range(first, last);
    errno = err;
    return ret;
}

/* dup family: the new descriptor names the same file; counted as open + dup. */
static int dup_common(int op, int oldfd, int newfd_wanted, int ret, int err, tbio_call *c, int rec) {
    (void)newfd_wanted;
    if (rec) meta_done(c, op, M_DUP, NAMES_FD(oldfd), ret >= 0 ? ret : oldfd, -1, -1, ret, ret >= 0, err);
    else if (ret >= 0) tbio_fd_forget(ret);   /* idle: a recording names it when it first touches it */
    errno = err;
    return ret;
}
#define DUP_CALL(OP, OLD, NEW, CALL)                  \
    do {                                              \
        tbio_call c;                                  \
        int rec = !IDLE() && tbio_call_pre(&c);       \
        int ret = CALL;                               \
        return dup_common(OP, OLD, NEW, ret, errno, &c, rec); \
    } while (0)
static int tbio_w_dup(int fd) { DUP_CALL(TBIO_OP_dup, fd, -1, real_dup(fd)); }
static int tbio_w_dup2(int fd, int fd2) { DUP_CALL(TBIO_OP_dup2, fd, fd2, real_dup2(fd, fd2)); }
static int tbio_w_dup3(int fd, int fd2, int flags) { DUP_CALL(TBIO_OP_dup3, fd, fd2, real_dup3(fd, fd2, flags)); }

static int fcntl_common(int op, int (*call)(int, int, ...), int fd, int cmd, void *arg) {
    if (cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC) return call(fd, cmd, arg);
    DUP_CALL(op, fd, -1, call(fd, cmd, arg));
}
static int tbio_w_fcntl(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl_common(TBIO_OP_fcntl, real_fcntl, fd, cmd, arg);
}
static int tbio_w_fcntl64(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl_common(TBIO_OP_fcntl64, real_fcntl64, fd, cmd, arg);
}

/* ---------------- path calls: open family, stat family, rename ---------------- */
static int open_done(int op, int dirfd, const char *path, int mode, int ret, int err, tbio_call *c,
                     int rec) {
    uint64_t t1;
    if (!rec || !tbio_call_post(c, &t1)) {
        /* idle: nothing is learned now; a recording names the fd when it first touches it */
        if (ret >= 0) tbio_fd_forget(ret);
        errno = err;
        return ret;
    }
    uint32_t id = TBIO_NO_FILE;
    /* EFAULT: the kernel could not read the path, and neither may we */
    if (ret >= 0 || err != EFAULT) id = tbio_path_id(dirfd, path, TBIO_POSIX);
    if (ret >= 0) {
        tbio_fd_set_posix(ret, id);   /* counters go to the path it was opened with */
        if (tbio_tracked(id)) tbio_file_learn_blksize(id, ret);
    }
    if (id == TBIO_OVER_FILE) TBIO_EACH_SESSION(c) tbio_count_over(c, 0, 0);
    if (tbio_tracked(id)) TBIO_EACH_SESSION(c) {
        tbio_rec *r = ret >= 0 ? tbio_rec_get(c->s, id) : NULL;
        if (r) {
            tbio_rec_lock(r);
            tbio_posix_on_open(&r->u.p, mode, tbio_sec(c->s, c->t0), tbio_sec(c->s, t1));
            r->offset_known = 1;
            tbio_rec_unlock(r);
        }
        tbio_trace_add(c, t1, op, id, ret >= 0 ? ret : -1, -1, -1, ret >= 0 ? ret : -1, ret >= 0 ? 0 : err, 0, 0);
    }
    tbio_call_leave(c);
    errno = err;
    return ret;
}

#define OPEN_CALL(OP, DIRFD, PATH, MODE, CALL)             \
    do {                                                   \
        tbio_call c;                                       \
        int rec = !IDLE() && tbio_call_pre(&c);            \
        int ret = CALL;                                    \
        return open_done(OP, DIRFD, PATH, MODE, ret, errno, &c, rec); \
    } while (0)

static int open_mode(int flags, va_list ap) {
    if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) return va_arg(ap, int);
    return 0;
}
static int tbio_w_open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    int mode = open_mode(flags, ap);
    va_end(ap);
    OPEN_CALL(TBIO_OP_open, AT_FDCWD, path, mode, real_open(path, flags, mode));
}
static int tbio_w_open64(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    int mode = open_mode(flags, ap);
    va_end(ap);
    OPEN_CALL(TBIO_OP_open64, AT_FDCWD, path, mode, real_open64(path, flags, mode));
}
static int tbio_w_openat(int dirfd, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    int mode = open_mode(flags, ap);
    va_end(ap);
    OPEN_CALL(TBIO_OP_openat, dirfd, path, mode, real_openat(dirfd, path, flags, mode));
}
static int tbio_w_openat64(int dirfd, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    int mode = open_mode(flags, ap);
    va_end(ap);
    OPEN_CALL(TBIO_OP_openat64, dirfd, path, mode, real_openat64(dirfd, path, flags, mode));
}
static int tbio_w_creat(const char *path, mode_t mode) {
    OPEN_CALL(TBIO_OP_creat, AT_FDCWD, path, (int)mode, real_creat(path, mode));
}
static int tbio_w_creat64(const char *path, mode_t mode) {
    OPEN_CALL(TBIO_OP_creat64, AT_FDCWD, path, (int)mode, real_creat64(path, mode));
}
static int tbio_w___open_2(const char *path, int flags) {
    OPEN_CALL(TBIO_OP___open_2, AT_FDCWD, path, 0, real___open_2(path, flags));
}
static int tbio_w___open64_2(const char *path, int flags) {
    OPEN_CALL(TBIO_OP___open64_2, AT_FDCWD, path, 0, real___open64_2(path, flags));
}
static int tbio_w___openat_2(int dirfd, const char *path, int flags) {
    OPEN_CALL(TBIO_OP___openat_2, dirfd, path, 0, real___openat_2(dirfd, path, flags));
}
static int tbio_w___openat64_2(int dirfd, const char *path, int flags) {
    OPEN_CALL(TBIO_OP___openat64_2, dirfd, path, 0, real___openat64_2(dirfd, path, flags));
}

/* stat by path (dirfd AT_FDCWD unless *at). */
#define PATH_STAT(OP, DIRFD, PATH, CALL)                                         \
    do {                                                                         \
        if (IDLE()) return CALL;                                                 \
        tbio_call c;                                                             \
        if (!tbio_call_pre(&c)) return CALL;                                     \
        int ret = CALL;                                                          \
        int err_ = errno;                                                        \
        names nm_ = ret != 0 && err_ == EFAULT ? NAMES_ID(TBIO_NO_FILE)          \
                                               : NAMES_PATH(DIRFD, PATH);        \
        meta_done(&c, OP, M_STAT, nm_, -1, -1, -1, ret, ret == 0, err_);         \
        errno = err_;                                                            \
        return ret;                                                              \
    } while (0)

static int tbio_w_stat(const char *p, struct stat *st) { PATH_STAT(TBIO_OP_stat, AT_FDCWD, p, real_stat(p, st)); }
static int tbio_w_stat64(const char *p, struct stat64 *st) {
    PATH_STAT(TBIO_OP_stat64, AT_FDCWD, p, real_stat64(p, st));
}
static int tbio_w_lstat(const char *p, struct stat *st) { PATH_STAT(TBIO_OP_lstat, AT_FDCWD, p, real_lstat(p, st)); }
static int tbio_w_lstat64(const char *p, struct stat64 *st) {
    PATH_STAT(TBIO_OP_lstat64, AT_FDCWD, p, real_lstat64(p, st));
}
static int tbio_w___xstat(int v, const char *p, struct stat *st) {
    PATH_STAT(TBIO_OP___xstat, AT_FDCWD, p, real___xstat(v, p, st));
}
static int tbio_w___xstat64(int v, const char *p, struct stat64 *st) {
    PATH_STAT(TBIO_OP___xstat64, AT_FDCWD, p, real___xstat64(v, p, st));
}
static int tbio_w___lxstat(int v, const char *p, struct stat *st) {
    PATH_STAT(TBIO_OP___lxstat, AT_FDCWD, p, real___lxstat(v, p, st));
}
static int tbio_w___lxstat64(int v, const char *p, struct stat64 *st) {
    PATH_STAT(TBIO_OP___lxstat64, AT_FDCWD, p, real___lxstat64(v, p, st));
}

/* *at variants: an empty path with AT_EMPTY_PATH means the descriptor itself. */
/* The path is looked at only after the call, and not at all when the
 * kernel could not read it (EFAULT). */
#define AT_STAT(OP, DIRFD, PATH, FLAGS, CALL)                                    \
    do {                                                                         \
        if (IDLE()) return CALL;                                                 \
        tbio_call c;                                                             \
        if (!tbio_call_pre(&c)) return CALL;                                     \
        int ret = CALL;                                                          \
        int err_ = errno;                                                        \
        names nm_ = NAMES_ID(TBIO_NO_FILE);                                      \
        int fd_ = -1;                                                            \
        if (!(ret != 0 && err_ == EFAULT)) {                                     \
            if ((PATH) && (PATH)[0] == 0 && ((FLAGS) & AT_EMPTY_PATH)) {         \
                nm_ = NAMES_FD(DIRFD);                                           \
                fd_ = DIRFD;                                                     \
            } else {                                                             \
                nm_ = NAMES_PATH(DIRFD, PATH);                                   \
            }                                                                    \
        }                                                                        \
        meta_done(&c, OP, M_STAT, nm_, fd_, -1, -1, ret, ret == 0, err_);        \
        errno = err_;                                                            \
        return ret;                                                              \
    } while (0)
static int tbio_w_fstatat(int d, const char *p, struct stat *st, int fl) {
    AT_STAT(TBIO_OP_fstatat, d, p, fl, real_fstatat(d, p, st, fl));
}
static int tbio_w_fstatat64(int d, const char *p, struct stat64 *st, int fl) {
    AT_STAT(TBIO_OP_fstatat64, d, p, fl, real_fstatat64(d, p, st, fl));
}
static int tbio_w___fxstatat(int v, int d, const char *p, struct stat *st, int fl) {
    AT_STAT(TBIO_OP___fxstatat, d, p, fl, real___fxstatat(v, d, p, st, fl));
}
static int tbio_w___fxstatat64(int v, int d, const char *p, struct stat64 *st, int fl) {
    AT_STAT(TBIO_OP___fxstatat64, d, p, fl, real___fxstatat64(v, d, p, st, fl));
}
static int tbio_w_statx(int d, const char *p, int fl, unsigned int mask, struct statx *st) {
    AT_STAT(TBIO_OP_statx, d, p, fl, real_statx(d, p, fl, mask, st));
}

static int tbio_w_rename(const char *from, const char *to) {
    if (IDLE()) return real_rename(from, to);
    tbio_call c;
    if (!tbio_call_pre(&c)) return real_rename(from, to);
    int ret = real_rename(from, to);
    int err = errno;
    int unreadable = ret != 0 && err == EFAULT;   /* a path the kernel could not read */
    uint64_t t1;
    if (!tbio_call_post(&c, &t1)) {
        errno = err;
        return ret;
    }
    uint32_t src = unreadable ? TBIO_NO_FILE : tbio_path_id(AT_FDCWD, from, TBIO_POSIX);
    uint32_t dst = unreadable ? TBIO_NO_FILE : tbio_path_id(AT_FDCWD, to, TBIO_POSIX);
    if (src == TBIO_OVER_FILE || dst == TBIO_OVER_FILE) TBIO_EACH_SESSION(&c) tbio_count_over(&c, 0, 0);
    if (!tbio_tracked(src)) src = TBIO_NO_FILE;
    if (!tbio_tracked(dst)) dst = TBIO_NO_FILE;
    TBIO_EACH_SESSION(&c) {
        if (ret == 0 && src != TBIO_NO_FILE && dst != TBIO_NO_FILE) {
            tbio_rec *rs = tbio_rec_get(c.s, src), *rd = tbio_rec_get(c.s, dst);
            const tbio_file *fs = tbio_file_get(src);
            if (rs && rd && fs) {
                /* lock in id order so two renames never deadlock */
                tbio_rec *a = src < dst ? rs : rd, *b = src < dst ? rd : rs;
                tbio_rec_lock(a);
                if (b != a) tbio_rec_lock(b);
                tbio_posix_on_rename(&rs->u.p, &rd->u.p, (int64_t)fs->hash, tbio_sec(c.s, c.t0),
                                     tbio_sec(c.s, t1));
                if (b != a) tbio_rec_unlock(b);
                tbio_rec_unlock(a);
            }
        }
        if (src != TBIO_NO_FILE || dst != TBIO_NO_FILE)
            tbio_trace_add(&c, t1, TBIO_OP_rename, src != TBIO_NO_FILE ? src : dst, -1, -1, -1, ret,
                           ret == 0 ? 0 : err, 0, 0);
    }
    tbio_call_leave(&c);
    errno = err;
    return ret;
}

/* copy_file_range / sendfile: a read of `in` and a write of `out` in one call */
static void copy_done(tbio_call *c, int op, int in, int64_t inoff, int out, int64_t outoff,
                      int64_t req, int64_t ret, int err) {
    uint64_t t1;
    if (!tbio_call_post(c, &t1)) return;
    uint32_t ids[2] = {tbio_fd_posix(in), tbio_fd_posix(out)};
    int fds[2] = {in, out};
    int64_t offs[2] = {inoff, outoff};
    TBIO_EACH_SESSION(c) for (int k = 0; k < 2; k++) {
        if (ids[k] == TBIO_OVER_FILE) tbio_count_over(c, k == 0 ? ret : 0, k == 1 ? ret : 0);
        if (!tbio_tracked(ids[k])) continue;
        tbio_rec *r = ret >= 0 ? tbio_rec_get(c->s, ids[k]) : NULL;
        int64_t used = offs[k];
        if (r) {
            tbio_rec_lock(r);
            if (used < 0) {
                if (!r->offset_known) {
                    int64_t cur = tbio_raw_lseek(fds[k], 0, SEEK_CUR);
                    r->u.p.offset = cur >= ret ? cur - ret : 0;
                }
                used = r->u.p.offset;
            }
            r->offset_known = 1;
            double a = tbio_sec(c->s, c->t0), b = tbio_sec(c->s, t1);
            if (k == 0) tbio_posix_on_read(&r->u.p, used, ret, 1, a, b);
            else tbio_posix_on_write(&r->u.p, used, ret, 1, a, b);
            tbio_rec_unlock(r);
        }
        tbio_trace_add(c, t1, op, ids[k], fds[k], used, req, ret >= 0 ? ret : -1, ret >= 0 ? 0 : err,
                       r && k == 0 ? ret : 0, r && k == 1 ? ret : 0);
    }
    tbio_call_leave(c);
}
static ssize_t tbio_w_copy_file_range(int in, off64_t *inoff, int out, off64_t *outoff, size_t n,
                                      unsigned int flags) {
    if (IDLE()) return real_copy_file_range(in, inoff, out, outoff, n, flags);
    tbio_call c;
    if (!tbio_call_pre(&c)) return real_copy_file_range(in, inoff, out, outoff, n, flags);
    ssize_t ret = real_copy_file_range(in, inoff, out, outoff, n, flags);
    int err = errno;
    /* the offsets are the caller's pointers: read them only once the kernel
     * has used them (a success moved each by ret) */
    int64_t io = inoff && ret >= 0 ? *inoff - ret : -1, oo = outoff && ret >= 0 ? *outoff - ret : -1;
    copy_done(&c, TBIO_OP_copy_file_range, in, io, out, oo, (int64_t)n, ret, err);
    errno = err;
    return ret;
}
static ssize_t tbio_w_sendfile(int out, int in, off_t *off, size_t n) {
    if (IDLE()) return real_sendfile(out, in, off, n);
    tbio_call c;
    if (!tbio_call_pre(&c)) return real_sendfile(out, in, off, n);
    ssize_t ret = real_sendfile(out, in, off, n);
    int err = errno;
    int64_t io = off && ret >= 0 ? *off - ret : -1;   /* read only once the kernel used it */
    copy_done(&c, TBIO_OP_sendfile, in, io, out, -1, (int64_t)n, ret, err);
    errno = err;
    return ret;
}
static ssize_t tbio_w_sendfile64(int out, int in, off64_t *off, size_t n) {
    if (IDLE()) return real_sendfile64(out, in, off, n);
    tbio_call c;
    if (!tbio_call_pre(&c)) return real_sendfile64(out, in, off, n);
    ssize_t ret = real_sendfile64(out, in, off, n);
    int err = errno;
    int64_t io = off && ret >= 0 ? *off - ret : -1;   /* read only once the kernel used it */
    copy_done(&c, TBIO_OP_sendfile64, in, io, out, -1, (int64_t)n, ret, err);
    errno = err;
    return ret;
}

/* ---------------- STDIO ---------------- */
enum { S_READ, S_WRITE, S_SEEK, S_FLUSH, S_CLOSE, S_TELL };

/* After a STDIO call: bytes >= 0 counted (when ok), offset = stream position for seeks.
 * A read or write that moved nothing without an error (fread/fgets/fgetc at
 * end of file, fwrite of 0 items) did not fail: Darshan does not count it,
 * but its trace row says 0 bytes and no errno.  It failed only when the
 * stream's error flag is set and the call set errno (the caller zeroes it). */
#define FP_LOOKUP 0xfffffffdu   /* stdio_done's id: the stream's, looked up once recorded */
/* The stream's position, never waiting for its lock (another thread blocked
 * in fread on a pipe holds it for as long as the pipe stays empty, and the
 * caller is inside the shim).  POS_BUSY: the lock was taken. */
enum { POS_UNREAD = -3, POS_BUSY = -2 };
static long stream_pos(FILE *fp) {
    if (!fp) return -1;
    if (ftrylockfile(fp) != 0) return POS_BUSY;
    long pos = real_ftell(fp);   /* the lock is ours now, and recursive */
    funlockfile(fp);
    return pos;
}

static void stdio_done(tbio_call *c, int op, int kind, uint32_t id, int fd, int64_t req, int64_t bytes,
                       int ok, int err, FILE *fp) {
    uint64_t t1;
    if (!tbio_call_post(c, &t1)) return;
    if (id == FP_LOOKUP) {
        id = tbio_fp_stdio(fp);
        fd = tbio_tracked(id) ? fileno(fp) : -1;
    }
    if (id == TBIO_OVER_FILE && ok) TBIO_EACH_SESSION(c)
        tbio_count_over(c, kind == S_READ ? bytes : 0, kind == S_WRITE ? bytes : 0);
    long pos = POS_UNREAD;
    if (tbio_tracked(id)) TBIO_EACH_SESSION(c) {
        int data = kind == S_READ || kind == S_WRITE;
        /* ferror_unlocked: ferror would wait for the stream's lock */
        int failed = !ok && (!data || (err != 0 && fp && ferror_unlocked(fp)));
        tbio_rec *r = !failed ? tbio_rec_get(c->s, id) : NULL;
        int64_t off = -1;
        if (r && data && pos == POS_UNREAD) {
            /* first sight of a stream opened before this capture: its position,
             * read outside the record lock */
            tbio_rec_lock(r);
            int need = !r->offset_known;
            tbio_rec_unlock(r);
            if (need) pos = stream_pos(fp);
        }
        if (r) {
            double a = tbio_sec(c->s, c->t0), b = tbio_sec(c->s, t1);
            tbio_rec_lock(r);
            if (data) {
                if (!r->offset_known && pos != POS_BUSY && pos != POS_UNREAD) {
                    int64_t moved = ok ? bytes : 0;
                    r->u.s.offset = pos >= moved ? pos - moved : 0;
                    r->offset_known = 1;
                }
                /* lock busy: offset unknown for now, a later call reads it */
                off = r->offset_known ? r->u.s.offset : -1;
            }
            switch (ok ? kind : -1) {
            case S_READ: tbio_stdio_on_read(&r->u.s, bytes, a, b); break;
            case S_WRITE: tbio_stdio_on_write(&r->u.s, bytes, a, b); break;
            case S_SEEK: off = bytes; tbio_stdio_on_seek(&r->u.s, bytes, a, b); r->offset_known = 1; break;
            case S_FLUSH: tbio_stdio_on_flush(&r->u.s, a, b); break;
            case S_CLOSE: tbio_stdio_on_close(&r->u.s, a, b); break;
            default: break;
            }
            tbio_rec_unlock(r);
        }
        tbio_trace_add(c, t1, op, id, fd, off, req, failed ? -1 : ok ? bytes : 0, failed ? err : 0,
                       r && ok && kind == S_READ ? bytes : 0, r && ok && kind == S_WRITE ? bytes : 0);
    }
    tbio_call_leave(c);
}

/* run CALL; BYTES and OK are expressions over `ret` */
#define STDIO_CALL(OP, KIND, FP, REQ, RTYPE, CALL, BYTES, OK)                          \
    do {                                                                               \
        if (IDLE()) return CALL;                                                       \
        tbio_call c;                                                                   \
        if (!tbio_call_pre(&c)) return CALL;                                           \
        int saved_ = errno;                                                            \
        errno = 0; /* so that err_ is this call's errno, not a stale one */            \
        RTYPE ret = CALL;                                                              \
        int err_ = errno;                                                              \
        stdio_done(&c, OP, KIND, FP_LOOKUP, -1, REQ, (int64_t)(BYTES), (OK), err_, FP); \
        errno = err_ ? err_ : saved_;                                                  \
        return ret;                                                                    \
    } while (0)

static size_t tbio_w_fread(void *buf, size_t size, size_t n, FILE *fp) {
    STDIO_CALL(TBIO_OP_fread, S_READ, fp, (int64_t)(size * n), size_t, real_fread(buf, size, n, fp),
               size * ret, ret > 0);
}
static size_t tbio_w___fread_chk(void *buf, size_t buflen, size_t size, size_t n, FILE *fp) {
    STDIO_CALL(TBIO_OP___fread_chk, S_READ, fp, (int64_t)(size * n), size_t,
               real___fread_chk(buf, buflen, size, n, fp), size * ret, ret > 0);
}
static size_t tbio_w_fread_unlocked(void *buf, size_t size, size_t n, FILE *fp) {
    STDIO_CALL(TBIO_OP_fread_unlocked, S_READ, fp, (int64_t)(size * n), size_t,
               real_fread_unlocked(buf, size, n, fp), size * ret, ret > 0);
}
static size_t tbio_w_fwrite(const void *buf, size_t size, size_t n, FILE *fp) {
    STDIO_CALL(TBIO_OP_fwrite, S_WRITE, fp, (int64_t)(size * n), size_t, real_fwrite(buf, size, n, fp),
               size * ret, ret > 0);
}
static size_t tbio_w_fwrite_unlocked(const void *buf, size_t size, size_t n, FILE *fp) {
    STDIO_CALL(TBIO_OP_fwrite_unlocked, S_WRITE, fp, (int64_t)(size * n), size_t,
               real_fwrite_unlocked(buf, size, n, fp), size * ret, ret > 0);
}
static char *tbio_w_fgets(char *s, int n, FILE *fp) {
    STDIO_CALL(TBIO_OP_fgets, S_READ, fp, n, char *, real_fgets(s, n, fp), ret ? strlen(ret) : 0, ret != NULL);
}
static char *tbio_w___fgets_chk(char *s, size_t size, int n, FILE *fp) {
    STDIO_CALL(TBIO_OP___fgets_chk, S_READ, fp, n, char *, real___fgets_chk(s, size, n, fp),
               ret ? strlen(ret) : 0, ret != NULL);
}
static int tbio_w_fputs(const char *s, FILE *fp) {
    STDIO_CALL(TBIO_OP_fputs, S_WRITE, fp, (int64_t)strlen(s), int, real_fputs(s, fp), strlen(s),
               ret != EOF && ret > 0);
}
static int tbio_w_fputc(int ch, FILE *fp) {
    STDIO_CALL(TBIO_OP_fputc, S_WRITE, fp, 1, int, real_fputc(ch, fp), 1, ret != EOF);
}
static int tbio_w_putc(int ch, FILE *fp) {
    STDIO_CALL(TBIO_OP_putc, S_WRITE, fp, 1, int, real_putc(ch, fp), 1, ret != EOF);
}
static int tbio_w__IO_putc(int ch, FILE *fp) {
    STDIO_CALL(TBIO_OP__IO_putc, S_WRITE, fp, 1, int, real__IO_putc(ch, fp), 1, ret != EOF);
}
static int tbio_w_fgetc(FILE *fp) { STDIO_CALL(TBIO_OP_fgetc, S_READ, fp, 1, int, real_fgetc(fp), 1, ret != EOF); }
static int tbio_w_getc(FILE *fp) { STDIO_CALL(TBIO_OP_getc, S_READ, fp, 1, int, real_getc(fp), 1, ret != EOF); }
static int tbio_w__IO_getc(FILE *fp) {
    STDIO_CALL(TBIO_OP__IO_getc, S_READ, fp, 1, int, real__IO_getc(fp), 1, ret != EOF);
}

/* formatted I/O: bytes = the stream position moved (as Darshan measures it) */
static int fmt_io(int op, int kind, FILE *fp, int (*call)(FILE *, const char *, va_list), int flag,
                  int (*call_chk)(FILE *, int, const char *, va_list), const char *fmt, va_list ap) {
#define FMT_REAL() (call_chk ? call_chk(fp, flag, fmt, ap) : call(fp, fmt, ap))
    if (IDLE()) return FMT_REAL();
    tbio_call c;
    if (!tbio_call_pre(&c)) return FMT_REAL();
    long before = real_ftell(fp);
    int ret = FMT_REAL();
    int err = errno;
    long after = real_ftell(fp);
    int ok = kind == S_READ ? ret != 0 : ret > 0;
    int64_t bytes = (before >= 0 && after >= before) ? after - before : (ret > 0 ? ret : 0);
    stdio_done(&c, op, kind, FP_LOOKUP, -1, -1, bytes, ok, err, fp);
    errno = err;
    return ret;
#undef FMT_REAL
}
static int tbio_w_vfprintf(FILE *fp, const char *fmt, va_list ap) {
    return fmt_io(TBIO_OP_vfprintf, S_WRITE, fp, real_vfprintf, 0, NULL, fmt, ap);
}
static int tbio_w_fprintf(FILE *fp, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = fmt_io(TBIO_OP_fprintf, S_WRITE, fp, real_vfprintf, 0, NULL, fmt, ap);
    va_end(ap);
    return r;
}
static int tbio_w___vfprintf_chk(FILE *fp, int flag, const char *fmt, va_list ap) {
    return fmt_io(TBIO_OP___vfprintf_chk, S_WRITE, fp, NULL, flag, real___vfprintf_chk, fmt, ap);
}
static int tbio_w___fprintf_chk(FILE *fp, int flag, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = fmt_io(TBIO_OP___fprintf_chk, S_WRITE, fp, NULL, flag, real___vfprintf_chk, fmt, ap);
    va_end(ap);
    return r;
}
static int tbio_w_vfscanf(FILE *fp, const char *fmt, va_list ap) {
    return fmt_io(TBIO_OP_vfscanf, S_READ, fp, real_vfscanf, 0, NULL, fmt, ap);
}
static int tbio_w___isoc99_vfscanf(FILE *fp, const char *fmt, va_list ap) {
    return fmt_io(TBIO_OP___isoc99_vfscanf, S_READ, fp, real___isoc99_vfscanf, 0, NULL, fmt, ap);
}
static int tbio_w_fscanf(FILE *fp, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = fmt_io(TBIO_OP_fscanf, S_READ, fp, real_vfscanf, 0, NULL, fmt, ap);
    va_end(ap);
    return r;
}
static int tbio_w___isoc99_fscanf(FILE *fp, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = fmt_io(TBIO_OP___isoc99_fscanf, S_READ, fp, real___isoc99_vfscanf, 0, NULL, fmt, ap);
    va_end(ap);
    return r;
}

/* seeks: the new position comes from ftell after the call */
#define STDIO_SEEK(OP, FP, RTYPE, CALL, OK)                                          \
    STDIO_CALL(OP, S_SEEK, FP, -1, RTYPE, CALL, (OK) ? real_ftell(FP) : 0, (OK))
static int tbio_w_fseek(FILE *fp, long off, int whence) {
    STDIO_SEEK(TBIO_OP_fseek, fp, int, real_fseek(fp, off, whence), ret >= 0);
}
static int tbio_w_fseeko(FILE *fp, off_t off, int whence) {
    STDIO_SEEK(TBIO_OP_fseeko, fp, int, real_fseeko(fp, off, whence), ret >= 0);
}
static int tbio_w_fseeko64(FILE *fp, off64_t off, int whence) {
    STDIO_SEEK(TBIO_OP_fseeko64, fp, int, real_fseeko64(fp, off, whence), ret >= 0);
}
static int tbio_w_fsetpos(FILE *fp, const fpos_t *pos) {
    STDIO_SEEK(TBIO_OP_fsetpos, fp, int, real_fsetpos(fp, pos), ret >= 0);
}
static int tbio_w_fsetpos64(FILE *fp, const fpos64_t *pos) {
    STDIO_SEEK(TBIO_OP_fsetpos64, fp, int, real_fsetpos64(fp, pos), ret >= 0);
}
static int rewind_call(FILE *fp) {
    real_rewind(fp);
    return 0;
}
static void tbio_w_rewind(FILE *fp) {
    if (IDLE()) {
        real_rewind(fp);
        return;
    }
    tbio_call c;
    if (!tbio_call_pre(&c)) {
        real_rewind(fp);
        return;
    }
    int ret = rewind_call(fp);
    int err = errno;
    stdio_done(&c, TBIO_OP_rewind, S_SEEK, FP_LOOKUP, -1, -1, 0, ret == 0, err, fp);
    errno = err;
}
static long tbio_w_ftell(FILE *fp) {
    /* traced, not counted: Darshan counts no seek for ftell */
    STDIO_CALL(TBIO_OP_ftell, S_TELL, fp, -1, long, real_ftell(fp), ret, ret >= 0);
}
static int tbio_w_fflush(FILE *fp) {
    if (!fp) return real_fflush(fp);
    STDIO_CALL(TBIO_OP_fflush, S_FLUSH, fp, -1, int, real_fflush(fp), 0, ret == 0);
}

/* opens: fopen / fopen64 / freopen / fdopen */
static FILE *stdio_open_done(int op, const char *path, int fd_for_fdopen, FILE *ret, int err, tbio_call *c,
                             int rec) {
    uint64_t t1;
    if (!rec || !tbio_call_post(c, &t1)) {
        /* idle: forget what the number meant; a recording names the stream when it first touches it */
        if (ret && path) tbio_fd_forget(fileno(ret));
        else if (ret) tbio_fd_forget_stdio(fileno(ret));
        errno = err;
        return ret;
    }
    uint32_t id = TBIO_NO_FILE;
    if (ret || !(path && err == EFAULT)) {
        if (path) id = tbio_path_id(AT_FDCWD, path, TBIO_STDIO);
        else {
            uint32_t pid = tbio_fd_posix(fd_for_fdopen);
            const tbio_file *pf = tbio_tracked(pid) ? tbio_file_get(pid) : NULL;
            if (pf) id = tbio_file_intern(pf->path, pf->len, TBIO_STDIO);
            else if (pid == TBIO_OVER_FILE) id = TBIO_OVER_FILE;
        }
    }
    if (ret) {
        if (path) tbio_fd_forget(fileno(ret));   /* libc opened the fd where we cannot see it */
        tbio_fp_set(ret, id);
    }
    if (id == TBIO_OVER_FILE) TBIO_EACH_SESSION(c) tbio_count_over(c, 0, 0);
    if (tbio_tracked(id)) TBIO_EACH_SESSION(c) {
        tbio_rec *r = ret ? tbio_rec_get(c->s, id) : NULL;
        if (r) {
            tbio_rec_lock(r);
            tbio_stdio_on_open(&r->u.s, path == NULL, tbio_sec(c->s, c->t0), tbio_sec(c->s, t1));
            r->offset_known = 1;
            tbio_rec_unlock(r);
        }
        tbio_trace_add(c, t1, op, id, ret ? fileno(ret) : -1, -1, -1, ret ? 0 : -1, ret ? 0 : err, 0, 0);
    }
    tbio_call_leave(c);
    errno = err;
    return ret;
}
#define FOPEN_CALL(OP, PATH, FD, CALL)                         \
    do {                                                       \
        tbio_call c;                                           \
        int rec = !IDLE() && tbio_call_pre(&c);                \
        FILE *ret = CALL;                                      \
        return stdio_open_done(OP, PATH, FD, ret, errno, &c, rec); \
    } while (0)
static FILE *tbio_w_fopen(const char *path, const char *mode) {
    FOPEN_CALL(TBIO_OP_fopen, path, -1, real_fopen(path, mode));
}
static FILE *tbio_w_fopen64(const char *path, const char *mode) {
    FOPEN_CALL(TBIO_OP_fopen64, path, -1, real_fopen64(path, mode));
}
static FILE *tbio_w_fdopen(int fd, const char *mode) { FOPEN_CALL(TBIO_OP_fdopen, NULL, fd, real_fdopen(fd, mode)); }
static FILE *tbio_w_freopen(const char *path, const char *mode, FILE *fp) {
    tbio_fp_forget(fp);
    FOPEN_CALL(TBIO_OP_freopen, path, -1, real_freopen(path, mode, fp));
}
static FILE *tbio_w_freopen64(const char *path, const char *mode, FILE *fp) {
    tbio_fp_forget(fp);
    FOPEN_CALL(TBIO_OP_freopen64, path, -1, real_freopen64(path, mode, fp));
}

static int tbio_w_fclose(FILE *fp) {
    if (IDLE()) {
        tbio_fp_forget(fp);
        return real_fclose(fp);
    }
    tbio_call c;
    if (!tbio_call_pre(&c)) {
        tbio_fp_forget(fp);
        return real_fclose(fp);
    }
    /* the stream's id before the call that closes it, named inside the shim's accounting */
    uint32_t id = fp && tbio_enter_and_load(c.th) ? tbio_fp_stdio(fp) : TBIO_NO_FILE;
    if (fp) {
        tbio_call_leave(&c);
        c.t0 = tbio_ticks();
    }
    int fd = fp ? fileno(fp) : -1;
    tbio_fp_forget(fp);
    int ret = real_fclose(fp);
    int err = errno;
    stdio_done(&c, TBIO_OP_fclose, S_CLOSE, id, fd, -1, 0, ret == 0, err, NULL);
    errno = err;
    return ret;
}

/* ---------------- loading ---------------- */
static void *tbio_w_dlopen(const char *file, int mode) {
    const void *caller = __builtin_return_address(0);
    void *h = tbio_dlopen_like_caller(file, mode, caller, real_dlopen);
    if (h && atomic_load(&tbio_g_enabled)) {
        int err = errno;
        tbio_patch_all();
        errno = err;
    }
    return h;
}

static int tbio_w_dlclose(void *handle) {
    int ret = real_dlclose(handle);
    if (atomic_load(&tbio_g_enabled)) tbio_patch_all();   /* forget objects that went away */
    return ret;
}

/* dlsym / dlvsym: a function fetched by name (ctypes' CDLL(None).read, a
 * library's dlsym(RTLD_DEFAULT, "pread")) never goes through a GOT slot, so
 * the answer is swapped for the wrapper when it is libc's function of a
 * hooked name.  glibc answers relative to the caller (RTLD_NEXT: the objects
 * after the caller's; RTLD_DEFAULT: the global scope, then the caller's
 * local scope), found from the return address: a wrapper written in C would
 * become the caller.  So the entry is a few instructions of assembly that
 * leave the return address alone: RTLD_NEXT jumps straight to the real
 * function; any other handle first asks tbio_dlsym_swap, and unless that
 * returns a wrapper, jumps to the real function with the caller's arguments.
 *
 * The swap is exact: the shim's own lookup finding libc's function means the
 * global scope defines the name (libc is in it), and the global scope is
 * searched first from every caller, so the caller's lookup finds the same
 * function; a lookup through a handle does not depend on the caller.
 * A wrapper handed out stays safe to call after disable(): idle, it calls
 * the real function. */
TBIO_HIDDEN __attribute__((used)) void *tbio_dlsym_swap(void *handle, const char *name);
TBIO_HIDDEN __attribute__((used)) void *tbio_dlvsym_swap(void *handle, const char *name, const char *version);

static void *dl_swap(void *p, int h) { return p && p == *tbio_hooks[h].real ? tbio_hooks[h].wrapper : NULL; }

void *tbio_dlsym_swap(void *handle, const char *name) {
    if (!atomic_load_explicit(&tbio_g_enabled, memory_order_relaxed) || !name) return NULL;
    int h = tbio_hook_index(name);
    return h < 0 ? NULL : dl_swap(real_dlsym(handle, name), h);
}

void *tbio_dlvsym_swap(void *handle, const char *name, const char *version) {
    if (!atomic_load_explicit(&tbio_g_enabled, memory_order_relaxed) || !name || !version) return NULL;
    int h = tbio_hook_index(name);
    return h < 0 ? NULL : dl_swap(real_dlvsym(handle, name, version), h);
}

#if defined(__x86_64__)
#if defined(__CET__)
#define TBIO_ASM_LANDING "endbr64\n"
#else
#define TBIO_ASM_LANDING ""
#endif
/* entry: rsp = 8 mod 16; pushes keep the call below 16-byte aligned */
#define TBIO_DLSYM_ENTRY(NAME, SWAP, REAL, SAVE, RESTORE)                  \
    __asm__(".text\n"                                                     \
            ".globl " NAME "\n"                                           \
            ".hidden " NAME "\n"                                          \
            ".type " NAME ", @function\n" NAME ":\n"                      \
            ".cfi_startproc\n" TBIO_ASM_LANDING                           \
            "cmpq $-1, %rdi\n"   /* RTLD_NEXT */                          \
            "je 1f\n" SAVE                                                \
            "call " SWAP "\n" RESTORE                                     \
            "testq %rax, %rax\n"                                          \
            "jne 2f\n"                                                    \
            "1: jmp *" REAL "(%rip)\n"                                    \
            "2: ret\n"                                                    \
            ".cfi_endproc\n"                                              \
            ".size " NAME ", .-" NAME "\n");
TBIO_DLSYM_ENTRY("tbio_w_dlsym", "tbio_dlsym_swap", "real_dlsym",
                 "pushq %rdi\n.cfi_adjust_cfa_offset 8\npushq %rsi\n.cfi_adjust_cfa_offset 8\n"
                 "subq $8, %rsp\n.cfi_adjust_cfa_offset 8\n",
                 "addq $8, %rsp\n.cfi_adjust_cfa_offset -8\npopq %rsi\n.cfi_adjust_cfa_offset -8\n"
                 "popq %rdi\n.cfi_adjust_cfa_offset -8\n")
TBIO_DLSYM_ENTRY("tbio_w_dlvsym", "tbio_dlvsym_swap", "real_dlvsym",
                 "pushq %rdi\n.cfi_adjust_cfa_offset 8\npushq %rsi\n.cfi_adjust_cfa_offset 8\n"
                 "pushq %rdx\n.cfi_adjust_cfa_offset 8\n",
                 "popq %rdx\n.cfi_adjust_cfa_offset -8\npopq %rsi\n.cfi_adjust_cfa_offset -8\n"
                 "popq %rdi\n.cfi_adjust_cfa_offset -8\n")
#elif defined(__aarch64__)
#if defined(__ARM_FEATURE_BTI_DEFAULT)
#define TBIO_ASM_LANDING "hint #34\n"   /* bti c */
#else
#define TBIO_ASM_LANDING ""
#endif
/* x0..x2 saved in a frame of 48 bytes, x29/x30 at its bottom */
#define TBIO_DLSYM_ENTRY(NAME, SWAP, REAL)                                 \
    __asm__(".text\n"                                                     \
            ".globl " NAME "\n"                                           \
            ".hidden " NAME "\n"                                          \
            ".type " NAME ", %function\n" NAME ":\n"                      \
            ".cfi_startproc\n" TBIO_ASM_LANDING                           \
            "cmn x0, #1\n"   /* RTLD_NEXT */                              \
            "b.eq 1f\n"                                                   \
            "stp x29, x30, [sp, #-48]!\n"                                 \
            ".cfi_def_cfa_offset 48\n"                                    \
            ".cfi_offset 29, -48\n"                                       \
            ".cfi_offset 30, -40\n"                                       \
            "mov x29, sp\n"                                               \
            "stp x0, x1, [sp, #16]\n"                                     \
            "str x2, [sp, #32]\n"                                         \
            "bl " SWAP "\n"                                               \
            "mov x9, x0\n"                                                \
            "ldp x0, x1, [sp, #16]\n"                                     \
            "ldr x2, [sp, #32]\n"                                         \
            "ldp x29, x30, [sp], #48\n"                                   \
            ".cfi_restore 29\n"                                           \
            ".cfi_restore 30\n"                                           \
            ".cfi_def_cfa_offset 0\n"                                     \
            "cbnz x9, 2f\n"                                               \
            "1: adrp x16, " REAL "\n"                                     \
            "ldr x16, [x16, :lo12:" REAL "]\n"                            \
            "br x16\n"                                                    \
            "2: mov x0, x9\n"                                             \
            "ret\n"                                                       \
            ".cfi_endproc\n"                                              \
            ".size " NAME ", .-" NAME "\n");
TBIO_DLSYM_ENTRY("tbio_w_dlsym", "tbio_dlsym_swap", "real_dlsym")
TBIO_DLSYM_ENTRY("tbio_w_dlvsym", "tbio_dlvsym_swap", "real_dlvsym")
#else
#error "the dlsym entry is written for x86_64 and aarch64 only"
#endif

/* ---------------- descriptor lifecycle ----------------
 * Calls that make a descriptor, or close one inside libc, only reset the
 * number's fd-table entry: the next traced call on it resolves it afresh
 * (through /proc/self/fd) instead of trusting what the number named before.
 * Whether idle or recording: the table outlives captures.  A store per
 * entry, no lock and no allocation (signal handlers may call these). */
static inline int fd_fresh(int fd) {
    if (fd >= 0) tbio_fd_forget(fd);
    return fd;
}
static inline int fd_fresh_pair(int ret, const int fds[2]) {
    if (ret == 0) {
        tbio_fd_forget(fds[0]);
        tbio_fd_forget(fds[1]);
    }
    return ret;
}
static inline FILE *fp_fresh(FILE *fp) {
    if (fp) tbio_fd_forget(fileno(fp));
    return fp;
}
/* errno is the real call's: tbio_fd_forget never touches it */
static int tbio_w_socket(int domain, int type, int protocol) { return fd_fresh(real_socket(domain, type, protocol)); }
static int tbio_w_socketpair(int domain, int type, int protocol, int sv[2]) {
    return fd_fresh_pair(real_socketpair(domain, type, protocol, sv), sv);
}
static int tbio_w_accept(int fd, __SOCKADDR_ARG addr, socklen_t *__restrict len) {
    return fd_fresh(real_accept(fd, addr, len));
}
static int tbio_w_accept4(int fd, __SOCKADDR_ARG addr, socklen_t *__restrict len, int flags) {
    return fd_fresh(real_accept4(fd, addr, len, flags));
}
static int tbio_w_pipe(int fds[2]) { return fd_fresh_pair(real_pipe(fds), fds); }
static int tbio_w_pipe2(int fds[2], int flags) { return fd_fresh_pair(real_pipe2(fds, flags), fds); }
static int tbio_w_eventfd(unsigned int count, int flags) { return fd_fresh(real_eventfd(count, flags)); }
static int tbio_w_epoll_create(int size) { return fd_fresh(real_epoll_create(size)); }
static int tbio_w_epoll_create1(int flags) { return fd_fresh(real_epoll_create1(flags)); }
static int tbio_w_memfd_create(const char *name, unsigned int flags) {
    return fd_fresh(real_memfd_create(name, flags));
}
static int tbio_w_timerfd_create(int clockid, int flags) { return fd_fresh(real_timerfd_create(clockid, flags)); }
static int tbio_w_signalfd(int fd, const sigset_t *mask, int flags) {
    int ret = real_signalfd(fd, mask, flags);
    return ret != fd ? fd_fresh(ret) : ret;   /* fd != -1: changed the mask of an existing one */
}
static int tbio_w_inotify_init(void) { return fd_fresh(real_inotify_init()); }
static int tbio_w_inotify_init1(int flags) { return fd_fresh(real_inotify_init1(flags)); }
/* mkstemp opens inside libc: the file is then found through /proc/self/fd */
static int tbio_w_mkstemp(char *tmpl) { return fd_fresh(real_mkstemp(tmpl)); }
static int tbio_w_mkstemp64(char *tmpl) { return fd_fresh(real_mkstemp64(tmpl)); }
static int tbio_w_mkostemp(char *tmpl, int flags) { return fd_fresh(real_mkostemp(tmpl, flags)); }
static int tbio_w_mkostemp64(char *tmpl, int flags) { return fd_fresh(real_mkostemp64(tmpl, flags)); }
static DIR *tbio_w_opendir(const char *name) {
    DIR *d = real_opendir(name);
    if (d) fd_fresh(dirfd(d));
    return d;
}
static int tbio_w_closedir(DIR *d) {
    /* closes the descriptor inside libc (fdopendir's, e.g. os.scandir(fd)'s dup) */
    if (d) fd_fresh(dirfd(d));
    return real_closedir(d);
}
static void tbio_w_closefrom(int lowfd) {
    real_closefrom(lowfd);
    if (lowfd >= 0) tbio_fd_forget_range((unsigned)lowfd, ~0u);
}
static FILE *tbio_w_tmpfile(void) { return fp_fresh(real_tmpfile()); }
static FILE *tbio_w_tmpfile64(void) { return fp_fresh(real_tmpfile64()); }
static FILE *tbio_w_popen(const char *cmd, const char *mode) { return fp_fresh(real_popen(cmd, mode)); }
static int tbio_w_pclose(FILE *fp) {
    if (fp) fd_fresh(fileno(fp));
    return real_pclose(fp);
}
