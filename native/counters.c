/* Darshan-style counter rules (see counters.h and docs/internals.md, "Darshan counter rules").
 *
 * Everything here is pure: no locks, no clocks, no I/O, no allocation.  The
 * caller holds the record's lock, passes times in seconds since capture
 * start and only reports calls that succeeded.
 *
 * The rules reproduce the Darshan 3.x runtime (darshan-posix.c,
 * darshan-stdio.c, darshan-common.h) as observed from its behaviour; the
 * code is our own.  Where a Darshan rule looks odd it is kept on purpose so
 * that numbers compare one to one, and the oddity is noted next to it.
 *
 * Single process: every record is "rank 0" and never shared between ranks,
 * so Darshan's shared-file reduction (which fills *_FASTEST_RANK*,
 * *_SLOWEST_RANK* and the *_VARIANCE_* counters) is not applied; those
 * counters stay 0, exactly as Darshan leaves them on non-shared records.
 */
#include "counters.h"

#include <string.h>

#ifndef TBIO_INTERNAL_API
#define TBIO_INTERNAL_API __attribute__((visibility("default")))
#endif

/* ---- name tables, generated from counters.def ---- */

#define TBIO_NAME_POSIX(n) [POSIX_##n] = "POSIX_" #n,
#define TBIO_NAME_STDIO(n) [STDIO_##n] = "STDIO_" #n,
#define TBIO_SKIP(n)

#define C(m, n) TBIO_CN_##m(n)
#define F(m, n)
#define TBIO_CN_POSIX(n) TBIO_NAME_POSIX(n)
#define TBIO_CN_STDIO(n) TBIO_SKIP(n)
TBIO_INTERNAL_API const char *const tbio_posix_counter_names[POSIX_NUM_INDICES] = {
#include "counters.def"
};
#undef TBIO_CN_POSIX
#undef TBIO_CN_STDIO
#define TBIO_CN_POSIX(n) TBIO_SKIP(n)
#define TBIO_CN_STDIO(n) TBIO_NAME_STDIO(n)
TBIO_INTERNAL_API const char *const tbio_stdio_counter_names[STDIO_NUM_INDICES] = {
#include "counters.def"
};
#undef TBIO_CN_POSIX
#undef TBIO_CN_STDIO
#undef C
#undef F

#define C(m, n)
#define F(m, n) TBIO_FN_##m(n)
#define TBIO_FN_POSIX(n) TBIO_NAME_POSIX(n)
#define TBIO_FN_STDIO(n) TBIO_SKIP(n)
TBIO_INTERNAL_API const char *const tbio_posix_fcounter_names[POSIX_F_NUM_INDICES] = {
#include "counters.def"
};
#undef TBIO_FN_POSIX
#undef TBIO_FN_STDIO
#define TBIO_FN_POSIX(n) TBIO_SKIP(n)
#define TBIO_FN_STDIO(n) TBIO_NAME_STDIO(n)
TBIO_INTERNAL_API const char *const tbio_stdio_fcounter_names[STDIO_F_NUM_INDICES] = {
#include "counters.def"
};
#undef TBIO_FN_POSIX
#undef TBIO_FN_STDIO
#undef C
#undef F
#undef TBIO_NAME_POSIX
#undef TBIO_NAME_STDIO
#undef TBIO_SKIP

/* The code below indexes runs of counters from their first member; the
 * order in counters.def must keep these runs contiguous. */
_Static_assert(POSIX_SIZE_READ_1G_PLUS == POSIX_SIZE_READ_0_100 + 9, "read size bins");
_Static_assert(POSIX_SIZE_WRITE_1G_PLUS == POSIX_SIZE_WRITE_0_100 + 9, "write size bins");
_Static_assert(POSIX_STRIDE4_STRIDE == POSIX_STRIDE1_STRIDE + 3, "stride values");
_Static_assert(POSIX_STRIDE4_COUNT == POSIX_STRIDE1_COUNT + 3, "stride counts");
_Static_assert(POSIX_ACCESS4_ACCESS == POSIX_ACCESS1_ACCESS + 3, "access values");
_Static_assert(POSIX_ACCESS4_COUNT == POSIX_ACCESS1_COUNT + 3, "access counts");

/* ---- shared helpers ---- */

/* Darshan's no-overlap timer: time already covered by an earlier operation
 * of the same kind on the same record (up to *last_end) is not added again. */
