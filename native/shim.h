/* Internal declarations shared by the shim's C files. */
#ifndef TBIO_SHIM_H
#define TBIO_SHIM_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <pthread.h>
#include <sys/types.h>
#include "tbio.h"
#include "counters.h"

#define TBIO_HIDDEN __attribute__((visibility("hidden")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

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

/* ---- the globals every traced call reads, in one cache line ----
 * (a traced call is a few hundred ns apart from the next: under load its
 * lines are often evicted in between, and each line is a miss to pay) */
struct tbio_actset;
typedef struct tbio_fdent tbio_fdent;
#define TBIO_FD_DIRBITS 10u
typedef struct tbio_hot {
    _Atomic(struct tbio_actset *) active;   /* the sessions recording now, NULL when idle */
    _Atomic uint64_t epoch;                 /* bumped by every tbio_begin (session.c) */
    int use_tsc;                            /* 1: ticks are the TSC / generic timer (sys.c) */
    int membarrier;                         /* 1: membarrier(2) orders the hot path, 0: fences */
    _Atomic(tbio_fdent *) fds[1u << TBIO_FD_DIRBITS];   /* fd table directory (registry.c) */
} tbio_hot;
TBIO_HIDDEN extern tbio_hot tbio_g_hot;
#define tbio_g_active (tbio_g_hot.active)
#define tbio_g_epoch (tbio_g_hot.epoch)
#define tbio_g_use_tsc (tbio_g_hot.use_tsc)
#define tbio_g_membarrier (tbio_g_hot.membarrier)
#define tbio_g_fds (tbio_g_hot.fds)

/* ---- clock ---- */
TBIO_HIDDEN uint64_t tbio_realtime_ns(void);
/* A cheap tick counter (calibrated against CLOCK_REALTIME by tbio_clock_init). */
static inline uint64_t tbio_ticks(void) {
#if defined(__x86_64__) || defined(__i386__)
    if (LIKELY(tbio_g_use_tsc == 1)) return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
    if (LIKELY(tbio_g_use_tsc == 1)) {
        uint64_t v;
        __asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v));
        return v;
    }
#endif
    return tbio_realtime_ns();
}
TBIO_HIDDEN void tbio_clock_init(void);
TBIO_HIDDEN double tbio_ns_per_tick(void);
TBIO_HIDDEN void tbio_clock_pair(uint64_t *ticks, uint64_t *ns);

/* ---- file registry: (path, module) -> id, never freed ---- */
enum { TBIO_POSIX = 0, TBIO_STDIO = 1 };
#define TBIO_NO_FILE 0xffffffffu
typedef struct tbio_file {
    struct tbio_file *next;     /* hash chain */
    uint32_t id;
    int module;
    uint64_t hash;              /* Darshan record id of the path (tbio_record_id) */
    int64_t blksize;            /* file system block size, 0 unknown */
    size_t len;
    char path[];
} tbio_file;
TBIO_HIDDEN uint32_t tbio_file_intern(const char *path, size_t len, int module);
TBIO_HIDDEN const tbio_file *tbio_file_get(uint32_t id);
TBIO_HIDDEN uint32_t tbio_file_count(void);
TBIO_HIDDEN void tbio_file_set_blksize(uint32_t id, int64_t blksize);
TBIO_HIDDEN int tbio_path_traced(const char *abs, size_t len);
/* Absolute, cleaned path of `path` relative to dirfd (AT_FDCWD or a directory fd). */
TBIO_HIDDEN size_t tbio_abspath(int dirfd, const char *path, char *out, size_t cap);
TBIO_HIDDEN void tbio_registry_atfork_prepare(void);
TBIO_HIDDEN void tbio_registry_atfork_parent(void);
TBIO_HIDDEN void tbio_registry_atfork_child(void);

