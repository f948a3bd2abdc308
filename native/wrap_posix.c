/* POSIX wrappers: data calls (read/write families), descriptor metadata
 * (seek, sync, stat, mmap, close, dup, fcntl), path calls (open, stat,
 * rename) and copies (copy_file_range, sendfile). */
#include "wrap.h"

/* ---------------- POSIX data calls ---------------- */
enum { K_READ, K_WRITE };

/* After a read/write-like call on fd.  off < 0: the call used the file offset. */
TBIO_INLINE void io_done(tbio_call *c, int op, int kind, int fd, int64_t off, int64_t req, int aligned,
                    int64_t ret, int err) {
    uint64_t t1;
    if (!tbio_call_post(c, &t1)) return;
    uint32_t id = tbio_fd_posix(fd);
    if (UNLIKELY(!tbio_tracked(id))) {
        if (id == TBIO_OVER_FILE)
            TBIO_EACH_SESSION(c) tbio_count_over(c, kind == K_READ ? ret : 0, kind == K_WRITE ? ret : 0);
    } else TBIO_EACH_SESSION(c) {
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

/* The same, out of line: the vector and fortified calls and the socket calls
 * (wrap_net.c) share one copy. */
_Static_assert((int)K_READ == (int)TBIO_K_READ && (int)K_WRITE == (int)TBIO_K_WRITE, "kinds (wrap.h)");
__attribute__((noinline)) void tbio_io_done(tbio_call *c, int op, int kind, int fd, int64_t off, int64_t req,
                                            int aligned, int64_t ret, int err) {
    io_done(c, op, kind, fd, off, req, aligned, ret, err);
}
#define io_done_shared tbio_io_done

/* DONE: io_done (inlined: read, write, pread, pwrite and their 64-bit names,
 * the calls a data loader makes millions of times; a call with nine
 * arguments costs ~35 instructions a traced call) or io_done_shared. */
#define IO_CALL_WITH(DONE, OP, KIND, FD, OFF, REQ, ALIGNED, RTYPE, CALL) \
    TBIO_TRACED(RTYPE, CALL, DONE(&c, OP, KIND, FD, OFF, REQ, ALIGNED, (int64_t)ret_, err_))
#define IO_CALL(...) IO_CALL_WITH(io_done_shared, __VA_ARGS__)
#define IO_CALL_HOT(...) IO_CALL_WITH(io_done, __VA_ARGS__)
/* A hot wrapper: the idle test, then the real call or its recorded form out of
 * line, so the idle path saves no registers (the compiler does not shrink-wrap
 * the inlined accounting's frame). */
#define HOT_WRAPPER(RTYPE, NAME, PARAMS, ARGS, OP, KIND, FD, OFF, REQ, ALIGNED, CALL)  \
    static __attribute__((noinline)) RTYPE traced_##NAME PARAMS {                     \
        IO_CALL_HOT(OP, KIND, FD, OFF, REQ, ALIGNED, RTYPE, CALL);                    \
    }                                                                                  \
    RTYPE tbio_w_##NAME PARAMS {                                                       \
        if (IDLE()) return CALL;                                                       \
        return traced_##NAME ARGS;                                                     \
    }

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

HOT_WRAPPER(ssize_t, read, (int fd, void *buf, size_t n), (fd, buf, n), TBIO_OP_read, K_READ, fd, -1,
            (int64_t)n, mem_aligned(buf), real_read(fd, buf, n))
ssize_t tbio_w___read_chk(int fd, void *buf, size_t n, size_t buflen) {
    IO_CALL(TBIO_OP___read_chk, K_READ, fd, -1, (int64_t)n, mem_aligned(buf), ssize_t,
            real___read_chk(fd, buf, n, buflen));
}
HOT_WRAPPER(ssize_t, pread, (int fd, void *buf, size_t n, off_t off), (fd, buf, n, off), TBIO_OP_pread, K_READ,
            fd, off, (int64_t)n, mem_aligned(buf), real_pread(fd, buf, n, off))
HOT_WRAPPER(ssize_t, pread64, (int fd, void *buf, size_t n, off64_t off), (fd, buf, n, off), TBIO_OP_pread64,
            K_READ, fd, off, (int64_t)n, mem_aligned(buf), real_pread64(fd, buf, n, off))