static void timer_no_overlap(double *timer, double t0, double t1, double *last_end)
{
    if (t0 > *last_end) {
        if (t1 > t0)
            *timer += t1 - t0;
    } else if (t1 > *last_end) {
        *timer += t1 - *last_end;
    }
    if (t1 > *last_end)
        *last_end = t1;
}

/* First-start rule: 0 means "not set yet", so a start of exactly 0 is
 * replaced by the next one (as in Darshan). */
static void start_min(double *ts, double t0)
{
    if (*ts == 0 || *ts > t0)
        *ts = t0;
}

/* inlined into every read/write rule (an exported function is called out of line) */
static inline int size_bin(int64_t n)
{
    /* inclusive upper edges: 100, 1K, 10K, 100K, 1M, 4M, 10M, 100M, 1G
     * (compares against immediates: no table to load on every call) */
    return n <= 102400 ? (n <= 100 ? 0 : n <= 1024 ? 1 : n <= 10240 ? 2 : 3)
         : n <= 4194304 ? (n <= 1048576 ? 4 : 5)
         : n <= 10485760 ? 6 : n <= 104857600 ? 7 : n <= 1073741824 ? 8 : 9;
}

TBIO_INTERNAL_API int tbio_size_bin(int64_t n) { return size_bin(n); }

/* Common values.  `cv` holds the first TBIO_COMMON_MAX distinct non-zero
 * values with their exact counts; `vals`/`cnts` are the 4 reported slots,
 * ordered by count then value, both descending (empty slots are 0/0).
 *
 * Only the value whose count just changed can move, so the slots are kept
 * in order by taking it out and putting it back at its new rank.  Values
 * outside the slots always rank below every slot (they did when they were
 * last updated, and slots only move up), so this equals "top 4 of all
 * tracked values" at every moment, which is also what Darshan's incremental
 * update produces. */
static __attribute__((noinline)) void slots_update(int64_t *vals, int64_t *cnts, int64_t v, int64_t c)
{
    int i;
    /* take v out of the slots if it is there */
    for (i = 0; i < 4; i++) {
        if (cnts[i] > 0 && vals[i] == v) {
            for (; i < 3; i++) {
                vals[i] = vals[i + 1];
                cnts[i] = cnts[i + 1];
            }
            vals[3] = 0;
            cnts[3] = 0;
            break;
        }
    }
    /* its new rank: after every slot that orders strictly above it */
    for (i = 0; i < 4; i++)
        if (!(cnts[i] > c || (cnts[i] == c && vals[i] > v)))
            break;
    if (i == 4)
        return; /* ranks below all 4 slots */
    for (int j = 3; j > i; j--) {
        vals[j] = vals[j - 1];
        cnts[j] = cnts[j - 1];
    }
    vals[i] = v;
    cnts[i] = c;
}

/* Inlined (with posix_io): it runs twice per read or write. */
static inline __attribute__((always_inline)) void
common_val_add(tbio_common_vals *cv, int64_t v, int64_t *vals, int64_t *cnts)
{
    int i;
    if (v == 0)
        return; /* Darshan does not count zero sizes/strides */
    for (i = 0; i < cv->n; i++)
        if (cv->e[i].val == v)
            break;
    if (i == cv->n) {
        if (cv->n >= TBIO_COMMON_MAX)
            return; /* not among the first 32 distinct values: ignored */
        cv->e[i].val = v;
        cv->e[i].cnt = 0;
        cv->n++;
    }
    cv->e[i].cnt++;
    if (cnts[0] > 0 && vals[0] == v) {
        cnts[0] = cv->e[i].cnt;   /* already ranked first, and only its count grew */
        return;
    }
    slots_update(vals, cnts, v, cv->e[i].cnt);
}

/* ---- POSIX ---- */

TBIO_INTERNAL_API void tbio_posix_rec_init(tbio_posix_rec *r, int64_t file_alignment)
{
    if (!r)
        return;
    memset(r, 0, sizeof(*r));
    r->last_io = TBIO_IO_NONE;
    r->counters[POSIX_FILE_ALIGNMENT] = file_alignment;
    r->counters[POSIX_MEM_ALIGNMENT] = TBIO_MEM_ALIGNMENT;
    /* FASTEST/SLOWEST_RANK(_BYTES), F_*_RANK_TIME, F_VARIANCE_*: 0, see top. */
}