/* ---- fd table: fd -> file ids ---- */
/* state: 0 unknown, 1 untracked, id + 2 tracked */
#define TBIO_FD_UNKNOWN 0u
#define TBIO_FD_UNTRACKED 1u
/* fd -> entry: a directory (tbio_g_fds) of 1024 blocks of 1024 entries, blocks made on first use */
struct tbio_fdent {
    _Atomic uint32_t posix;   /* TBIO_FD_* state or id + 2 */
    _Atomic uint32_t stdio;
    _Atomic(FILE *) fp;
};
TBIO_HIDDEN uint32_t tbio_fd_posix_slow(int fd);
/* file id or TBIO_NO_FILE (resolves unknown lazily); a known fd is an inline lookup */
static inline uint32_t tbio_fd_posix(int fd) {
    if (LIKELY((unsigned)fd < (1u << (2 * TBIO_FD_DIRBITS)))) {
        tbio_fdent *blk = atomic_load_explicit(&tbio_g_fds[(unsigned)fd >> TBIO_FD_DIRBITS],
                                               memory_order_acquire);
        if (LIKELY(blk != NULL)) {
            uint32_t st = atomic_load_explicit(&blk[(unsigned)fd & ((1u << TBIO_FD_DIRBITS) - 1)].posix,
                                               memory_order_acquire);
            if (LIKELY(st >= 2)) return st - 2;
            if (st == TBIO_FD_UNTRACKED) return TBIO_NO_FILE;
        }
    }
    return tbio_fd_posix_slow(fd);
}
TBIO_HIDDEN void tbio_fd_set_posix(int fd, uint32_t id);  /* id or TBIO_NO_FILE (untracked) */
TBIO_HIDDEN void tbio_fd_forget(int fd);
TBIO_HIDDEN void tbio_fd_forget_range(unsigned first, unsigned last);
TBIO_HIDDEN uint32_t tbio_fp_stdio(FILE *fp);      /* resolves unknown streams lazily */
TBIO_HIDDEN void tbio_fp_set(FILE *fp, uint32_t id);
TBIO_HIDDEN void tbio_fp_forget(FILE *fp);
TBIO_HIDDEN void tbio_fd_scan_existing(void);

