/* Capture sessions: per-thread trace buffers, per-file records, what did
 * not fit, and tbio_end(), which frees nothing a wrapper still uses (the
 * protocol is in hot.h).  What a wrapper can reach allocates with mmap only
 * and takes a lock only with its thread `in`; the API blocks signals while it
 * holds one of those locks (hot.h, "Signals"). */
#include "shim.h"

#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

tbio_hot tbio_g_hot __attribute__((aligned(64))) = {.use_tsc = -1, .membarrier = -1};
static _Atomic uint64_t g_gen;
static _Atomic uint64_t g_trace_cap = 1000000;   /* events per session, default */
static pthread_mutex_t g_sess_mu = PTHREAD_MUTEX_INITIALIZER;  /* begin/end */
/* the thread list and its free list (taken by tbio_thread_new, never with a thread `in`) */
static pthread_mutex_t g_threads_mu = PTHREAD_MUTEX_INITIALIZER;
static tbio_thread *g_threads;
static tbio_thread *g_thread_free;
__thread tbio_thread *tbio_tl_thread __attribute__((tls_model("initial-exec")));
static __thread int tl_registering __attribute__((tls_model("initial-exec")));

/* ---- barrier: membarrier when the kernel has it, else a fence on the hot path ---- */
#if defined(__SANITIZE_THREAD__)
#define TBIO_TSAN 1
#endif

static void barrier_init(void) {
    if (tbio_g_membarrier != -1) return;
#ifdef TBIO_TSAN
    atomic_store(&tbio_g_hot.membarrier, 0);   /* TSan cannot see membarrier: use plain seq_cst fences */
#else
    long r = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
    atomic_store(&tbio_g_hot.membarrier, r == 0 ? 1 : 0);
#endif
}

static void slow_fence(void) {
    if (tbio_g_membarrier == 1) syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
}

/* The API holds locks the wrappers take too: a signal handler's I/O on the
 * same thread must wait until they are released. */