/* The part of an open shared by open (reset = 1) and dup (reset = 0). */
static void posix_open_common(tbio_posix_rec *r, int reset, double t0, double t1)
{
    if (reset) {
        r->offset = 0;
        r->last_byte_read = 0;
        r->last_byte_written = 0;
    }
    r->counters[POSIX_OPENS] += 1;
    start_min(&r->fcounters[POSIX_F_OPEN_START_TIMESTAMP], t0);
    r->fcounters[POSIX_F_OPEN_END_TIMESTAMP] = t1;
    timer_no_overlap(&r->fcounters[POSIX_F_META_TIME], t0, t1, &r->last_meta_end);
}

TBIO_INTERNAL_API void tbio_posix_on_open(tbio_posix_rec *r, int64_t mode, double t0, double t1)
{
    if (!r)
        return;
    /* Darshan only stores a non-zero mode (an open without O_CREAT passes 0
     * and keeps the mode of an earlier creating open). */
    if (mode)
        r->counters[POSIX_MODE] = mode;
    posix_open_common(r, 1, t0, t1);
}

TBIO_INTERNAL_API void tbio_posix_on_dup(tbio_posix_rec *r, double t0, double t1)
{
    if (!r)
        return;
    /* Darshan records a dup as a "reference open": OPENS, timestamps and
     * meta time as an open, plus DUPS, but without resetting the offset
     * state (the new descriptor shares the old one's file offset). */
    posix_open_common(r, 0, t0, t1);
    r->counters[POSIX_DUPS] += 1;
}

/* One read or write: the two differ only in which counters they touch. */
typedef struct posix_io_idx {
    int seq, consec, max_byte, bytes, ops, size0, max_time_size, other_io, this_io;
    int f_start, f_end, f_time, f_max_time;
} posix_io_idx;

static const posix_io_idx posix_read_idx = {
    POSIX_SEQ_READS, POSIX_CONSEC_READS, POSIX_MAX_BYTE_READ, POSIX_BYTES_READ,
    POSIX_READS, POSIX_SIZE_READ_0_100, POSIX_MAX_READ_TIME_SIZE, TBIO_IO_WRITE, TBIO_IO_READ,
    POSIX_F_READ_START_TIMESTAMP, POSIX_F_READ_END_TIMESTAMP, POSIX_F_READ_TIME,
    POSIX_F_MAX_READ_TIME,
};

static const posix_io_idx posix_write_idx = {
    POSIX_SEQ_WRITES, POSIX_CONSEC_WRITES, POSIX_MAX_BYTE_WRITTEN, POSIX_BYTES_WRITTEN,
    POSIX_WRITES, POSIX_SIZE_WRITE_0_100, POSIX_MAX_WRITE_TIME_SIZE, TBIO_IO_READ, TBIO_IO_WRITE,
    POSIX_F_WRITE_START_TIMESTAMP, POSIX_F_WRITE_END_TIMESTAMP, POSIX_F_WRITE_TIME,
    POSIX_F_MAX_WRITE_TIME,
};

/* Inlined into its two callers, so the counter indices in *x are constants. */
static inline __attribute__((always_inline)) void
posix_io(tbio_posix_rec *r, const posix_io_idx *x, int64_t *last_byte,
                     double *last_end, int64_t offset, int64_t n, int mem_aligned,
                     double t0, double t1)
{
    int64_t *c = r->counters;
    double *f = r->fcounters;
    int64_t o = offset >= 0 ? offset : r->offset;
    int64_t stride, align;
    double elapsed = t1 - t0;

    /* the first access at offset 0 is neither sequential nor consecutive */
    if (o > *last_byte)
        c[x->seq] += 1;
    if (o == *last_byte + 1)
        c[x->consec] += 1;
    if (o > 0 && o > *last_byte && *last_byte != 0)
        stride = o - *last_byte - 1;
    else
        stride = 0;
    *last_byte = o + n - 1;
    /* Darshan advances the tracked offset for explicit-offset calls too. */
    r->offset = o + n;
    if (c[x->max_byte] < o + n - 1)
        c[x->max_byte] = o + n - 1;
    c[x->bytes] += n;
    c[x->ops] += 1;
    c[x->size0 + size_bin(n)] += 1;
    /* reads and writes share one access-size and one stride table */
    common_val_add(&r->access, n, &c[POSIX_ACCESS1_ACCESS], &c[POSIX_ACCESS1_COUNT]);
    common_val_add(&r->stride, stride, &c[POSIX_STRIDE1_STRIDE], &c[POSIX_STRIDE1_COUNT]);
    if (!mem_aligned)
        c[POSIX_MEM_NOT_ALIGNED] += 1;
    align = c[POSIX_FILE_ALIGNMENT];
    /* block sizes are powers of two: a mask, not a 64-bit division (~20 ns) */
    if (align > 0 && ((align & (align - 1)) == 0 ? (o & (align - 1)) != 0 : o % align != 0))
        c[POSIX_FILE_NOT_ALIGNED] += 1;
    if (r->last_io == x->other_io)
        c[POSIX_RW_SWITCHES] += 1;
    r->last_io = x->this_io;
    start_min(&f[x->f_start], t0);
    f[x->f_end] = t1;
    if (f[x->f_max_time] < elapsed) {
        f[x->f_max_time] = elapsed;
        c[x->max_time_size] = n;
    }
    timer_no_overlap(&f[x->f_time], t0, t1, last_end);
}

