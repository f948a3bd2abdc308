/* STDIO wrappers: the FILE* calls Darshan's STDIO module counts. */
#include "wrap.h"

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
        tbio_trace_add_mod(c, TBIO_TS_STDIO, t1, op, id, fd, off, req, failed ? -1 : ok ? bytes : 0,
                           failed ? err : 0, r && ok && kind == S_READ ? bytes : 0,
                           r && ok && kind == S_WRITE ? bytes : 0);
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

size_t tbio_w_fread(void *buf, size_t size, size_t n, FILE *fp) {
    STDIO_CALL(TBIO_OP_fread, S_READ, fp, (int64_t)(size * n), size_t, real_fread(buf, size, n, fp),
               size * ret, ret > 0);
}
size_t tbio_w___fread_chk(void *buf, size_t buflen, size_t size, size_t n, FILE *fp) {
    STDIO_CALL(TBIO_OP___fread_chk, S_READ, fp, (int64_t)(size * n), size_t,
               real___fread_chk(buf, buflen, size, n, fp), size * ret, ret > 0);
}
size_t tbio_w_fread_unlocked(void *buf, size_t size, size_t n, FILE *fp) {
    STDIO_CALL(TBIO_OP_fread_unlocked, S_READ, fp, (int64_t)(size * n), size_t,
               real_fread_unlocked(buf, size, n, fp), size * ret, ret > 0);
}
size_t tbio_w_fwrite(const void *buf, size_t size, size_t n, FILE *fp) {
    STDIO_CALL(TBIO_OP_fwrite, S_WRITE, fp, (int64_t)(size * n), size_t, real_fwrite(buf, size, n, fp),
               size * ret, ret > 0);
}
size_t tbio_w_fwrite_unlocked(const void *buf, size_t size, size_t n, FILE *fp) {
    STDIO_CALL(TBIO_OP_fwrite_unlocked, S_WRITE, fp, (int64_t)(size * n), size_t,
               real_fwrite_unlocked(buf, size, n, fp), size * ret, ret > 0);
}
char *tbio_w_fgets(char *s, int n, FILE *fp) {
    STDIO_CALL(TBIO_OP_fgets, S_READ, fp, n, char *, real_fgets(s, n, fp), ret ? strlen(ret) : 0, ret != NULL);
}
char *tbio_w___fgets_chk(char *s, size_t size, int n, FILE *fp) {
    STDIO_CALL(TBIO_OP___fgets_chk, S_READ, fp, n, char *, real___fgets_chk(s, size, n, fp),
               ret ? strlen(ret) : 0, ret != NULL);
}
int tbio_w_fputs(const char *s, FILE *fp) {
    STDIO_CALL(TBIO_OP_fputs, S_WRITE, fp, (int64_t)strlen(s), int, real_fputs(s, fp), strlen(s),
               ret != EOF && ret > 0);
}
int tbio_w_fputc(int ch, FILE *fp) {
    STDIO_CALL(TBIO_OP_fputc, S_WRITE, fp, 1, int, real_fputc(ch, fp), 1, ret != EOF);
}
int tbio_w_putc(int ch, FILE *fp) {
    STDIO_CALL(TBIO_OP_putc, S_WRITE, fp, 1, int, real_putc(ch, fp), 1, ret != EOF);
}
int tbio_w__IO_putc(int ch, FILE *fp) {
    STDIO_CALL(TBIO_OP__IO_putc, S_WRITE, fp, 1, int, real__IO_putc(ch, fp), 1, ret != EOF);
}
int tbio_w_fgetc(FILE *fp) { STDIO_CALL(TBIO_OP_fgetc, S_READ, fp, 1, int, real_fgetc(fp), 1, ret != EOF); }
int tbio_w_getc(FILE *fp) { STDIO_CALL(TBIO_OP_getc, S_READ, fp, 1, int, real_getc(fp), 1, ret != EOF); }
int tbio_w__IO_getc(FILE *fp) {
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
int tbio_w_vfprintf(FILE *fp, const char *fmt, va_list ap) {
    return fmt_io(TBIO_OP_vfprintf, S_WRITE, fp, real_vfprintf, 0, NULL, fmt, ap);
}
int tbio_w_fprintf(FILE *fp, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = fmt_io(TBIO_OP_fprintf, S_WRITE, fp, real_vfprintf, 0, NULL, fmt, ap);
    va_end(ap);
    return r;
}
int tbio_w___vfprintf_chk(FILE *fp, int flag, const char *fmt, va_list ap) {
    return fmt_io(TBIO_OP___vfprintf_chk, S_WRITE, fp, NULL, flag, real___vfprintf_chk, fmt, ap);
}
int tbio_w___fprintf_chk(FILE *fp, int flag, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = fmt_io(TBIO_OP___fprintf_chk, S_WRITE, fp, NULL, flag, real___vfprintf_chk, fmt, ap);
    va_end(ap);
    return r;
}
int tbio_w_vfscanf(FILE *fp, const char *fmt, va_list ap) {
    return fmt_io(TBIO_OP_vfscanf, S_READ, fp, real_vfscanf, 0, NULL, fmt, ap);
}
int tbio_w___isoc99_vfscanf(FILE *fp, const char *fmt, va_list ap) {
    return fmt_io(TBIO_OP___isoc99_vfscanf, S_READ, fp, real___isoc99_vfscanf, 0, NULL, fmt, ap);
}
int tbio_w_fscanf(FILE *fp, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = fmt_io(TBIO_OP_fscanf, S_READ, fp, real_vfscanf, 0, NULL, fmt, ap);
    va_end(ap);
    return r;
}
int tbio_w___isoc99_fscanf(FILE *fp, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = fmt_io(TBIO_OP___isoc99_fscanf, S_READ, fp, real___isoc99_vfscanf, 0, NULL, fmt, ap);
    va_end(ap);
    return r;
}

/* seeks: the new position comes from ftell after the call */
#define STDIO_SEEK(OP, FP, RTYPE, CALL, OK)                                          \
    STDIO_CALL(OP, S_SEEK, FP, -1, RTYPE, CALL, (OK) ? real_ftell(FP) : 0, (OK))
int tbio_w_fseek(FILE *fp, long off, int whence) {
    STDIO_SEEK(TBIO_OP_fseek, fp, int, real_fseek(fp, off, whence), ret >= 0);
}
int tbio_w_fseeko(FILE *fp, off_t off, int whence) {
    STDIO_SEEK(TBIO_OP_fseeko, fp, int, real_fseeko(fp, off, whence), ret >= 0);
}
int tbio_w_fseeko64(FILE *fp, off64_t off, int whence) {
    STDIO_SEEK(TBIO_OP_fseeko64, fp, int, real_fseeko64(fp, off, whence), ret >= 0);
}
int tbio_w_fsetpos(FILE *fp, const fpos_t *pos) {
    STDIO_SEEK(TBIO_OP_fsetpos, fp, int, real_fsetpos(fp, pos), ret >= 0);
}
int tbio_w_fsetpos64(FILE *fp, const fpos64_t *pos) {
    STDIO_SEEK(TBIO_OP_fsetpos64, fp, int, real_fsetpos64(fp, pos), ret >= 0);
}
static int rewind_call(FILE *fp) {
    real_rewind(fp);
    return 0;
}
void tbio_w_rewind(FILE *fp) {
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
long tbio_w_ftell(FILE *fp) {
    /* traced, not counted: Darshan counts no seek for ftell */
    STDIO_CALL(TBIO_OP_ftell, S_TELL, fp, -1, long, real_ftell(fp), ret, ret >= 0);
}
int tbio_w_fflush(FILE *fp) {
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
        if (path) id = tbio_path_id(AT_FDCWD, path, TBIO_STDIO, ret != NULL);
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
        tbio_trace_add_mod(c, TBIO_TS_STDIO, t1, op, id, ret ? fileno(ret) : -1, -1, -1, ret ? 0 : -1,
                           ret ? 0 : err, 0, 0);
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
FILE *tbio_w_fopen(const char *path, const char *mode) {
    FOPEN_CALL(TBIO_OP_fopen, path, -1, real_fopen(path, mode));
}
FILE *tbio_w_fopen64(const char *path, const char *mode) {
    FOPEN_CALL(TBIO_OP_fopen64, path, -1, real_fopen64(path, mode));
}
FILE *tbio_w_fdopen(int fd, const char *mode) { FOPEN_CALL(TBIO_OP_fdopen, NULL, fd, real_fdopen(fd, mode)); }
FILE *tbio_w_freopen(const char *path, const char *mode, FILE *fp) {
    tbio_fp_forget(fp);
    FOPEN_CALL(TBIO_OP_freopen, path, -1, real_freopen(path, mode, fp));
}
FILE *tbio_w_freopen64(const char *path, const char *mode, FILE *fp) {
    tbio_fp_forget(fp);
    FOPEN_CALL(TBIO_OP_freopen64, path, -1, real_freopen64(path, mode, fp));
}

int tbio_w_fclose(FILE *fp) {
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