static void signals_block(sigset_t *old) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, old);
}
static void signals_restore(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

/* ---- threads ---- */
/* A thread's struct comes from an mmap'ed slab (64 per slab) and goes back
 * to a free list once the thread has exited and no session holds its trace
 * (tbio_end prunes), so the list publish() walks holds live threads only. */
#define THREAD_BYTES ((sizeof(tbio_thread) + 63) / 64 * 64)
#define SLAB_THREADS 64u

tbio_thread *tbio_thread_new(void) {
    tbio_thread *t = tbio_tl_thread;
    if (t) return t;
    if (tl_registering) return NULL;   /* a signal handler's call while this thread registers */
    tl_registering = 1;
    pthread_mutex_lock(&g_threads_mu);
    t = g_thread_free;
    if (t) {
        g_thread_free = t->next;
    } else {
        char *slab = tbio_map_unshared(SLAB_THREADS * THREAD_BYTES);
        if (slab) {
            for (uint32_t i = SLAB_THREADS - 1; i >= 1; i--) {
                tbio_thread *f = (tbio_thread *)(slab + i * THREAD_BYTES);
                f->next = g_thread_free;
                g_thread_free = f;
            }
            t = (tbio_thread *)slab;
        }
    }
    if (t) {
        memset(t, 0, sizeof *t);
        t->tid = tbio_gettid();
        t->pself = (uint64_t)pthread_self();
        prctl(PR_GET_NAME, t->comm, 0, 0, 0);
        t->next = g_threads;
        g_threads = t;
    }
    pthread_mutex_unlock(&g_threads_mu);
    tbio_tl_thread = t;
    tl_registering = 0;
    return t;
}

static int thread_alive(const tbio_thread *t) {
    return !(syscall(SYS_tgkill, (long)getpid(), (long)t->tid, 0) != 0 && errno == ESRCH);
}

/* Drop the structs of exited threads that hold no session's trace (g_threads_mu held). */
static void prune_threads(void) {
    int saved = errno;
    for (tbio_thread **pp = &g_threads; *pp;) {
        tbio_thread *t = *pp;
        int busy = atomic_load(&t->in);
        for (int j = 0; j < TBIO_MAX_SESSIONS; j++) busy |= t->slot[j].gen != 0;
        if (!busy && !thread_alive(t)) {
            *pp = t->next;
            t->next = g_thread_free;
            g_thread_free = t;
        } else {
            pp = &t->next;
        }
    }
    errno = saved;
}

void tbio_note_reentrant(void) {
    /* the interrupted code has this thread `in`: any set loaded now stays valid until it leaves */
    tbio_actset *set = atomic_load_explicit(&tbio_g_active, memory_order_acquire);
    for (int i = 0; set && i < set->n; i++)
        atomic_fetch_add_explicit(&set->s[i]->reentrant, 1, memory_order_relaxed);
}

void tbio_note_over_file(const char *path, size_t len) {
    tbio_actset *set = atomic_load_explicit(&tbio_g_active, memory_order_acquire);   /* thread `in` */
    for (int i = 0; set && i < set->n; i++) {
        tbio_session *s = set->s[i];
        atomic_fetch_add_explicit(&s->over_files, 1, memory_order_relaxed);
        uint32_t k = atomic_fetch_add_explicit(&s->over_nex, 1, memory_order_relaxed);
        if (k >= TBIO_OVER_EXAMPLES) continue;
        size_t n = len < TBIO_OVER_EXAMPLE_LEN ? len : TBIO_OVER_EXAMPLE_LEN;
        memcpy(s->over_path[k], path, n);
        s->over_len[k] = (uint16_t)n;
    }
}

/* ---- records ---- */
/* A pread or write updates the lock, the read/write state and the first
 * access-size entry (one line), counters at 5 spots of the Darshan-ordered
 * array (4 lines when it starts 16 bytes into a line) and 4 time counters (2
 * lines): 7 cache lines of the record per call. */
_Static_assert(offsetof(tbio_rec, u.p.access.e[1]) <= 64, "hot record state in the first line");
_Static_assert(offsetof(tbio_rec, u.p.counters) % 64 == 16, "counter array phase");
/* A record takes its module's part of the union only: a STDIO record is 320
 * bytes, not the 1,792 of a POSIX one (every np.load makes one of each; fewer
 * pages to fault in, in a short-lived DataLoader worker above all). */
#define REC_ROUND(n) (((n) + 63) / 64 * 64)
#define REC_BYTES REC_ROUND(sizeof(tbio_rec))
#define REC_BYTES_STDIO REC_ROUND(offsetof(tbio_rec, u) + sizeof(tbio_stdio_rec))
_Static_assert(REC_BYTES_STDIO <= REC_BYTES, "a STDIO record fits a POSIX one's room");
#define REC_BLOCK ((size_t)2 << 20)   /* records are carved from blocks; the first 64 bytes link them */
static tbio_rec g_trace_only;         /* dir mark (tbio_end): named by the trace only, no record */

static tbio_rec *rec_alloc(tbio_session *s, size_t bytes) {
    if (s->arena_left < bytes) {
        char *b = tbio_map_unshared(REC_BLOCK);
        if (!b) return NULL;
        *(void **)b = s->arena_blocks;
        s->arena_blocks = b;
        s->arena = b + 64;
        s->arena_left = REC_BLOCK - 64;
    }
    tbio_rec *r = (tbio_rec *)s->arena;   /* 64-byte aligned: see the layout notes above */
    s->arena += bytes;
    s->arena_left -= bytes;
    return r;
}

static int touched_push(tbio_session *s, uint32_t file) {
    if (s->ntouched == s->touched_cap) {
        uint32_t cap = s->touched_cap ? s->touched_cap * 2 : 1024;
        uint32_t *n = tbio_map_unshared(cap * sizeof *n);
        if (!n) return -1;
        if (s->touched) memcpy(n, s->touched, s->ntouched * sizeof *n);
        tbio_unmap(s->touched, s->touched_cap * sizeof *n);
        s->touched = n;
        s->touched_cap = cap;
    }
    s->touched[s->ntouched++] = file;
    return 0;
}

tbio_rec *tbio_rec_make(tbio_session *s, uint32_t file) {
    if (!tbio_tracked(file) || file >= TBIO_MAX_FILES_LIMIT) return NULL;
    const tbio_file *f = tbio_registry_file(s->reg, file);
    if (!f) return NULL;
    tbio_rec **blk;
    tbio_rec *r;
    pthread_mutex_lock(&s->mu);
    blk = atomic_load_explicit(&s->dir[file >> 10], memory_order_relaxed);
    if (!blk) {
        blk = tbio_map_unshared(1024 * sizeof *blk);
        if (!blk) { pthread_mutex_unlock(&s->mu); return NULL; }
        atomic_store_explicit(&s->dir[file >> 10], blk, memory_order_release);
    }
    r = blk[file & 1023];
    if (!r) {
        r = rec_alloc(s, f->module == TBIO_POSIX ? REC_BYTES : REC_BYTES_STDIO);   /* zero-filled by mmap, never reused */
        if (r && touched_push(s, file) == 0) {
            atomic_flag_clear(&r->lock);
            r->file = file;
            if (f->module == TBIO_POSIX)
                tbio_posix_rec_init(&r->u.p, atomic_load_explicit(&((tbio_file *)f)->blksize, memory_order_relaxed));
            else tbio_stdio_rec_init(&r->u.s);
            __atomic_store_n(&blk[file & 1023], r, __ATOMIC_RELEASE);
        } else {
            r = NULL;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return r;
}

/* ---- trace ---- */
/* Trace chunks grow 256, 512, ... events up to BIG_CAP.  Big chunks are 4 MiB,
 * 2 MiB-aligned and advised for transparent huge pages (one fault per 2 MiB
 * instead of per 4 KiB).  Every chunk of a growth-step size goes back to a
 * pool (one free list per size, POOL_BYTES in all) when its session is freed,
 * so the next capture writes to warm memory: a first touch costs ~2 us per
 * 4 KiB page on a VM, i.e. ~25 ns per 56-byte event.  Chunks are mmap'ed: a
 * wrapper may need one, and a wrapper never calls malloc. */
#define BIG_BYTES ((size_t)4 << 20)
#define BIG_ALIGN ((size_t)2 << 20)
#define BIG_CAP ((uint32_t)((BIG_BYTES - sizeof(tbio_chunk)) / sizeof(tbio_event)))
#define FIRST_CAP 256u
#define NCLASS 10                       /* 256 << 0..8, then BIG_CAP */
#define POOL_BYTES ((size_t)64 << 20)
_Static_assert((FIRST_CAP << (NCLASS - 2)) < BIG_CAP && (FIRST_CAP << (NCLASS - 1)) > BIG_CAP,
               "the growth steps below BIG_CAP are FIRST_CAP << 0 .. NCLASS - 2");
static pthread_mutex_t g_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static tbio_chunk *g_pool[NCLASS];
static size_t g_pool_bytes;

static size_t chunk_bytes(uint32_t cap) { return sizeof(tbio_chunk) + (size_t)cap * sizeof(tbio_event); }
static size_t chunk_mapped(uint32_t cap) { return cap == BIG_CAP ? BIG_BYTES : chunk_bytes(cap); }

/* Pool class of a chunk capacity, -1 for a capacity that is no growth step
 * (the last chunk of a session whose event budget ran out). */
static int chunk_class(uint32_t cap) {
    if (cap == BIG_CAP) return NCLASS - 1;
    for (int i = 0; i < NCLASS - 1; i++)
        if (cap == FIRST_CAP << i) return i;
    return -1;
}

static tbio_chunk *chunk_new(uint32_t cap) {
    tbio_chunk *k = NULL;
    int cls = chunk_class(cap);
    if (cls >= 0) {
        pthread_mutex_lock(&g_pool_mu);
        if (g_pool[cls]) {
            k = g_pool[cls];
            g_pool[cls] = k->next;
            g_pool_bytes -= chunk_mapped(cap);
        }
        pthread_mutex_unlock(&g_pool_mu);
    }
    if (!k && cap == BIG_CAP) {
        char *p = tbio_map_unshared(BIG_BYTES + BIG_ALIGN);
        if (!p) return NULL;
        char *a = (char *)(((uintptr_t)p + BIG_ALIGN - 1) & ~(uintptr_t)(BIG_ALIGN - 1));
        tbio_unmap(p, (size_t)(a - p));                                   /* trim to the alignment */
        tbio_unmap(a + BIG_BYTES, (size_t)(p + BIG_BYTES + BIG_ALIGN - (a + BIG_BYTES)));
        tbio_sys(SYS_madvise, (long)a, (long)BIG_BYTES, MADV_HUGEPAGE, 0, 0, 0);
        k = (tbio_chunk *)a;
    } else if (!k) {
        k = tbio_map_unshared(chunk_bytes(cap));
        if (!k) return NULL;
    }
    k->next = NULL;
    k->n = 0;
    k->cap = cap;
    return k;
}

static void chunk_free(tbio_chunk *k) {
    int cls = chunk_class(k->cap);
    if (cls >= 0) {
        pthread_mutex_lock(&g_pool_mu);
        if (g_pool_bytes + chunk_mapped(k->cap) <= POOL_BYTES) {
            k->next = g_pool[cls];
            g_pool[cls] = k;
            g_pool_bytes += chunk_mapped(k->cap);
            k = NULL;
        }
        pthread_mutex_unlock(&g_pool_mu);
    }
    if (k) tbio_unmap(k, chunk_mapped(k->cap));
}
static int64_t reserve(tbio_session *s, int64_t want) {
    int64_t have = atomic_load_explicit(&s->budget, memory_order_relaxed);
    while (have > 0) {
        int64_t take = have < want ? have : want;
        if (atomic_compare_exchange_weak(&s->budget, &have, have - take)) return take;
    }
    return 0;
}

#define TS_BYTES ((sizeof(tbio_tsbins) + 4095) / 4096 * 4096)
_Static_assert(offsetof(tbio_thread, slot[0].head) <= 64, "a traced call's thread state in one cache line");

void tbio_ts_add_slot(tbio_tslot *t, int mod, uint64_t t0, uint64_t t1, int64_t rd, int64_t wr) {
    tbio_tsbins *b = t->ts;
    if (!b) return;   /* no memory for the bins: bin_w stays 0 */
    tbio_tsbin *x = tbio_ts_bin(b, t0);   /* may widen every bin: the cached one moves too */
    tbio_tsbin_add(x, mod, t0, t1, rd, wr);
    uint64_t i = (uint64_t)(x - b->bin);
    t->bin = x;
    t->bin_lo = b->origin + (i << b->lg);
    t->bin_w = (uint64_t)1 << b->lg;
}

tbio_tslot *tbio_trace_slot_new(tbio_call *c) {
    /* a free slot (a slot's chunks are taken, and the slot freed, by its session's tbio_end) */
    tbio_tslot *t = NULL;
    for (int i = 0; i < TBIO_MAX_SESSIONS && !t; i++)
        if (c->th->slot[i].gen == 0) t = &c->th->slot[i];
    if (!t) return NULL;
    t->gen = c->s->gen;
    t->head = t->tail = NULL;
    t->dropped = 0;
    t->bin = NULL;
    t->bin_lo = t->bin_w = 0;   /* no bin yet: the first call finds one (tbio_ts_add_slot) */
    /* this thread's bins for the session: written by it alone, merged by tbio_end */
    t->ts = tbio_map_unshared(TS_BYTES);
    if (t->ts) {
        t->ts->origin = c->s->t0_ticks;
        t->ts->lg = c->s->ts_lg0;
    }
    return t;
}

void tbio_trace_add_slow(tbio_call *c, tbio_tslot *t, uint64_t t1, int op, uint32_t file, int fd, int64_t offset,
                         int64_t requested, int64_t returned, int err) {
    tbio_chunk *k = t->tail;
    if (UNLIKELY(!k || k->n == k->cap)) {
        int64_t want = k ? (int64_t)k->cap * 2 : FIRST_CAP;
        if (want > (int64_t)BIG_CAP) want = BIG_CAP;
        int64_t got = reserve(c->s, want);
        tbio_chunk *nk = got > 0 ? chunk_new((uint32_t)got) : NULL;
        if (!nk) {
            if (got > 0) atomic_fetch_add(&c->s->budget, got);
            t->dropped++;
            return;
        }
        if (k) k->next = nk;
        else t->head = nk;
        t->tail = k = nk;
    }
    tbio_event_put(&k->ev[k->n++], c->t0, t1, op, file, fd, offset, requested, returned, err);
}

/* ---- sessions ---- */
void tbio_set_trace_cap(uint64_t max_events) { atomic_store(&g_trace_cap, max_events); }
uint64_t tbio_get_trace_cap(void) { return atomic_load(&g_trace_cap); }

int tbio_active(void) {
    tbio_actset *a = atomic_load(&tbio_g_active);
    return a ? a->n : 0;
}

/* Publish a new active set and wait until no thread can still be reading the
 * old one (each thread is either outside the shim or has left it since);
 * then the old set, and any session it alone named, may be taken apart. */
static void publish(tbio_actset *next, tbio_actset *old) {
    atomic_store_explicit(&tbio_g_active, next, memory_order_seq_cst);
    slow_fence();
    pthread_mutex_lock(&g_threads_mu);
    for (tbio_thread *t = g_threads; t; t = t->next) {
        uint64_t seen = atomic_load_explicit(&t->seq, memory_order_acquire);
        while (atomic_load_explicit(&t->in, memory_order_seq_cst) &&
               atomic_load_explicit(&t->seq, memory_order_acquire) == seen)
            sched_yield();
    }
    pthread_mutex_unlock(&g_threads_mu);
    free(old);
}

tbio_session *tbio_begin(void) {
    tbio_clock_init();
    barrier_init();
    sigset_t sig;
    signals_block(&sig);
    pthread_mutex_lock(&g_sess_mu);
    tbio_actset *old = atomic_load(&tbio_g_active);
    if (old && old->n >= TBIO_MAX_SESSIONS) {
        pthread_mutex_unlock(&g_sess_mu);
        signals_restore(&sig);
        tbio_set_error("%d captures are already recording in this process (the most at once)",
                       TBIO_MAX_SESSIONS);
        return NULL;
    }
    tbio_session *s = aligned_alloc(64, (sizeof *s + 63) / 64 * 64);   /* hot fields: one line */
    tbio_actset *next = calloc(1, sizeof *next);
    if (s) memset(s, 0, sizeof *s);
    tbio_registry *reg = s && next ? tbio_registry_acquire() : NULL;
    if (!s || !next || !reg) {
        free(s);
        free(next);
        pthread_mutex_unlock(&g_sess_mu);
        signals_restore(&sig);
        tbio_set_error("out of memory");
        return NULL;
    }
    s->reg = reg;
    pthread_mutex_init(&s->mu, NULL);
    s->gen = atomic_fetch_add(&g_gen, 1) + 1;
    uint64_t cap = atomic_load(&g_trace_cap);
    atomic_store(&s->budget, cap > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)cap);
    tbio_clock_pair(&s->t0_ticks, &s->t0_ns);
    s->sec_per_tick = tbio_ns_per_tick() * 1e-9;
    s->ts_lg0 = tbio_ts_base_lg(tbio_ns_per_tick());
    s->ts.lg = s->ts_lg0;
    s->ts.origin = s->t0_ticks;
    if (old) *next = *old;
    next->s[next->n++] = s;
    s->start_epoch = atomic_fetch_add(&tbio_g_epoch, 1) + 1;
    publish(next, old);
    pthread_mutex_unlock(&g_sess_mu);
    signals_restore(&sig);
    return s;
}

/* The ids the session names: those with a record (in creation order), then
 * those only its trace names (failed calls), each once: a stop costs what
 * the window touched. */
static void list_files(tbio_session *s) {
    uint64_t extra = 0;
    for (uint32_t i = 0; i < s->nthreads; i++)
        for (tbio_chunk *k = s->thread_chunks[i]; k; k = k->next)
            for (uint32_t j = 0; j < k->n; j++) {
                uint32_t id = k->ev[j].file;
                if (!tbio_tracked(id)) continue;
                tbio_rec **blk = atomic_load(&s->dir[id >> 10]);
                if (!blk) {
                    blk = tbio_map_unshared(1024 * sizeof *blk);
                    if (!blk) continue;
                    atomic_store(&s->dir[id >> 10], blk);
                }
                if (blk[id & 1023]) continue;
                blk[id & 1023] = &g_trace_only;
                extra++;
            }
    s->files = malloc((s->ntouched + extra + 1) * sizeof *s->files);
    if (!s->files) return;
    if (s->ntouched) memcpy(s->files, s->touched, s->ntouched * sizeof *s->files);
    uint32_t n = s->ntouched;
    for (uint32_t i = 0; i < s->nthreads && extra; i++)
        for (tbio_chunk *k = s->thread_chunks[i]; k; k = k->next)
            for (uint32_t j = 0; j < k->n; j++) {
                uint32_t id = k->ev[j].file;
                if (!tbio_tracked(id)) continue;
                tbio_rec **blk = atomic_load(&s->dir[id >> 10]);
                if (!blk || blk[id & 1023] != &g_trace_only) continue;
                s->files[n++] = id;
                blk[id & 1023] = (tbio_rec *)&g_trace_only + 1;   /* listed */
            }
    s->nfiles = n;
}

static const tbio_rec *rec_of(const tbio_session *s, uint32_t id) {
    if (!tbio_tracked(id) || id >= TBIO_MAX_FILES_LIMIT) return NULL;
    tbio_rec **blk = atomic_load(&((tbio_session *)s)->dir[id >> 10]);
    tbio_rec *r = blk ? blk[id & 1023] : NULL;
    return r == &g_trace_only || r == &g_trace_only + 1 ? NULL : r;
}

tbio_session *tbio_end(tbio_session *s) {
    sigset_t sig;
    signals_block(&sig);
    pthread_mutex_lock(&g_sess_mu);
    tbio_actset *old = atomic_load(&tbio_g_active);
    int at = -1;
    for (int i = 0; old && i < old->n; i++)
        if (old->s[i] == s) at = i;
    if (!s || at < 0) {
        pthread_mutex_unlock(&g_sess_mu);
        signals_restore(&sig);
        tbio_set_error("that capture is not recording");
        return NULL;
    }
    tbio_actset *next = NULL;
    if (old->n > 1) {
        next = calloc(1, sizeof *next);
        if (!next) {
            pthread_mutex_unlock(&g_sess_mu);
            signals_restore(&sig);
            tbio_set_error("out of memory");
            return NULL;
        }
        for (int i = 0; i < old->n; i++)
            if (i != at) next->s[next->n++] = old->s[i];
    }
    tbio_clock_pair(&s->t1_ticks, &s->t1_ns);
    publish(next, old);
    /* nothing records now: the file table goes (s keeps its own reference) */
    if (!next) tbio_registry_retire();
    /* no thread is inside the accounting for s any more: take its chunks */
    pthread_mutex_lock(&g_threads_mu);
    uint32_t n = 0;
    for (tbio_thread *t = g_threads; t; t = t->next)
        for (int j = 0; j < TBIO_MAX_SESSIONS; j++) n += t->slot[j].gen == s->gen;
    s->threads = calloc(n ? n : 1, sizeof *s->threads);
    s->thread_chunks = calloc(n ? n : 1, sizeof *s->thread_chunks);
    uint32_t i = 0;
    for (tbio_thread *t = g_threads; t && s->threads && s->thread_chunks; t = t->next) {
        tbio_tslot *sl = NULL;
        for (int j = 0; j < TBIO_MAX_SESSIONS; j++)
            if (t->slot[j].gen == s->gen) sl = &t->slot[j];
        if (!sl) continue;
        tbio_thread_info *ti = &s->threads[i];
        ti->tid = t->tid;
        ti->pthread_self = t->pself;
        if (thread_alive(t)) {
            char p[64];
            snprintf(p, sizeof p, "/proc/self/task/%d/comm", (int)t->tid);
            size_t len = 0;
            char *name = tbio_read_file(p, &len);
            if (name && len > 0) {
                while (len > 0 && name[len - 1] == '\n') len--;
                if (len > 15) len = 15;
                memcpy(t->comm, name, len);
                t->comm[len] = 0;
            }
            free(name);
        }
        memcpy(ti->comm, t->comm, sizeof ti->comm);
        ti->nevents = 0;
        ti->dropped = sl->dropped;
        s->thread_chunks[i] = sl->head;
        for (tbio_chunk *k = sl->head; k; k = k->next) {
            for (uint32_t j = 0; j < k->n; j++) k->ev[j].thread = (uint16_t)(i < 65535 ? i : 65535);
            ti->nevents += k->n;
            s->trace_bytes += sizeof *k + (uint64_t)k->cap * sizeof(tbio_event);
        }
        s->nevents += ti->nevents;
        s->dropped += sl->dropped;
        if (sl->ts) {
            tbio_ts_merge(&s->ts, sl->ts);
            tbio_unmap(sl->ts, TS_BYTES);
        }
        memset(sl, 0, sizeof *sl);
        i++;
    }
    s->nthreads = i;
    /* the series covers the whole session, however long its last quiet stretch */
    uint64_t span = s->t1_ticks > s->t0_ticks ? s->t1_ticks - s->t0_ticks : 0;
    tbio_ts_rebin(&s->ts, tbio_ts_lg_for(&s->ts, span));
    uint64_t nb = (span >> s->ts.lg) + 1;
    for (uint32_t b = TBIO_TS_BINS; b > nb; b--)   /* a call that began after t1 was read */
        if (s->ts.bin[b - 1].calls) { nb = b; break; }
    s->ts_nbins = (uint32_t)(nb < TBIO_TS_BINS ? nb : TBIO_TS_BINS);
    prune_threads();
    pthread_mutex_unlock(&g_threads_mu);
    pthread_mutex_unlock(&g_sess_mu);
    signals_restore(&sig);
    list_files(s);
    return s;
}

void tbio_session_free(tbio_session *s) {
    if (!s) return;
    sigset_t sig;
    signals_block(&sig);
    for (uint32_t i = 0; i < s->nthreads; i++) {
        tbio_chunk *k = s->thread_chunks[i];
        while (k) {
            tbio_chunk *nx = k->next;
            chunk_free(k);
            k = nx;
        }
    }
    signals_restore(&sig);
    free(s->thread_chunks);
    free(s->threads);
    free(s->files);
    for (uint32_t d = 0; d < TBIO_FILE_DIRSZ; d++) tbio_unmap(atomic_load(&s->dir[d]), 1024 * sizeof(tbio_rec *));
    for (void *b = s->arena_blocks; b;) {
        void *nx = *(void **)b;
        tbio_unmap(b, REC_BLOCK);
        b = nx;
    }
    tbio_unmap(s->touched, s->touched_cap * sizeof *s->touched);
    tbio_registry_release(s->reg);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

uint64_t tbio_trace_bytes(void) {
    /* live figure: every thread's buffers for every recording session */
    uint64_t b = 0;
    sigset_t sig;
    signals_block(&sig);
    pthread_mutex_lock(&g_sess_mu);
    pthread_mutex_lock(&g_threads_mu);
    for (tbio_thread *t = g_threads; t; t = t->next)
        for (int j = 0; j < TBIO_MAX_SESSIONS; j++)
            for (tbio_chunk *k = t->slot[j].gen ? t->slot[j].head : NULL; k; k = k->next)
                b += sizeof *k + (uint64_t)k->cap * sizeof(tbio_event);
    pthread_mutex_unlock(&g_threads_mu);
    pthread_mutex_unlock(&g_sess_mu);
    signals_restore(&sig);
    return b;
}

uint32_t tbio_threads_held(void) {
    uint32_t n = 0;
    sigset_t sig;
    signals_block(&sig);
    pthread_mutex_lock(&g_threads_mu);
    for (tbio_thread *t = g_threads; t; t = t->next) n++;
    pthread_mutex_unlock(&g_threads_mu);
    signals_restore(&sig);
    return n;
}

/* ---- inspection ---- */
uint64_t tbio_session_start_ns(const tbio_session *s) { return s->t0_ns; }
uint64_t tbio_session_end_ns(const tbio_session *s) { return s->t1_ns; }
uint32_t tbio_session_nfiles(const tbio_session *s) { return s->nfiles; }
uint32_t tbio_session_nthreads(const tbio_session *s) { return s->nthreads; }
uint64_t tbio_session_nevents(const tbio_session *s) { return s->nevents; }
uint64_t tbio_session_dropped(const tbio_session *s) { return s->dropped; }

int tbio_session_file_by_id(const tbio_session *s, uint32_t id, tbio_file_info *out) {
    const tbio_file *f = tbio_registry_file(s->reg, id);
    if (!f) return -1;
    memset(out, 0, sizeof *out);
    out->id = id;
    out->module = f->module;
    out->path = f->path;
    out->path_len = f->len;
    out->record_id = f->hash;
    const tbio_rec *r = rec_of(s, id);
    if (r) {
        out->has_record = 1;
        out->counters = f->module == TBIO_POSIX ? r->u.p.counters : r->u.s.counters;
        out->fcounters = f->module == TBIO_POSIX ? r->u.p.fcounters : r->u.s.fcounters;
    }
    return 0;
}

int tbio_session_file(const tbio_session *s, uint32_t i, tbio_file_info *out) {
    if (i >= s->nfiles || !s->files) return -1;
    return tbio_session_file_by_id(s, s->files[i], out);
}

int tbio_session_files_size(const tbio_session *s, int module, int has_record, uint64_t *nrows,
                            uint64_t *path_bytes) {
    uint64_t n = 0, b = 0;
    if (!s) return -1;
    for (uint32_t i = 0; i < s->nfiles && s->files; i++) {
        const tbio_file *f = tbio_registry_file(s->reg, s->files[i]);
        if (!f || f->module != module || (rec_of(s, s->files[i]) != NULL) != (has_record != 0)) continue;
        n++;
        b += f->len;
    }
    if (nrows) *nrows = n;
    if (path_bytes) *path_bytes = b;
    return 0;
}

int tbio_session_files_used(const tbio_session *s, int module, uint8_t *used, uint8_t *fused) {
    if (!s || (module != TBIO_POSIX && module != TBIO_STDIO)) return -1;
    const size_t nc = module == TBIO_POSIX ? POSIX_NUM_INDICES : STDIO_NUM_INDICES;
    const size_t nf = module == TBIO_POSIX ? POSIX_F_NUM_INDICES : STDIO_F_NUM_INDICES;
    if (used) memset(used, 0, nc);
    if (fused) memset(fused, 0, nf);
    for (uint32_t i = 0; i < s->nfiles && s->files; i++) {
        const tbio_file *f = tbio_registry_file(s->reg, s->files[i]);
        const tbio_rec *r = f && f->module == module ? rec_of(s, s->files[i]) : NULL;
        if (!r) continue;
        const int64_t *c = module == TBIO_POSIX ? r->u.p.counters : r->u.s.counters;
        const double *fc = module == TBIO_POSIX ? r->u.p.fcounters : r->u.s.fcounters;
        for (size_t k = 0; used && k < nc; k++) used[k] |= c[k] != 0;
        for (size_t k = 0; fused && k < nf; k++) fused[k] |= fc[k] != 0.0;
    }
    return 0;
}

uint64_t tbio_session_copy_files(const tbio_session *s, int module, int has_record, uint64_t max,
                                 uint32_t *id, uint64_t *record_id, const int32_t *cols, uint32_t ncols,
                                 int64_t *counters, const int32_t *fcols, uint32_t nfcols,
                                 double *fcounters, uint64_t *path_end, char *path_data,
                                 uint64_t path_cap) {
    if (!s || (module != TBIO_POSIX && module != TBIO_STDIO)) return 0;
    const int32_t nc = module == TBIO_POSIX ? POSIX_NUM_INDICES : STDIO_NUM_INDICES;
    const int32_t nf = module == TBIO_POSIX ? POSIX_F_NUM_INDICES : STDIO_F_NUM_INDICES;
    for (uint32_t k = 0; k < ncols && cols; k++)
        if (cols[k] < 0 || cols[k] >= nc) return 0;
    for (uint32_t k = 0; k < nfcols && fcols; k++)
        if (fcols[k] < 0 || fcols[k] >= nf) return 0;
    uint64_t n = 0, b = 0;
    for (uint32_t i = 0; i < s->nfiles && s->files && n < max; i++) {
        uint32_t fid = s->files[i];
        const tbio_file *f = tbio_registry_file(s->reg, fid);
        if (!f || f->module != module) continue;
        const tbio_rec *r = rec_of(s, fid);
        if ((r != NULL) != (has_record != 0)) continue;
        if (path_data && b + f->len > path_cap) break;
        if (id) id[n] = fid;
        if (record_id) record_id[n] = f->hash;
        if (r && counters && cols) {
            const int64_t *c = module == TBIO_POSIX ? r->u.p.counters : r->u.s.counters;
            for (uint32_t k = 0; k < ncols; k++) counters[(uint64_t)cols[k] * max + n] = c[cols[k]];
        }
        if (r && fcounters && fcols) {
            const double *fc = module == TBIO_POSIX ? r->u.p.fcounters : r->u.s.fcounters;
            for (uint32_t k = 0; k < nfcols; k++) fcounters[(uint64_t)fcols[k] * max + n] = fc[fcols[k]];
        }
        if (path_data) memcpy(path_data + b, f->path, f->len);
        b += f->len;
        if (path_end) path_end[n] = b;
        n++;
    }
    return n;
}

int tbio_session_untracked(const tbio_session *s, tbio_untracked_info *out) {
    if (!s || !out) return -1;
    tbio_session *m = (tbio_session *)s;
    out->files = atomic_load(&m->over_files);
    out->calls = atomic_load(&m->over_calls);
    out->bytes_read = atomic_load(&m->over_read);
    out->bytes_written = atomic_load(&m->over_written);
    out->reentrant_calls = atomic_load(&m->reentrant);
    uint32_t n = atomic_load(&m->over_nex);
    out->nexamples = n < TBIO_OVER_EXAMPLES ? n : TBIO_OVER_EXAMPLES;
    return 0;
}

const char *tbio_session_untracked_path(const tbio_session *s, uint32_t i, size_t *len) {
    uint32_t n = atomic_load(&((tbio_session *)s)->over_nex);
    if (i >= n || i >= TBIO_OVER_EXAMPLES) return NULL;
    if (len) *len = s->over_len[i];
    return s->over_path[i];
}

int tbio_session_thread(const tbio_session *s, uint32_t i, tbio_thread_info *out) {
    if (i >= s->nthreads) return -1;
    *out = s->threads[i];
    return 0;
}

static uint64_t to_ns(const tbio_session *s, uint64_t ticks, double npt) {
    double d = (double)(int64_t)(ticks - s->t0_ticks) * npt;
    int64_t off = (int64_t)(d < 0 ? d - 0.5 : d + 0.5);
    uint64_t ns = (uint64_t)((int64_t)s->t0_ns + off);
    /* Every event lies between the session's t0 and t1 tick reads, but each
     * (ticks, ns) pair is read a few ns apart and, in a short session, the
     * calibrated rate is used rather than the pair's: a row ending just
     * before tbio_end() could land ~100 ns past end_ns.  Keep rows inside
     * the window they belong to. */
    if (ns < s->t0_ns) ns = s->t0_ns;
    if (s->t1_ns >= s->t0_ns && ns > s->t1_ns) ns = s->t1_ns;
    return ns;
}

/* ns per tick of a session: interpolated between its own (ticks, ns) pairs
 * when it lasted long enough to calibrate on them */
static double session_npt(const tbio_session *s) {
    double npt = tbio_ns_per_tick();
    if (s->t1_ticks > s->t0_ticks && s->t1_ns > s->t0_ns + 20000000u)
        npt = (double)(s->t1_ns - s->t0_ns) / (double)(s->t1_ticks - s->t0_ticks);
    return npt;
}

int tbio_session_timeseries(const tbio_session *s, tbio_timeseries_info *info, uint64_t *bytes_read,
                            uint64_t *bytes_written, uint64_t *calls, double *io_time_s, uint32_t max) {
    if (!s || !info) return -1;
    double npt = session_npt(s);
    info->start_ns = s->t0_ns;
    info->bin_ns = (double)((uint64_t)1 << s->ts.lg) * npt;
    info->nbins = s->ts_nbins;
    for (uint32_t i = 0; i < s->ts_nbins && i < max; i++) {
        const tbio_tsbin *b = &s->ts.bin[i];
        if (bytes_read) bytes_read[i] = b->io[TBIO_TS_POSIX].read + b->io[TBIO_TS_STDIO].read;
        if (bytes_written) bytes_written[i] = b->io[TBIO_TS_POSIX].written + b->io[TBIO_TS_STDIO].written;
        if (calls) calls[i] = b->calls;
        if (io_time_s) io_time_s[i] = (double)b->ticks * npt * 1e-9;
    }
    return 0;
}

int tbio_session_timeseries_module(const tbio_session *s, int module, uint64_t *bytes_read,
                                   uint64_t *bytes_written, uint32_t max) {
    if (!s || module < 0 || module >= TBIO_TS_MODS) return -1;
    for (uint32_t i = 0; i < s->ts_nbins && i < max; i++) {
        if (bytes_read) bytes_read[i] = s->ts.bin[i].io[module].read;
        if (bytes_written) bytes_written[i] = s->ts.bin[i].io[module].written;
    }
    return 0;
}

uint64_t tbio_session_copy_events(const tbio_session *s, tbio_event *out, uint64_t max) {
    /* ticks -> CLOCK_REALTIME ns */
    double npt = session_npt(s);
    uint64_t n = 0;
    for (uint32_t i = 0; i < s->nthreads; i++) {
        for (tbio_chunk *k = s->thread_chunks[i]; k; k = k->next) {
            for (uint32_t j = 0; j < k->n && n < max; j++, n++) {
                out[n] = k->ev[j];
                out[n].start_ns = to_ns(s, k->ev[j].start_ns, npt);
                out[n].end_ns = to_ns(s, k->ev[j].end_ns, npt);
            }
        }
    }
    return n;
}

/* ---- fork ---- */
/* The session memory is zero-filled in the child (tbio_map_unshared): from here
 * until the child's handler has run, a call the forking thread makes (a signal
 * handler's) finds no thread struct and may not register one, so it passes
 * straight through instead of following pointers into memory the child has
 * only as zeros. */
static __thread tbio_thread *tl_fork_saved __attribute__((tls_model("initial-exec")));
static __thread int tl_fork_registering __attribute__((tls_model("initial-exec")));

void tbio_session_atfork_prepare(void) {
    pthread_mutex_lock(&g_sess_mu);
    pthread_mutex_lock(&g_threads_mu);
    /* a thread may be taking a chunk from (or giving one back to) the pool: the
     * child must not inherit a held lock or a half-linked free list */
    pthread_mutex_lock(&g_pool_mu);
    tl_fork_saved = tbio_tl_thread;
    tl_fork_registering = tl_registering;
    tl_registering = 1;
    tbio_tl_thread = NULL;
}

void tbio_session_atfork_parent(void) {
    tbio_tl_thread = tl_fork_saved;
    tl_registering = tl_fork_registering;
    pthread_mutex_unlock(&g_pool_mu);
    pthread_mutex_unlock(&g_threads_mu);
    pthread_mutex_unlock(&g_sess_mu);
}

void tbio_session_atfork_child(void) {
    /* The child records nothing until it starts its own capture: the parent's
     * session (and its counts) stay with the parent.  Other threads do not
     * exist in the child; forget them, and this thread's buffers. */
    pthread_mutex_init(&g_sess_mu, NULL);
    pthread_mutex_init(&g_threads_mu, NULL);
    pthread_mutex_init(&g_pool_mu, NULL);
    atomic_store(&tbio_g_active, NULL);
    g_threads = NULL;       /* the parent's thread structs, chunks and records: zeros here */
    g_thread_free = NULL;
    memset(g_pool, 0, sizeof g_pool);
    g_pool_bytes = 0;
    tbio_tl_thread = NULL;
    tl_fork_saved = NULL;
    tl_registering = 0;
    atomic_store(&tbio_g_hot.membarrier, -1);
    barrier_init();
}