ssize_t tbio_w___pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen) {
    IO_CALL(TBIO_OP___pread_chk, K_READ, fd, off, (int64_t)n, mem_aligned(buf), ssize_t,
            real___pread_chk(fd, buf, n, off, buflen));
}
ssize_t tbio_w___pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen) {
    IO_CALL(TBIO_OP___pread64_chk, K_READ, fd, off, (int64_t)n, mem_aligned(buf), ssize_t,
            real___pread64_chk(fd, buf, n, off, buflen));
}
ssize_t tbio_w_readv(int fd, const struct iovec *iov, int cnt) {
    IO_CALL(TBIO_OP_readv, K_READ, fd, -1, IOV_REQ(iov, cnt), IOV_ALIGNED(iov, cnt), ssize_t,
            real_readv(fd, iov, cnt));
}
ssize_t tbio_w_preadv(int fd, const struct iovec *iov, int cnt, off_t off) {
    IO_CALL(TBIO_OP_preadv, K_READ, fd, off, IOV_REQ(iov, cnt), IOV_ALIGNED(iov, cnt), ssize_t,
            real_preadv(fd, iov, cnt, off));
}
ssize_t tbio_w_preadv64(int fd, const struct iovec *iov, int cnt, off64_t off) {
    IO_CALL(TBIO_OP_preadv64, K_READ, fd, off, IOV_REQ(iov, cnt), IOV_ALIGNED(iov, cnt), ssize_t,
            real_preadv64(fd, iov, cnt, off));
}
ssize_t tbio_w_preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags) {
    IO_CALL(TBIO_OP_preadv2, K_READ, fd, off, IOV_REQ(iov, cnt), IOV_ALIGNED(iov, cnt), ssize_t,
            real_preadv2(fd, iov, cnt, off, flags));
}
ssize_t tbio_w_preadv64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags) {
    IO_CALL(TBIO_OP_preadv64v2, K_READ, fd, off, IOV_REQ(iov, cnt), IOV_ALIGNED(iov, cnt), ssize_t,
            real_preadv64v2(fd, iov, cnt, off, flags));
}
HOT_WRAPPER(ssize_t, write, (int fd, const void *buf, size_t n), (fd, buf, n), TBIO_OP_write, K_WRITE, fd, -1,
            (int64_t)n, mem_aligned(buf), real_write(fd, buf, n))
HOT_WRAPPER(ssize_t, pwrite, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off), TBIO_OP_pwrite,
            K_WRITE, fd, off, (int64_t)n, mem_aligned(buf), real_pwrite(fd, buf, n, off))
HOT_WRAPPER(ssize_t, pwrite64, (int fd, const void *buf, size_t n, off64_t off), (fd, buf, n, off),
            TBIO_OP_pwrite64, K_WRITE, fd, off, (int64_t)n, mem_aligned(buf), real_pwrite64(fd, buf, n, off))
