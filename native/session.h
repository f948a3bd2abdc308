/* Recording sessions: per-file records (Darshan counters), per-thread trace
 * buffers, and what did not fit.  The protocol that keeps them alive while
 * wrappers use them is in hot.h. */
#ifndef TBIO_SESSION_H
#define TBIO_SESSION_H

#include "hot.h"
#include "registry.h"
#include "counters.h"
#include "timeseries.h"

typedef struct tbio_rec {       /* 64-byte aligned, from the session's mmap'ed arena */
    atomic_flag lock;
    uint8_t offset_known;       /* tracked offset valid (opened, sought or read from /proc) */
    uint32_t file;
    union {
        tbio_posix_rec p;
        tbio_stdio_rec s;
    } u;
} tbio_rec;

typedef struct tbio_chunk {
    struct tbio_chunk *next;
    uint32_t n, cap;
    tbio_event ev[];
} tbio_chunk;

#define TBIO_OVER_EXAMPLES 8
#define TBIO_OVER_EXAMPLE_LEN 512

struct tbio_session {
    /* read by every traced call: gen .. dir[0..3] share the first cache line */
    uint64_t gen;
    uint64_t start_epoch;
    uint64_t t0_ticks;
    double sec_per_tick;
    _Atomic(tbio_rec **) dir[TBIO_FILE_DIRSZ];   /* file id -> record, blocks of 1024 */
    uint64_t t1_ticks;
    uint64_t t0_ns, t1_ns;
    _Atomic int64_t budget;     /* trace events that may still be reserved */
    tbio_registry *reg;         /* the file table its ids index (one reference) */
    pthread_mutex_t mu;         /* record allocation (taken only with the thread `in`) */
    char *arena;                /* records: bump allocation in mmap'ed blocks */
    size_t arena_left;
    void *arena_blocks;         /* list through each block's first word */
    uint32_t *touched;          /* ids with a record, in creation order (mmap'ed) */
    uint32_t ntouched, touched_cap;
    /* what did not fit the file table (counted by the wrappers, lock-free) */
    _Atomic uint64_t over_files, over_calls, over_read, over_written, reentrant;
    _Atomic uint32_t over_nex;
    uint16_t over_len[TBIO_OVER_EXAMPLES];
    char over_path[TBIO_OVER_EXAMPLES][TBIO_OVER_EXAMPLE_LEN];
    /* filled by tbio_end */
    uint32_t nfiles;
    uint32_t *files;            /* the ids the session names: records, then trace-only */
    uint32_t nthreads;
    tbio_thread_info *threads;
    tbio_chunk **thread_chunks;
    uint64_t nevents, dropped, trace_bytes;
    uint32_t ts_lg0;            /* base bin width of the threads' time series (log2 ticks) */
    uint32_t ts_nbins;          /* filled by tbio_end: bins from start to end */
    tbio_tsbins ts;             /* filled by tbio_end: every thread's bins merged */
};

/* Select session k of the post-call set if it was also recording when the call began. */
static inline int tbio_call_select(tbio_call *c, int k) {
    tbio_session *s = c->set->s[k];
    if (s->start_epoch > c->epoch) return 0;
    c->s = s;
    return 1;
}
/* Run the following statement once per session that saw the whole call. */
#define TBIO_EACH_SESSION(c) \
    for (int k_ = 0; k_ < (c)->set->n; k_++) \
        if (tbio_call_select((c), k_))

/* The record of a file in session s, created on first use (NULL: no memory, or no such file). */
TBIO_HIDDEN tbio_rec *tbio_rec_make(tbio_session *s, uint32_t file);
static inline tbio_rec *tbio_rec_get(tbio_session *s, uint32_t file) {
    if (UNLIKELY(file >= TBIO_MAX_FILES_LIMIT)) return NULL;   /* also TBIO_NO_FILE, TBIO_OVER_FILE */
    tbio_rec **blk = atomic_load_explicit(&s->dir[file >> 10], memory_order_acquire);
    tbio_rec *r = blk ? __atomic_load_n(&blk[file & 1023], __ATOMIC_ACQUIRE) : NULL;
    return LIKELY(r != NULL) ? r : tbio_rec_make(s, file);
}

/* A call on a file that did not fit the table (c->s selected): counted, not traced. */
static inline void tbio_count_over(tbio_call *c, int64_t read, int64_t written) {
    atomic_fetch_add_explicit(&c->s->over_calls, 1, memory_order_relaxed);
    if (read > 0) atomic_fetch_add_explicit(&c->s->over_read, (uint64_t)read, memory_order_relaxed);
    if (written > 0) atomic_fetch_add_explicit(&c->s->over_written, (uint64_t)written, memory_order_relaxed);
}
/* A path that did not fit the table, in every recording session (thread `in`). */
TBIO_HIDDEN void tbio_note_over_file(const char *path, size_t len);

