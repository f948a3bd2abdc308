/* Capture sessions: per-thread trace buffers, per-file records, and the
 * in-flight protocol that lets tbio_end() free nothing a wrapper still uses.
 *
 * Hot path protocol: a wrapper marks its thread `in` (relaxed store), then
 * loads the session pointer.  tbio_end() clears the pointer, issues a
 * process-wide memory barrier (membarrier(2), so the hot path needs no fence
 * of its own), then waits until no thread is `in`.  A thread is `in` only
 * around the shim's own work, never across the real call, so a read blocked
 * on a pipe never stalls tbio_end(). */
#include "shim.h"

#include <errno.h>
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
static pthread_mutex_t g_threads_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(tbio_thread *) g_threads;
static pthread_key_t g_thread_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
__thread tbio_thread *tbio_tl_thread __attribute__((tls_model("initial-exec")));

/* ---- barrier: membarrier when the kernel has it, else a fence on the hot path ---- */
#if defined(__SANITIZE_THREAD__)
#define TBIO_TSAN 1
#endif

static void barrier_init(void) {
    if (tbio_g_membarrier != -1) return;
#ifdef TBIO_TSAN
    tbio_g_membarrier = 0;   /* TSan cannot see membarrier: use plain seq_cst fences */
#else
    long r = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0);
    tbio_g_membarrier = r == 0 ? 1 : 0;
#endif
}

static void slow_fence(void) {
    if (tbio_g_membarrier == 1) syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
}

/* ---- threads ---- */
static void thread_exit(void *p) {
    tbio_thread *t = p;
    if (t) atomic_store_explicit(&t->alive, 0, memory_order_release);
}

static void make_key(void) { pthread_key_create(&g_thread_key, thread_exit); }

tbio_thread *tbio_thread_new(void) {
    tbio_thread *t = tbio_tl_thread;
    if (t) return t;
    pthread_once(&g_key_once, make_key);
    t = aligned_alloc(64, (sizeof *t + 63) / 64 * 64);
    if (!t) return NULL;
    memset(t, 0, sizeof *t);
    t->tid = tbio_gettid();
    t->pself = (uint64_t)pthread_self();
    prctl(PR_GET_NAME, t->comm, 0, 0, 0);
    atomic_store(&t->alive, 1);
    pthread_mutex_lock(&g_threads_mu);
    t->next = atomic_load_explicit(&g_threads, memory_order_relaxed);
    atomic_store_explicit(&g_threads, t, memory_order_release);
    pthread_mutex_unlock(&g_threads_mu);
    pthread_setspecific(g_thread_key, t);
    tbio_tl_thread = t;
    return t;
}

/* ---- records ---- */
/* A pread or write updates the lock, the read/write state and the first
 * access-size entry (one line), counters at 5 spots of the Darshan-ordered
 * array (4 lines when it starts 16 bytes into a line) and 4 time counters (2
 * lines): 7 cache lines of the record per call. */
_Static_assert(offsetof(tbio_rec, u.p.access.e[1]) <= 64, "hot record state in the first line");
_Static_assert(offsetof(tbio_rec, u.p.counters) % 64 == 16, "counter array phase");
tbio_rec *tbio_rec_make(tbio_session *s, uint32_t file) {
    if (file == TBIO_NO_FILE || file >= 1024u * 1024u) return NULL;
    tbio_rec **blk;
    tbio_rec *r;
    pthread_mutex_lock(&s->mu);
    blk = atomic_load_explicit(&s->dir[file >> 10], memory_order_relaxed);
    if (!blk) {
        blk = calloc(1024, sizeof *blk);
        if (!blk) { pthread_mutex_unlock(&s->mu); return NULL; }
        atomic_store_explicit(&s->dir[file >> 10], blk, memory_order_release);
    }
    r = blk[file & 1023];
    if (!r) {
        const tbio_file *f = tbio_file_get(file);
        /* 64-byte aligned: see the layout notes above (at malloc's 16-byte
         * alignment a pread touched 8 to 11 lines, depending on the address) */
        r = aligned_alloc(64, (sizeof *r + 63) / 64 * 64);
        if (r) memset(r, 0, sizeof *r);
        if (r && f) {
            atomic_flag_clear(&r->lock);
            r->file = file;
            if (f->module == TBIO_POSIX) tbio_posix_rec_init(&r->u.p, f->blksize);
            else tbio_stdio_rec_init(&r->u.s);
            __atomic_store_n(&blk[file & 1023], r, __ATOMIC_RELEASE);
        } else {
            free(r);
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
 * 4 KiB page on a VM, i.e. ~25 ns per 56-byte event. */
#define BIG_BYTES ((size_t)4 << 20)
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
            g_pool_bytes -= chunk_bytes(cap);
        }
        pthread_mutex_unlock(&g_pool_mu);
    }
    if (!k && cap == BIG_CAP) {
        void *p = NULL;
        if (posix_memalign(&p, (size_t)2 << 20, BIG_BYTES) != 0) return NULL;
        madvise(p, BIG_BYTES, MADV_HUGEPAGE);
        k = p;
    } else if (!k) {
        k = malloc(chunk_bytes(cap));
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
        if (g_pool_bytes + chunk_bytes(k->cap) <= POOL_BYTES) {
            k->next = g_pool[cls];
            g_pool[cls] = k;
            g_pool_bytes += chunk_bytes(k->cap);
            k = NULL;
        }
        pthread_mutex_unlock(&g_pool_mu);
    }
    free(k);
}
static int64_t reserve(tbio_session *s, int64_t want) {
    int64_t have = atomic_load_explicit(&s->budget, memory_order_relaxed);
    while (have > 0) {
        int64_t take = have < want ? have : want;
        if (atomic_compare_exchange_weak(&s->budget, &have, have - take)) return take;
    }
    return 0;
}