ssize_t tbio_w_writev(int fd, const struct iovec *iov, int cnt) {
    IO_CALL(TBIO_OP_writev, K_WRITE, fd, -1, IOV_REQ(iov, cnt), IOV_ALIGNED(iov, cnt), ssize_t,
            real_writev(fd, iov, cnt));
}
ssize_t tbio_w_pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
    IO_CALL(TBIO_OP_pwritev, K_WRITE, fd, off, IOV_REQ(iov, cnt), IOV_ALIGNED(iov, cnt), ssize_t,
            real_pwritev(fd, iov, cnt, off));
}
ssize_t tbio_w_pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off) {
    IO_CALL(TBIO_OP_pwritev64, K_WRITE, fd, off, IOV_REQ(iov, cnt), IOV_ALIGNED(iov, cnt), ssize_t,
            real_pwritev64(fd, iov, cnt, off));
}
ssize_t tbio_w_pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags) {
    IO_CALL(TBIO_OP_pwritev2, K_WRITE, fd, off, IOV_REQ(iov, cnt), IOV_ALIGNED(iov, cnt), ssize_t,
            real_pwritev2(fd, iov, cnt, off, flags));
}
ssize_t tbio_w_pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags) {
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
    if (n->path) return tbio_path_id(n->dirfd, n->path, TBIO_POSIX, 0);
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

/* OKEXPR: whether the call succeeded, an expression over `ret_` */
#define FD_META(OP, KIND, FD, OFF, REQ, RTYPE, CALL, OKEXPR) \
    TBIO_TRACED(RTYPE, CALL, meta_done(&c, OP, KIND, NAMES_FD(FD), FD, OFF, REQ, (int64_t)ret_, (OKEXPR), err_))

off_t tbio_w_lseek(int fd, off_t off, int whence) {
    FD_META(TBIO_OP_lseek, M_SEEK, fd, off, -1, off_t, real_lseek(fd, off, whence), ret_ >= 0);
}
off64_t tbio_w_lseek64(int fd, off64_t off, int whence) {
    FD_META(TBIO_OP_lseek64, M_SEEK, fd, off, -1, off64_t, real_lseek64(fd, off, whence), ret_ >= 0);
}
int tbio_w_fsync(int fd) { FD_META(TBIO_OP_fsync, M_FSYNC, fd, -1, -1, int, real_fsync(fd), ret_ == 0); }
int tbio_w_fdatasync(int fd) {
    FD_META(TBIO_OP_fdatasync, M_FDSYNC, fd, -1, -1, int, real_fdatasync(fd), ret_ == 0);
}
int tbio_w_fstat(int fd, struct stat *st) {
    FD_META(TBIO_OP_fstat, M_STAT, fd, -1, -1, int, real_fstat(fd, st), ret_ == 0);
}
int tbio_w_fstat64(int fd, struct stat64 *st) {
    FD_META(TBIO_OP_fstat64, M_STAT, fd, -1, -1, int, real_fstat64(fd, st), ret_ == 0);
}
int tbio_w___fxstat(int ver, int fd, struct stat *st) {
    FD_META(TBIO_OP___fxstat, M_STAT, fd, -1, -1, int, real___fxstat(ver, fd, st), ret_ == 0);
}
int tbio_w___fxstat64(int ver, int fd, struct stat64 *st) {
    FD_META(TBIO_OP___fxstat64, M_STAT, fd, -1, -1, int, real___fxstat64(ver, fd, st), ret_ == 0);
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
void *tbio_w_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    return mmap_common(TBIO_OP_mmap, addr, len, prot, flags, fd, off, call_mmap);
}
void *tbio_w_mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off) {
    return mmap_common(TBIO_OP_mmap64, addr, len, prot, flags, fd, off, call_mmap64);
}