/* Fill one trace row (the fast and the slow append path share it). */
static inline void tbio_event_put(tbio_event *e, uint64_t t0, uint64_t t1, int op, uint32_t file,
                                  int fd, int64_t offset, int64_t requested, int64_t returned, int err) {
    e->start_ns = t0;
    e->end_ns = t1;
    e->offset = offset;
    e->requested = requested;
    e->returned = returned;
    e->file = file;
    e->fd = fd;
    e->err = err;
    e->op = (uint16_t)op;
    e->thread = 0;
}

/* Append one trace row for session c->s, and count the call in this thread's
 * time-series bins for the session.  The common case (this thread's buffer
 * for the session has room) is inline; a thread's first call in a session
 * takes a slot (tbio_trace_slot_new: NULL when none is free, and the call is
 * not recorded), a full buffer grows in tbio_trace_add_slow. */
TBIO_HIDDEN tbio_tslot *tbio_trace_slot_new(tbio_call *c);
TBIO_HIDDEN void tbio_trace_add_slow(tbio_call *c, tbio_tslot *t, uint64_t t1, int op, uint32_t file, int fd,
                                     int64_t offset, int64_t requested, int64_t returned, int err);
/* rd, wr: the bytes the file's record counted for this call (0 when none),
 * added to the bins under module mod (TBIO_TS_POSIX, TBIO_TS_STDIO: a
 * constant at each call site; tbio_trace_add is the POSIX wrappers' form,
 * tbio_trace_add_mod the STDIO wrappers'). */
/* A call outside the slot's cached bin: find its bin (widening if needed) and cache it. */
TBIO_HIDDEN void tbio_ts_add_slot(tbio_tslot *t, int mod, uint64_t t0, uint64_t t1, int64_t rd, int64_t wr);
/* Inlined into every wrapper's accounting (a call out of line with eleven
 * arguments cost ~50 instructions a traced call). */
TBIO_INLINE void tbio_trace_add_mod(tbio_call *c, int mod, uint64_t t1, int op, uint32_t file, int fd,
                                    int64_t offset, int64_t requested, int64_t returned, int err,
                                    int64_t rd, int64_t wr) {
    uint64_t gen = c->s->gen;
    tbio_tslot *t = NULL;
    for (int i = 0; i < TBIO_MAX_SESSIONS; i++) {
        if (c->th->slot[i].gen == gen) {
            t = &c->th->slot[i];
            break;
        }
    }
    if (UNLIKELY(t == NULL) && (t = tbio_trace_slot_new(c)) == NULL) return;
    /* unsigned: a t0 before bin_lo wraps and misses too; bin_w 0 (no bin yet) always misses */
    if (LIKELY(c->t0 - t->bin_lo < t->bin_w)) tbio_tsbin_add(t->bin, mod, c->t0, t1, rd, wr);
    else tbio_ts_add_slot(t, mod, c->t0, t1, rd, wr);
    tbio_chunk *k = t->tail;
    if (UNLIKELY(!k || k->n == k->cap)) {
        tbio_trace_add_slow(c, t, t1, op, file, fd, offset, requested, returned, err);
        return;
    }
    tbio_event_put(&k->ev[k->n++], c->t0, t1, op, file, fd, offset, requested, returned, err);
}
TBIO_INLINE void tbio_trace_add(tbio_call *c, uint64_t t1, int op, uint32_t file, int fd,
                                int64_t offset, int64_t requested, int64_t returned, int err,
                                int64_t rd, int64_t wr) {
    tbio_trace_add_mod(c, TBIO_TS_POSIX, t1, op, file, fd, offset, requested, returned, err, rd, wr);
}
static inline double tbio_sec(const tbio_session *s, uint64_t t) {
    return (double)(int64_t)(t - s->t0_ticks) * s->sec_per_tick;
}
static inline void tbio_rec_lock(tbio_rec *r) {
    while (atomic_flag_test_and_set_explicit(&r->lock, memory_order_acquire)) {
        tbio_cpu_relax();
    }
}
static inline void tbio_rec_unlock(tbio_rec *r) {
    atomic_flag_clear_explicit(&r->lock, memory_order_release);
}
TBIO_HIDDEN void tbio_session_atfork_prepare(void);
TBIO_HIDDEN void tbio_session_atfork_parent(void);
TBIO_HIDDEN void tbio_session_atfork_child(void);

#endif