/* always_inline: with LTO the shim's io_done gets the body (no call per traced call) */
TBIO_INTERNAL_API inline __attribute__((always_inline)) void tbio_posix_on_read(tbio_posix_rec *r, int64_t offset, int64_t nbytes,
                                          int mem_aligned, double t0, double t1)
{
    if (!r)
        return;
    posix_io(r, &posix_read_idx, &r->last_byte_read, &r->last_read_end, offset, nbytes,
             mem_aligned, t0, t1);
}

/* always_inline: with LTO the shim's io_done gets the body (no call per traced call) */
TBIO_INTERNAL_API inline __attribute__((always_inline)) void tbio_posix_on_write(tbio_posix_rec *r, int64_t offset, int64_t nbytes,
                                           int mem_aligned, double t0, double t1)
{
    if (!r)
        return;
    posix_io(r, &posix_write_idx, &r->last_byte_written, &r->last_write_end, offset, nbytes,
             mem_aligned, t0, t1);
}

TBIO_INTERNAL_API void tbio_posix_on_seek(tbio_posix_rec *r, int64_t new_offset, double t0,
                                          double t1)
{
    if (!r)
        return;
    r->offset = new_offset;
    r->counters[POSIX_SEEKS] += 1;
    timer_no_overlap(&r->fcounters[POSIX_F_META_TIME], t0, t1, &r->last_meta_end);
}

TBIO_INTERNAL_API void tbio_posix_on_stat(tbio_posix_rec *r, double t0, double t1)
{
    if (!r)
        return;
    r->counters[POSIX_STATS] += 1;
    timer_no_overlap(&r->fcounters[POSIX_F_META_TIME], t0, t1, &r->last_meta_end);
}

TBIO_INTERNAL_API void tbio_posix_on_mmap(tbio_posix_rec *r, double t0, double t1)
{
    (void)t0;
    (void)t1; /* Darshan counts mmap calls but times nothing */
    if (!r)
        return;
    r->counters[POSIX_MMAPS] += 1;
}

TBIO_INTERNAL_API void tbio_posix_on_sync(tbio_posix_rec *r, int datasync, double t0, double t1)
{
    if (!r)
        return;
    r->counters[datasync ? POSIX_FDSYNCS : POSIX_FSYNCS] += 1;
    /* sync time is write time; write timestamps are not touched */
    timer_no_overlap(&r->fcounters[POSIX_F_WRITE_TIME], t0, t1, &r->last_write_end);
}

TBIO_INTERNAL_API void tbio_posix_on_close(tbio_posix_rec *r, double t0, double t1)
{
    if (!r)
        return;
    /* the tracked offset is left alone; the next open resets it */
    r->last_byte_read = 0;
    r->last_byte_written = 0;
    start_min(&r->fcounters[POSIX_F_CLOSE_START_TIMESTAMP], t0);
    r->fcounters[POSIX_F_CLOSE_END_TIMESTAMP] = t1;
    timer_no_overlap(&r->fcounters[POSIX_F_META_TIME], t0, t1, &r->last_meta_end);
}

TBIO_INTERNAL_API void tbio_posix_on_rename(tbio_posix_rec *src, tbio_posix_rec *dst,
                                            int64_t src_id, double t0, double t1)
{
    /* As in Darshan: nothing is recorded unless the source is a known
     * record; the rename's time is meta time of the source only; the target
     * keeps the first RENAMED_FROM it was given. */
    if (!src)
        return;
    src->counters[POSIX_RENAME_SOURCES] += 1;
    timer_no_overlap(&src->fcounters[POSIX_F_META_TIME], t0, t1, &src->last_meta_end);
    if (!dst)
        return;
    dst->counters[POSIX_RENAME_TARGETS] += 1;
    if (dst->counters[POSIX_RENAMED_FROM] == 0)
        dst->counters[POSIX_RENAMED_FROM] = src_id;
}