int tbio_w_close(int fd) {
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

int tbio_w_close_range(unsigned int first, unsigned int last, int flags) {
    int ret = real_close_range(first, last, flags);
    int err = errno;
    if (ret == 0 && !(flags & 4 /* CLOSE_RANGE_CLOEXEC */)) tbio_fd_forget_range(first, last);
    errno = err;
    return ret;
}

/* dup family: the new descriptor names the same file; counted as open + dup. */
static int dup_common(int op, int oldfd, int newfd_wanted, int ret, int err, tbio_call *c, int rec) {
    (void)newfd_wanted;
    /* a socket's copy keeps who opened it (sockets.c); set before the copy is named */
    int role = ret >= 0 ? tbio_fd_role(oldfd) : TBIO_SOCK_UNKNOWN;
    if (ret >= 0) {
        tbio_fd_forget(ret);
        if (role != TBIO_SOCK_UNKNOWN) tbio_fd_set_role(ret, role);
    }
    if (rec) meta_done(c, op, M_DUP, NAMES_FD(oldfd), ret >= 0 ? ret : oldfd, -1, -1, ret, ret >= 0, err);
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
int tbio_w_dup(int fd) { DUP_CALL(TBIO_OP_dup, fd, -1, real_dup(fd)); }
int tbio_w_dup2(int fd, int fd2) { DUP_CALL(TBIO_OP_dup2, fd, fd2, real_dup2(fd, fd2)); }
int tbio_w_dup3(int fd, int fd2, int flags) { DUP_CALL(TBIO_OP_dup3, fd, fd2, real_dup3(fd, fd2, flags)); }

static int fcntl_common(int op, int (*call)(int, int, ...), int fd, int cmd, void *arg) {
    if (cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC) return call(fd, cmd, arg);
    DUP_CALL(op, fd, -1, call(fd, cmd, arg));
}
int tbio_w_fcntl(int fd, int cmd, ...) {
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl_common(TBIO_OP_fcntl, real_fcntl, fd, cmd, arg);
}
int tbio_w_fcntl64(int fd, int cmd, ...) {
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
    if (ret >= 0 || err != EFAULT) id = tbio_path_id(dirfd, path, TBIO_POSIX, ret >= 0);
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
int tbio_w_open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    int mode = open_mode(flags, ap);
    va_end(ap);
    OPEN_CALL(TBIO_OP_open, AT_FDCWD, path, mode, real_open(path, flags, mode));
}
int tbio_w_open64(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    int mode = open_mode(flags, ap);
    va_end(ap);
    OPEN_CALL(TBIO_OP_open64, AT_FDCWD, path, mode, real_open64(path, flags, mode));
}
int tbio_w_openat(int dirfd, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    int mode = open_mode(flags, ap);
    va_end(ap);
    OPEN_CALL(TBIO_OP_openat, dirfd, path, mode, real_openat(dirfd, path, flags, mode));
}
int tbio_w_openat64(int dirfd, const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    int mode = open_mode(flags, ap);
    va_end(ap);
    OPEN_CALL(TBIO_OP_openat64, dirfd, path, mode, real_openat64(dirfd, path, flags, mode));
}
int tbio_w_creat(const char *path, mode_t mode) {
    OPEN_CALL(TBIO_OP_creat, AT_FDCWD, path, (int)mode, real_creat(path, mode));
}
int tbio_w_creat64(const char *path, mode_t mode) {
    OPEN_CALL(TBIO_OP_creat64, AT_FDCWD, path, (int)mode, real_creat64(path, mode));
}
int tbio_w___open_2(const char *path, int flags) {
    OPEN_CALL(TBIO_OP___open_2, AT_FDCWD, path, 0, real___open_2(path, flags));
}
int tbio_w___open64_2(const char *path, int flags) {
    OPEN_CALL(TBIO_OP___open64_2, AT_FDCWD, path, 0, real___open64_2(path, flags));
}
int tbio_w___openat_2(int dirfd, const char *path, int flags) {
    OPEN_CALL(TBIO_OP___openat_2, dirfd, path, 0, real___openat_2(dirfd, path, flags));
}
int tbio_w___openat64_2(int dirfd, const char *path, int flags) {
    OPEN_CALL(TBIO_OP___openat64_2, dirfd, path, 0, real___openat64_2(dirfd, path, flags));
}

/* stat by path (dirfd AT_FDCWD unless *at). */
#define PATH_STAT(OP, DIRFD, PATH, CALL)                                                   \
    TBIO_TRACED(int, CALL,                                                                 \
                names nm_ = ret_ != 0 && err_ == EFAULT ? NAMES_ID(TBIO_NO_FILE)           \
                                                        : NAMES_PATH(DIRFD, PATH);         \
                meta_done(&c, OP, M_STAT, nm_, -1, -1, -1, ret_, ret_ == 0, err_))

int tbio_w_stat(const char *p, struct stat *st) { PATH_STAT(TBIO_OP_stat, AT_FDCWD, p, real_stat(p, st)); }
int tbio_w_stat64(const char *p, struct stat64 *st) {
    PATH_STAT(TBIO_OP_stat64, AT_FDCWD, p, real_stat64(p, st));
}
int tbio_w_lstat(const char *p, struct stat *st) { PATH_STAT(TBIO_OP_lstat, AT_FDCWD, p, real_lstat(p, st)); }
int tbio_w_lstat64(const char *p, struct stat64 *st) {
    PATH_STAT(TBIO_OP_lstat64, AT_FDCWD, p, real_lstat64(p, st));
}
int tbio_w___xstat(int v, const char *p, struct stat *st) {
    PATH_STAT(TBIO_OP___xstat, AT_FDCWD, p, real___xstat(v, p, st));
}
int tbio_w___xstat64(int v, const char *p, struct stat64 *st) {
    PATH_STAT(TBIO_OP___xstat64, AT_FDCWD, p, real___xstat64(v, p, st));
}
int tbio_w___lxstat(int v, const char *p, struct stat *st) {
    PATH_STAT(TBIO_OP___lxstat, AT_FDCWD, p, real___lxstat(v, p, st));
}
int tbio_w___lxstat64(int v, const char *p, struct stat64 *st) {
    PATH_STAT(TBIO_OP___lxstat64, AT_FDCWD, p, real___lxstat64(v, p, st));
}

/* *at variants: an empty path with AT_EMPTY_PATH means the descriptor itself. */
/* The path is looked at only after the call, and not at all when the
 * kernel could not read it (EFAULT). */
#define AT_STAT(OP, DIRFD, PATH, FLAGS, CALL)                                    \
    TBIO_TRACED(int, CALL,                                                       \
        names nm_ = NAMES_ID(TBIO_NO_FILE);                                      \
        int fd_ = -1;                                                            \
        if (!(ret_ != 0 && err_ == EFAULT)) {                                    \
            if ((PATH) && (PATH)[0] == 0 && ((FLAGS) & AT_EMPTY_PATH)) {         \
                nm_ = NAMES_FD(DIRFD);                                           \
                fd_ = DIRFD;                                                     \
            } else {                                                             \
                nm_ = NAMES_PATH(DIRFD, PATH);                                   \
            }                                                                    \
        }                                                                        \
        meta_done(&c, OP, M_STAT, nm_, fd_, -1, -1, ret_, ret_ == 0, err_))
int tbio_w_fstatat(int d, const char *p, struct stat *st, int fl) {
    AT_STAT(TBIO_OP_fstatat, d, p, fl, real_fstatat(d, p, st, fl));
}
int tbio_w_fstatat64(int d, const char *p, struct stat64 *st, int fl) {
    AT_STAT(TBIO_OP_fstatat64, d, p, fl, real_fstatat64(d, p, st, fl));
}
int tbio_w___fxstatat(int v, int d, const char *p, struct stat *st, int fl) {
    AT_STAT(TBIO_OP___fxstatat, d, p, fl, real___fxstatat(v, d, p, st, fl));
}
int tbio_w___fxstatat64(int v, int d, const char *p, struct stat64 *st, int fl) {
    AT_STAT(TBIO_OP___fxstatat64, d, p, fl, real___fxstatat64(v, d, p, st, fl));
}
int tbio_w_statx(int d, const char *p, int fl, unsigned int mask, struct statx *st) {
    AT_STAT(TBIO_OP_statx, d, p, fl, real_statx(d, p, fl, mask, st));
}

int tbio_w_rename(const char *from, const char *to) {
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
    uint32_t src = unreadable ? TBIO_NO_FILE : tbio_path_id(AT_FDCWD, from, TBIO_POSIX, 0);
    uint32_t dst = unreadable ? TBIO_NO_FILE : tbio_path_id(AT_FDCWD, to, TBIO_POSIX, 0);
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

/* copy_file_range / sendfile / splice (wrap_net.c): a read of `in` and a write of `out` in one call */
void tbio_copy_done(tbio_call *c, int op, int in, int64_t inoff, int out, int64_t outoff,
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
/* the offsets are the caller's pointers: read only once the kernel has used them (TBIO_COPY_OFF) */
ssize_t tbio_w_copy_file_range(int in, off64_t *inoff, int out, off64_t *outoff, size_t n,
                                      unsigned int flags) {
    TBIO_TRACED(ssize_t, real_copy_file_range(in, inoff, out, outoff, n, flags),
                tbio_copy_done(&c, TBIO_OP_copy_file_range, in, TBIO_COPY_OFF(inoff, ret_), out,
                               TBIO_COPY_OFF(outoff, ret_), (int64_t)n, ret_, err_));
}
ssize_t tbio_w_sendfile(int out, int in, off_t *off, size_t n) {
    TBIO_TRACED(ssize_t, real_sendfile(out, in, off, n),
                tbio_copy_done(&c, TBIO_OP_sendfile, in, TBIO_COPY_OFF(off, ret_), out, -1, (int64_t)n, ret_, err_));
}
ssize_t tbio_w_sendfile64(int out, int in, off64_t *off, size_t n) {
    TBIO_TRACED(ssize_t, real_sendfile64(out, in, off, n),
                tbio_copy_done(&c, TBIO_OP_sendfile64, in, TBIO_COPY_OFF(off, ret_), out, -1, (int64_t)n, ret_,
                               err_));
}