/* ---- sessions, threads, trace ---- */
typedef struct tbio_rec {       /* allocated 64-byte aligned (tbio_rec_make) */
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

/* At most this many captures record at once (e.g. a whole-run record, a
 * TensorFlow profile window and a user capture()). */
#define TBIO_MAX_SESSIONS 4

typedef struct tbio_tslot {     /* one thread's trace for one session */
    uint64_t gen;               /* 0 = free */
    tbio_chunk *head, *tail;
    uint64_t nevents, dropped;
} tbio_tslot;

typedef struct tbio_thread {
    /* what a traced call touches first: with one session, one cache line
     * (the struct is allocated 64-byte aligned) */
    _Atomic int in;             /* inside the shim's own code (guard + in-flight marker) */
    _Atomic uint64_t seq;       /* bumped each time the thread leaves the shim */
    tbio_tslot slot[TBIO_MAX_SESSIONS];
    struct tbio_thread *next;
    _Atomic int alive;
    pid_t tid;
    uint64_t pself;
    char comm[16];
} tbio_thread;

struct tbio_session {
    /* read by every traced call: gen .. dir[0..3] share the first cache line */
    uint64_t gen;
    uint64_t start_epoch;
    uint64_t t0_ticks;
    double sec_per_tick;
    _Atomic(tbio_rec **) dir[1024];   /* file id -> record, 1024 x 1024 */
    uint64_t t1_ticks;
    uint64_t t0_ns, t1_ns;
    _Atomic int64_t budget;     /* trace events that may still be reserved */
    pthread_mutex_t mu;         /* record allocation */
    /* filled by tbio_end */
    uint32_t nfiles;
    uint32_t nthreads;
    tbio_thread_info *threads;
    tbio_chunk **thread_chunks;
    uint64_t nevents, dropped, trace_bytes;
};

/* The sessions recording now; replaced (never changed in place) by
 * begin/end, and freed only once no thread can still be reading it. */
typedef struct tbio_actset {
    int n;
    tbio_session *s[TBIO_MAX_SESSIONS];
} tbio_actset;

/* tbio_g_active: the set recording now.  tbio_g_epoch: bumped by every
 * tbio_begin before it publishes; a session records a call only if it began
 * before the call did (its start_epoch <= the call's epoch). */

/* The per-call context a wrapper carries across the real call. */
typedef struct tbio_call {
    tbio_session *s;            /* the session being accounted (inside TBIO_EACH_SESSION) */
    tbio_actset *set;           /* valid between tbio_call_post and tbio_call_leave */
    tbio_thread *th;
    uint64_t t0;
    uint64_t epoch;             /* tbio_g_epoch when the call began */
} tbio_call;

/* The hot path below is inline (one call fewer per step, and the compiler
 * sees through the wrappers' constant arguments); the protocol is described
 * at the top of session.c. */
TBIO_HIDDEN extern __thread tbio_thread *tbio_tl_thread __attribute__((tls_model("initial-exec")));
TBIO_HIDDEN tbio_thread *tbio_thread_new(void);   /* first call on a thread */

static inline tbio_thread *tbio_thread_self(void) {
    tbio_thread *t = tbio_tl_thread;
    return LIKELY(t != NULL) ? t : tbio_thread_new();
}

/* Enter the shim: 1 when a call may be recorded (recursion guard checked), else 0.
 * Nothing is dereferenced yet, so the thread need not mark itself in the shim. */
static inline int tbio_call_pre(tbio_call *c) {
    tbio_thread *t = tbio_thread_self();
    if (UNLIKELY(!t)) return 0;
    /* a signal handler doing I/O while this thread is inside the shim's accounting */
    if (atomic_load_explicit(&t->in, memory_order_relaxed)) return 0;
    c->epoch = atomic_load_explicit(&tbio_g_epoch, memory_order_acquire);
    c->th = t;
    c->s = NULL;
    c->set = NULL;
    c->t0 = tbio_ticks();
    return 1;
}

/* Mark this thread inside the shim, then load the session pointer.  With
 * membarrier the store needs no hardware fence (tbio_end issues one on every
 * thread); without it the store and load are sequentially consistent. */
static inline tbio_actset *tbio_enter_and_load(tbio_thread *t) {
    if (LIKELY(tbio_g_membarrier == 1)) {
        atomic_store_explicit(&t->in, 1, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
        return atomic_load_explicit(&tbio_g_active, memory_order_acquire);
    }
    atomic_store_explicit(&t->in, 1, memory_order_seq_cst);
    return atomic_load_explicit(&tbio_g_active, memory_order_seq_cst);
}

static inline void tbio_call_leave(tbio_call *c) {
    tbio_thread *t = c->th;
    /* only this thread writes seq: no locked read-modify-write needed */
    atomic_store_explicit(&t->seq, atomic_load_explicit(&t->seq, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    atomic_store_explicit(&t->in, 0, memory_order_release);
}

/* Re-enter after the real call: 1 when a session records (guard held, c->set valid). */
static inline int tbio_call_post(tbio_call *c, uint64_t *t1) {
    *t1 = tbio_ticks();
    tbio_actset *set = tbio_enter_and_load(c->th);
    if (!set) {
        tbio_call_leave(c);
        return 0;
    }
    c->set = set;
    return 1;
}

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
    if (UNLIKELY(file >= 1024u * 1024u)) return NULL;   /* also TBIO_NO_FILE */
    tbio_rec **blk = atomic_load_explicit(&s->dir[file >> 10], memory_order_acquire);
    tbio_rec *r = blk ? __atomic_load_n(&blk[file & 1023], __ATOMIC_ACQUIRE) : NULL;
    return LIKELY(r != NULL) ? r : tbio_rec_make(s, file);
}

/* Fill one trace row (the fast and the slow append path share it). */
static inline void tbio_event_put(tbio_tslot *t, tbio_event *e, uint64_t t0, uint64_t t1, int op, uint32_t file,
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
    t->nevents++;
}

/* Append one trace row for session c->s.  The common case (this thread's
 * buffer for the session has room) is inline; the rest is tbio_trace_add_slow. */
TBIO_HIDDEN void tbio_trace_add_slow(tbio_call *c, uint64_t t1, int op, uint32_t file, int fd,
                                     int64_t offset, int64_t requested, int64_t returned, int err);
static inline void tbio_trace_add(tbio_call *c, uint64_t t1, int op, uint32_t file, int fd,
                                  int64_t offset, int64_t requested, int64_t returned, int err) {
    uint64_t gen = c->s->gen;
    tbio_tslot *t = NULL;
    for (int i = 0; i < TBIO_MAX_SESSIONS; i++) {
        if (c->th->slot[i].gen == gen) {
            t = &c->th->slot[i];
            break;
        }
    }
    tbio_chunk *k = t ? t->tail : NULL;
    if (UNLIKELY(!k || k->n == k->cap)) {
        tbio_trace_add_slow(c, t1, op, file, fd, offset, requested, returned, err);
        return;
    }
    tbio_event_put(t, &k->ev[k->n++], c->t0, t1, op, file, fd, offset, requested, returned, err);
}
static inline double tbio_sec(const tbio_session *s, uint64_t t) {
    return (double)(int64_t)(t - s->t0_ticks) * s->sec_per_tick;
}
static inline void tbio_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
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
