/* What every traced call touches: the hot globals, the clock and the call
 * protocol between the wrappers and tbio_begin/tbio_end.
 *
 * Call protocol.  A wrapper first checks tbio_g_active (idle: NULL) and, when
 * idle, calls the real function and nothing else: no lookup, no lock, no
 * allocation, no extra system call.  When recording, it takes a tick count
 * (tbio_call_pre), runs the real call, then marks its thread `in` (a relaxed
 * store), loads the active set (tbio_call_post), does its accounting and
 * clears `in` (tbio_call_leave).  tbio_end() replaces the set, issues a
 * process-wide memory barrier (membarrier(2), so the hot path needs no fence
 * of its own), then waits until no thread is `in` with the old set: only then
 * is anything of the old set freed.  A thread is `in` only around the shim's
 * own work, never across the real call, so a read blocked on a pipe never
 * stalls tbio_end().
 *
 * Signals.  `in` is also the re-entrancy guard: every lock a wrapper takes and
 * every table it grows is taken or grown with `in` set, so a signal handler
 * whose I/O interrupts that work finds `in` set and passes straight through
 * to the real call (counted per session as re-entrant, untraced).  Nothing a
 * wrapper does calls malloc: tables and buffers come from mmap(2), a system
 * call, so a handler that interrupts the allocator cannot deadlock in it.  The
 * API (tbio_begin, tbio_end, ...) blocks signals while it holds a lock the
 * wrappers also take. */
#ifndef TBIO_HOT_H
#define TBIO_HOT_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <pthread.h>
#include <sys/types.h>
#include "tbio.h"

#define TBIO_HIDDEN __attribute__((visibility("hidden")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
/* For the few helpers of the traced path that the compiler would otherwise
 * call out of line (many arguments, inlined into many wrappers). */
#define TBIO_INLINE static inline __attribute__((always_inline))

/* ---- the globals every traced call reads, in one cache line ----
 * (a traced call is a few hundred ns apart from the next: under load its
 * lines are often evicted in between, and each line is a miss to pay) */
struct tbio_actset;
typedef struct tbio_fdent tbio_fdent;
#define TBIO_FD_DIRBITS 10u
typedef struct tbio_hot {
    _Atomic(struct tbio_actset *) active;   /* the sessions recording now, NULL when idle */
    _Atomic uint64_t epoch;                 /* bumped by every tbio_begin (session.c) */
    _Atomic int use_tsc;                    /* 1: ticks are the TSC / generic timer (sys.c) */
    _Atomic int membarrier;                 /* 1: membarrier(2) orders the hot path, 0: fences */
    _Atomic(tbio_fdent *) fds[1u << TBIO_FD_DIRBITS];   /* fd table directory (registry.c) */
} tbio_hot;
TBIO_HIDDEN extern tbio_hot tbio_g_hot;
#define tbio_g_active (tbio_g_hot.active)
#define tbio_g_epoch (tbio_g_hot.epoch)
/* set once by their init functions (atomics: another thread may init at the same time) */
#define tbio_g_use_tsc atomic_load_explicit(&tbio_g_hot.use_tsc, memory_order_relaxed)
#define tbio_g_membarrier atomic_load_explicit(&tbio_g_hot.membarrier, memory_order_relaxed)
#define tbio_g_fds (tbio_g_hot.fds)

/* ---- clock ---- */
TBIO_HIDDEN uint64_t tbio_realtime_ns(void);
/* A cheap tick counter (calibrated against CLOCK_REALTIME by tbio_clock_init). */
/* The TSC / generic timer itself (0 where there is none: tbio_clock_init never picks it). */
static inline uint64_t tbio_tsc(void) {
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return 0;
#endif
}
static inline uint64_t tbio_ticks(void) {
    if (LIKELY(tbio_g_use_tsc == 1)) return tbio_tsc();
    return tbio_realtime_ns();
}
TBIO_HIDDEN void tbio_clock_init(void);
TBIO_HIDDEN double tbio_ns_per_tick(void);
TBIO_HIDDEN void tbio_clock_pair(uint64_t *ticks, uint64_t *ns);