void tbio_trace_add_slow(tbio_call *c, uint64_t t1, int op, uint32_t file, int fd, int64_t offset,
                         int64_t requested, int64_t returned, int err) {
    tbio_tslot *t = NULL;
    uint64_t gen = c->s->gen;
    for (int i = 0; i < TBIO_MAX_SESSIONS; i++) {
        if (c->th->slot[i].gen == gen) {
            t = &c->th->slot[i];
            break;
        }
    }
    if (UNLIKELY(!t)) {
        /* first event of this thread in this session: a free slot (a slot's
         * chunks are taken, and the slot freed, by its session's tbio_end) */
        for (int i = 0; i < TBIO_MAX_SESSIONS && !t; i++)
            if (c->th->slot[i].gen == 0) t = &c->th->slot[i];
        if (!t) return;
        t->gen = gen;
        t->head = t->tail = NULL;
        t->nevents = t->dropped = 0;
    }
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
    tbio_event_put(t, &k->ev[k->n++], c->t0, t1, op, file, fd, offset, requested, returned, err);
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
    for (tbio_thread *t = atomic_load(&g_threads); t; t = t->next) {
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
    pthread_mutex_lock(&g_sess_mu);
    tbio_actset *old = atomic_load(&tbio_g_active);
    if (old && old->n >= TBIO_MAX_SESSIONS) {
        pthread_mutex_unlock(&g_sess_mu);
        tbio_set_error("%d captures are already recording in this process (the most at once)",
                       TBIO_MAX_SESSIONS);
        return NULL;
    }
    tbio_session *s = aligned_alloc(64, (sizeof *s + 63) / 64 * 64);   /* hot fields: one line */
    tbio_actset *next = calloc(1, sizeof *next);
    if (s) memset(s, 0, sizeof *s);
    if (!s || !next) {
        free(s);
        free(next);
        pthread_mutex_unlock(&g_sess_mu);
        tbio_set_error("out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    s->gen = atomic_fetch_add(&g_gen, 1) + 1;
    uint64_t cap = atomic_load(&g_trace_cap);
    atomic_store(&s->budget, cap > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)cap);
    tbio_clock_pair(&s->t0_ticks, &s->t0_ns);
    s->sec_per_tick = tbio_ns_per_tick() * 1e-9;
    if (old) *next = *old;
    next->s[next->n++] = s;
    s->start_epoch = atomic_fetch_add(&tbio_g_epoch, 1) + 1;
    publish(next, old);
    pthread_mutex_unlock(&g_sess_mu);
    return s;
}

tbio_session *tbio_end(tbio_session *s) {
    pthread_mutex_lock(&g_sess_mu);
    tbio_actset *old = atomic_load(&tbio_g_active);
    int at = -1;
    for (int i = 0; old && i < old->n; i++)
        if (old->s[i] == s) at = i;
    if (!s || at < 0) {
        pthread_mutex_unlock(&g_sess_mu);
        tbio_set_error("that capture is not recording");
        return NULL;
    }
    tbio_actset *next = NULL;
    if (old->n > 1) {
        next = calloc(1, sizeof *next);
        if (!next) {
            pthread_mutex_unlock(&g_sess_mu);
            tbio_set_error("out of memory");
            return NULL;
        }
        for (int i = 0; i < old->n; i++)
            if (i != at) next->s[next->n++] = old->s[i];
    }
    tbio_clock_pair(&s->t1_ticks, &s->t1_ns);
    publish(next, old);
    /* no thread is inside the accounting for s any more: take its chunks */
    pthread_mutex_lock(&g_threads_mu);
    uint32_t n = 0;
    for (tbio_thread *t = atomic_load(&g_threads); t; t = t->next)
        for (int j = 0; j < TBIO_MAX_SESSIONS; j++) n += t->slot[j].gen == s->gen;
    s->threads = calloc(n ? n : 1, sizeof *s->threads);
    s->thread_chunks = calloc(n ? n : 1, sizeof *s->thread_chunks);
    uint32_t i = 0;
    for (tbio_thread *t = atomic_load(&g_threads); t && s->threads && s->thread_chunks; t = t->next) {
        tbio_tslot *sl = NULL;
        for (int j = 0; j < TBIO_MAX_SESSIONS; j++)
            if (t->slot[j].gen == s->gen) sl = &t->slot[j];
        if (!sl) continue;
        tbio_thread_info *ti = &s->threads[i];
        ti->tid = t->tid;
        ti->pthread_self = t->pself;
        if (atomic_load(&t->alive)) {
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
        ti->nevents = sl->nevents;
        ti->dropped = sl->dropped;
        s->thread_chunks[i] = sl->head;
        for (tbio_chunk *k = sl->head; k; k = k->next) {
            for (uint32_t j = 0; j < k->n; j++) k->ev[j].thread = (uint16_t)(i < 65535 ? i : 65535);
            s->trace_bytes += sizeof *k + (uint64_t)k->cap * sizeof(tbio_event);
        }
        s->nevents += sl->nevents;
        s->dropped += sl->dropped;
        memset(sl, 0, sizeof *sl);
        i++;
    }
    s->nthreads = i;
    pthread_mutex_unlock(&g_threads_mu);
    s->nfiles = tbio_file_count();
    pthread_mutex_unlock(&g_sess_mu);
    return s;
}

void tbio_session_free(tbio_session *s) {
    if (!s) return;
    for (uint32_t i = 0; i < s->nthreads; i++) {
        tbio_chunk *k = s->thread_chunks[i];
        while (k) {
            tbio_chunk *nx = k->next;
            chunk_free(k);
            k = nx;
        }
    }
    free(s->thread_chunks);
    free(s->threads);
    for (int d = 0; d < 1024; d++) {
        tbio_rec **blk = atomic_load(&s->dir[d]);
        if (!blk) continue;
        for (int j = 0; j < 1024; j++) free(blk[j]);
        free(blk);
    }
    pthread_mutex_destroy(&s->mu);
    free(s);
}

uint64_t tbio_trace_bytes(void) {
    /* live figure: every thread's buffers for every recording session */
    uint64_t b = 0;
    pthread_mutex_lock(&g_sess_mu);
    pthread_mutex_lock(&g_threads_mu);
    for (tbio_thread *t = atomic_load(&g_threads); t; t = t->next)
        for (int j = 0; j < TBIO_MAX_SESSIONS; j++)
            for (tbio_chunk *k = t->slot[j].gen ? t->slot[j].head : NULL; k; k = k->next)
                b += sizeof *k + (uint64_t)k->cap * sizeof(tbio_event);
    pthread_mutex_unlock(&g_threads_mu);
    pthread_mutex_unlock(&g_sess_mu);
    return b;
}

/* ---- inspection ---- */
uint64_t tbio_session_start_ns(const tbio_session *s) { return s->t0_ns; }
uint64_t tbio_session_end_ns(const tbio_session *s) { return s->t1_ns; }
uint32_t tbio_session_nfiles(const tbio_session *s) { return s->nfiles; }
uint32_t tbio_session_nthreads(const tbio_session *s) { return s->nthreads; }
uint64_t tbio_session_nevents(const tbio_session *s) { return s->nevents; }
uint64_t tbio_session_dropped(const tbio_session *s) { return s->dropped; }

int tbio_session_file(const tbio_session *s, uint32_t id, tbio_file_info *out) {
    const tbio_file *f = id < s->nfiles ? tbio_file_get(id) : NULL;
    if (!f) return -1;
    memset(out, 0, sizeof *out);
    out->id = id;
    out->module = f->module;
    out->path = f->path;
    out->path_len = f->len;
    out->record_id = f->hash;
    tbio_rec **blk = atomic_load(&((tbio_session *)s)->dir[id >> 10]);
    tbio_rec *r = blk ? blk[id & 1023] : NULL;
    if (r) {
        out->has_record = 1;
        out->counters = f->module == TBIO_POSIX ? r->u.p.counters : r->u.s.counters;
        out->fcounters = f->module == TBIO_POSIX ? r->u.p.fcounters : r->u.s.fcounters;
    }
    return 0;
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

uint64_t tbio_session_copy_events(const tbio_session *s, tbio_event *out, uint64_t max) {
    /* ticks -> CLOCK_REALTIME ns, interpolated between the session's own
     * (ticks, ns) pairs when it lasted long enough to calibrate on them */
    double npt = tbio_ns_per_tick();
    if (s->t1_ticks > s->t0_ticks && s->t1_ns > s->t0_ns + 20000000u)
        npt = (double)(s->t1_ns - s->t0_ns) / (double)(s->t1_ticks - s->t0_ticks);
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
void tbio_session_atfork_prepare(void) {
    pthread_mutex_lock(&g_sess_mu);
    pthread_mutex_lock(&g_threads_mu);
    /* a thread may be taking a chunk from (or giving one back to) the pool: the
     * child must not inherit a held lock or a half-linked free list */
    pthread_mutex_lock(&g_pool_mu);
}

void tbio_session_atfork_parent(void) {
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
    atomic_store(&g_threads, NULL);
    tbio_tl_thread = NULL;
    tbio_g_membarrier = -1;
    barrier_init();
}