/* ---- STDIO ---- */

TBIO_INTERNAL_API void tbio_stdio_rec_init(tbio_stdio_rec *r)
{
    if (!r)
        return;
    memset(r, 0, sizeof(*r));
}

TBIO_INTERNAL_API void tbio_stdio_on_open(tbio_stdio_rec *r, int fdopen, double t0, double t1)
{
    if (!r)
        return;
    /* fdopen is Darshan's "reference open": it counts as an open and an
     * fdopen and keeps the offset; fopen/freopen reset it. */
    if (fdopen)
        r->counters[STDIO_FDOPENS] += 1;
    else
        r->offset = 0;
    r->counters[STDIO_OPENS] += 1;
    start_min(&r->fcounters[STDIO_F_OPEN_START_TIMESTAMP], t0);
    r->fcounters[STDIO_F_OPEN_END_TIMESTAMP] = t1;
    timer_no_overlap(&r->fcounters[STDIO_F_META_TIME], t0, t1, &r->last_meta_end);
}

TBIO_INTERNAL_API void tbio_stdio_on_read(tbio_stdio_rec *r, int64_t nbytes, double t0, double t1)
{
    int64_t o;
    if (!r)
        return;
    o = r->offset;
    r->offset = o + nbytes;
    if (r->counters[STDIO_MAX_BYTE_READ] < o + nbytes - 1)
        r->counters[STDIO_MAX_BYTE_READ] = o + nbytes - 1;
    r->counters[STDIO_BYTES_READ] += nbytes;
    r->counters[STDIO_READS] += 1;
    start_min(&r->fcounters[STDIO_F_READ_START_TIMESTAMP], t0);
    r->fcounters[STDIO_F_READ_END_TIMESTAMP] = t1;
    timer_no_overlap(&r->fcounters[STDIO_F_READ_TIME], t0, t1, &r->last_read_end);
}

/* A write of n bytes; Darshan records fflush as a 0-byte write that counts
 * FLUSHES instead of WRITES (so it also moves the write timestamps and can
 * raise MAX_BYTE_WRITTEN to offset - 1). */
static void stdio_write(tbio_stdio_rec *r, int64_t nbytes, int flush, double t0, double t1)
{
    int64_t o = r->offset;
    r->offset = o + nbytes;
    if (r->counters[STDIO_MAX_BYTE_WRITTEN] < o + nbytes - 1)
        r->counters[STDIO_MAX_BYTE_WRITTEN] = o + nbytes - 1;
    r->counters[STDIO_BYTES_WRITTEN] += nbytes;
    r->counters[flush ? STDIO_FLUSHES : STDIO_WRITES] += 1;
    start_min(&r->fcounters[STDIO_F_WRITE_START_TIMESTAMP], t0);
    r->fcounters[STDIO_F_WRITE_END_TIMESTAMP] = t1;
    timer_no_overlap(&r->fcounters[STDIO_F_WRITE_TIME], t0, t1, &r->last_write_end);
}

TBIO_INTERNAL_API void tbio_stdio_on_write(tbio_stdio_rec *r, int64_t nbytes, double t0,
                                           double t1)
{
    if (!r)
        return;
    stdio_write(r, nbytes, 0, t0, t1);
}

TBIO_INTERNAL_API void tbio_stdio_on_seek(tbio_stdio_rec *r, int64_t new_offset, double t0,
                                          double t1)
{
    if (!r)
        return;
    r->offset = new_offset;
    r->counters[STDIO_SEEKS] += 1;
    timer_no_overlap(&r->fcounters[STDIO_F_META_TIME], t0, t1, &r->last_meta_end);
}

TBIO_INTERNAL_API void tbio_stdio_on_flush(tbio_stdio_rec *r, double t0, double t1)
{
    if (!r)
        return;
    stdio_write(r, 0, 1, t0, t1);
}

TBIO_INTERNAL_API void tbio_stdio_on_close(tbio_stdio_rec *r, double t0, double t1)
{
    if (!r)
        return;
    start_min(&r->fcounters[STDIO_F_CLOSE_START_TIMESTAMP], t0);
    r->fcounters[STDIO_F_CLOSE_END_TIMESTAMP] = t1;
    timer_no_overlap(&r->fcounters[STDIO_F_META_TIME], t0, t1, &r->last_meta_end);
}