/* ---- threads ---- */
/* The longest path a recorded call names (PATH_MAX, the terminating NUL included). */
#define TBIO_PATH_BUF 4096
/* At most this many captures record at once (e.g. a whole-run record, a
 * TensorFlow profile window and a user capture()). */
#define TBIO_MAX_SESSIONS 4

struct tbio_chunk;
struct tbio_tsbin;
struct tbio_tsbins;
typedef struct tbio_tslot {     /* one thread's trace for one session */
    /* what every traced call reads and writes (40 bytes) */
    uint64_t gen;               /* 0 = free */
    struct tbio_chunk *tail;
    struct tbio_tsbin *bin;     /* the time-series bin of this thread's last call ... */
    uint64_t bin_lo, bin_w;     /* ... and its ticks [bin_lo, bin_lo + bin_w); bin_w 0: look it up */
    /* the first call, a full chunk, tbio_end */
    struct tbio_chunk *head;
    uint64_t dropped;
    struct tbio_tsbins *ts;     /* its time-series bins (timeseries.h), NULL: no memory */
} tbio_tslot;

typedef struct tbio_thread {    /* 64-byte aligned, from an mmap'ed slab (session.c) */
    /* what a traced call touches first: with one session, one cache line */
    _Atomic int in;             /* inside the shim's own code (guard + in-flight marker) */
    _Atomic uint64_t seq;       /* bumped each time the thread leaves the shim */
    tbio_tslot slot[TBIO_MAX_SESSIONS];
    struct tbio_thread *next;
    pid_t tid;
    uint64_t pself;
    char comm[16];
    /* Where the recorded call names its path (cleaned absolute path, /proc
     * link target): here, not on the stack, so a signal handler's I/O on a
     * small sigaltstack does not overflow it (4 KB more a frame).  Used only
     * with the thread `in`, so a handler's call never reaches it meanwhile. */
    char path[TBIO_PATH_BUF];
} tbio_thread;

/* The sessions recording now; replaced (never changed in place) by
 * begin/end, and freed only once no thread can still be reading it. */
typedef struct tbio_session tbio_session;
typedef struct tbio_actset {
    int n;
    tbio_session *s[TBIO_MAX_SESSIONS];
} tbio_actset;

/* The per-call context a wrapper carries across the real call. */
typedef struct tbio_call {
    tbio_session *s;            /* the session being accounted (inside TBIO_EACH_SESSION) */
    tbio_actset *set;           /* valid between tbio_call_post and tbio_call_leave */
    tbio_thread *th;
    uint64_t t0;
    uint64_t epoch;             /* tbio_g_epoch when the call began */
} tbio_call;

TBIO_HIDDEN extern __thread tbio_thread *tbio_tl_thread __attribute__((tls_model("initial-exec")));
TBIO_HIDDEN tbio_thread *tbio_thread_new(void);   /* first call on a thread; NULL: pass through */
/* A call that found its thread already inside the shim (a signal handler's
 * I/O): counted in every recording session, never traced. */
TBIO_HIDDEN void tbio_note_reentrant(void);

static inline tbio_thread *tbio_thread_self(void) {
    tbio_thread *t = tbio_tl_thread;
    return LIKELY(t != NULL) ? t : tbio_thread_new();
}

/* Enter the shim: 1 when a call may be recorded (re-entrancy guard checked), else 0.
 * Nothing is dereferenced yet, so the thread need not mark itself in the shim. */
static inline int tbio_call_pre(tbio_call *c) {
    tbio_thread *t = tbio_thread_self();
    if (UNLIKELY(!t)) return 0;
    /* a signal handler doing I/O while this thread is inside the shim's accounting */
    if (UNLIKELY(atomic_load_explicit(&t->in, memory_order_relaxed))) {
        tbio_note_reentrant();
        return 0;
    }
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

static inline void tbio_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif
