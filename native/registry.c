/* The file table ((path, module) -> id) of the recordings running now, path
 * filters, path cleaning and the fd / FILE* tables (see registry.h).
 *
 * The table exists only while something records: made by the first
 * tbio_begin, filled lazily by recorded calls, dropped (and every fd state
 * learned from it forgotten) when the last recording ends; sessions that
 * ended keep it alive, by reference, until they are freed.  Its memory comes
 * from mmap in blocks: a file costs its entry (32 bytes + the path, 8-byte
 * aligned), 8 bytes in the id directory and 4 in the hash buckets. */
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DIRBITS 10u
#define DIRSZ (1u << DIRBITS)

/* ---------- memory ---------- */
void *tbio_map(size_t bytes) {
    void *p = (void *)tbio_sys(SYS_mmap, 0, (long)bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                               -1, 0);
    return (unsigned long)p >= (unsigned long)-4095 ? NULL : p;
}
void *tbio_map_unshared(size_t bytes) {
    void *p = tbio_map(bytes);
    if (p) tbio_sys(SYS_madvise, (long)p, (long)bytes, MADV_WIPEONFORK, 0, 0, 0);   /* best effort (Linux >= 4.14) */
    return p;
}
void tbio_unmap(void *p, size_t bytes) {
    if (p) tbio_sys(SYS_munmap, (long)p, (long)bytes, 0, 0, 0, 0);
}

/* ---------- the file table ---------- */
#define ARENA_BLOCK ((size_t)1 << 20)
#define FIRST_BUCKETS 4096u

struct tbio_registry {
    pthread_mutex_t mu;            /* inserts (lookups of ids are lock-free) */
    _Atomic int refs;
    uint32_t max;                  /* the bound: ids 0 .. max-1 */
    _Atomic uint32_t nfiles;
    uint32_t *buckets;             /* head id per bucket, TBIO_NO_FILE when empty */
    uint32_t nbuckets;
    char *arena;                   /* entries: bump allocation in ARENA_BLOCK blocks */
    size_t arena_left;
    void *blocks;                  /* arena blocks, linked through their first word */
    _Atomic(tbio_file **) by_id[TBIO_FILE_DIRSZ];
};

static _Atomic uint64_t g_max_files = 1u << 22;
/* The current table: replaced only with no thread `in` (registry.h). */
static _Atomic(tbio_registry *) g_reg;

void tbio_set_max_files(uint64_t n) {
    if (n < 1) n = 1;
    if (n > TBIO_MAX_FILES_LIMIT) n = TBIO_MAX_FILES_LIMIT;
    atomic_store(&g_max_files, n);
}
uint64_t tbio_get_max_files(void) { return atomic_load(&g_max_files); }

tbio_registry *tbio_registry_acquire(void) {
    tbio_registry *r = atomic_load(&g_reg);
    if (!r) {
        r = tbio_map(sizeof *r);
        if (!r) return NULL;
        pthread_mutex_init(&r->mu, NULL);
        r->max = (uint32_t)atomic_load(&g_max_files);
        r->nbuckets = FIRST_BUCKETS;
        r->buckets = tbio_map(r->nbuckets * sizeof *r->buckets);
        if (!r->buckets) {
            tbio_unmap(r, sizeof *r);
            return NULL;
        }
        memset(r->buckets, 0xff, r->nbuckets * sizeof *r->buckets);
        atomic_store(&r->refs, 1);   /* the "current" reference */
        atomic_store(&g_reg, r);
    }
    atomic_fetch_add(&r->refs, 1);
    return r;
}

void tbio_registry_release(tbio_registry *r) {
    if (!r || atomic_fetch_sub(&r->refs, 1) != 1) return;
    for (void *b = r->blocks; b;) {
        void *nx = *(void **)b;
        tbio_unmap(b, ARENA_BLOCK);
        b = nx;
    }
    for (uint32_t d = 0; d < TBIO_FILE_DIRSZ; d++)
        tbio_unmap(atomic_load(&r->by_id[d]), DIRSZ * sizeof(tbio_file *));
    tbio_unmap(r->buckets, r->nbuckets * sizeof *r->buckets);
    pthread_mutex_destroy(&r->mu);
    tbio_unmap(r, sizeof *r);
}

void tbio_registry_retire(void) {
    tbio_registry *r = atomic_exchange(&g_reg, NULL);
    tbio_fd_scan_existing();
    tbio_registry_release(r);
}

const tbio_file *tbio_registry_file(const tbio_registry *r, uint32_t id) {
    if (!r || id >= atomic_load_explicit(&r->nfiles, memory_order_acquire)) return NULL;
    tbio_file **blk = atomic_load_explicit(&((tbio_registry *)r)->by_id[id >> DIRBITS], memory_order_acquire);
    return blk ? blk[id & (DIRSZ - 1)] : NULL;
}

const tbio_file *tbio_file_get(uint32_t id) {
    return tbio_registry_file(atomic_load_explicit(&g_reg, memory_order_acquire), id);
}

static void *arena_take(tbio_registry *r, size_t n) {
    n = (n + 7) & ~(size_t)7;
    if (n > r->arena_left) {
        char *b = tbio_map(ARENA_BLOCK);
        if (!b) return NULL;
        *(void **)b = r->blocks;
        r->blocks = b;
        r->arena = b + 8;
        r->arena_left = ARENA_BLOCK - 8;
    }
    void *p = r->arena;
    r->arena += n;
    r->arena_left -= n;
    return p;
}

/* Twice the buckets once there are more files than buckets (under r->mu). */
static void grow_buckets(tbio_registry *r, uint32_t nfiles) {
    if (nfiles < r->nbuckets || r->nbuckets >= (1u << 26)) return;
    uint32_t nb = r->nbuckets * 2;
    uint32_t *b = tbio_map(nb * sizeof *b);
    if (!b) return;
    memset(b, 0xff, nb * sizeof *b);
    for (uint32_t id = 0; id < nfiles; id++) {
        tbio_file *f = (tbio_file *)tbio_registry_file(r, id);
        uint32_t k = (uint32_t)(f->hash ^ (uint64_t)f->module) & (nb - 1);
        f->next = b[k];
        b[k] = id;
    }
    tbio_unmap(r->buckets, r->nbuckets * sizeof *r->buckets);
    r->buckets = b;
    r->nbuckets = nb;
}

uint32_t tbio_file_intern(const char *path, size_t len, int module) {
    tbio_registry *r = atomic_load_explicit(&g_reg, memory_order_acquire);
    if (!r || len > 65535) return TBIO_NO_FILE;
    uint64_t h = tbio_record_id(path, len);   /* Darshan's id: also RENAMED_FROM */
    pthread_mutex_lock(&r->mu);
    uint32_t k = (uint32_t)(h ^ (uint64_t)module) & (r->nbuckets - 1);
    for (uint32_t id = r->buckets[k]; id != TBIO_NO_FILE;) {
        const tbio_file *f = tbio_registry_file(r, id);
        if (f->hash == h && f->module == module && f->len == len && memcmp(f->path, path, len) == 0) {
            pthread_mutex_unlock(&r->mu);
            return id;
        }
        id = f->next;
    }
    uint32_t id = atomic_load_explicit(&r->nfiles, memory_order_relaxed);
    tbio_file **blk = id < r->max ? atomic_load_explicit(&r->by_id[id >> DIRBITS], memory_order_relaxed) : NULL;
    if (id < r->max && !blk) {
        blk = tbio_map(DIRSZ * sizeof *blk);
        if (blk) atomic_store_explicit(&r->by_id[id >> DIRBITS], blk, memory_order_release);
    }
    tbio_file *f = blk ? arena_take(r, sizeof *f + len + 1) : NULL;
    if (!f) {
        pthread_mutex_unlock(&r->mu);
        return TBIO_OVER_FILE;
    }
    f->id = id;
    f->module = module;
    f->hash = h;
    atomic_store_explicit(&f->blksize, 0, memory_order_relaxed);
    f->len = (uint32_t)len;
    memcpy(f->path, path, len);
    f->path[len] = 0;
    f->next = r->buckets[k];
    r->buckets[k] = id;
    blk[id & (DIRSZ - 1)] = f;
    atomic_store_explicit(&r->nfiles, id + 1, memory_order_release);
    grow_buckets(r, id + 1);
    pthread_mutex_unlock(&r->mu);
    return id;
}

void tbio_file_set_blksize(uint32_t id, int64_t blksize) {
    tbio_file *f = (tbio_file *)tbio_file_get(id);
    if (f && blksize > 0) atomic_store_explicit(&f->blksize, blksize, memory_order_relaxed);
}

void tbio_file_learn_blksize(uint32_t id, int fd) {
    tbio_file *f = (tbio_file *)tbio_file_get(id);
    if (!f || atomic_load_explicit(&f->blksize, memory_order_relaxed) != 0) return;
    int64_t b = tbio_raw_blksize_fd(fd);
    if (b > 0) atomic_store_explicit(&f->blksize, b, memory_order_relaxed);
}

/* Fork: the child records nothing of the parent's; its first capture makes a
 * fresh table (the parent's copy is left unreferenced in the child). */
void tbio_registry_atfork_prepare(void) {
    tbio_registry *r = atomic_load(&g_reg);
    if (r) pthread_mutex_lock(&r->mu);
}
void tbio_registry_atfork_parent(void) {
    tbio_registry *r = atomic_load(&g_reg);
    if (r) pthread_mutex_unlock(&r->mu);
}
void tbio_registry_atfork_child(void) {
    atomic_store(&g_reg, NULL);
    tbio_fd_scan_existing();
}

/* ---------- filters ---------- */
/* Darshan's default exclusions, plus /dev/shm which Darshan also hides. */
static const char *const k_default_excludes =
    "/etc/\n/dev/\n/usr/\n/bin/\n/boot/\n/lib/\n/lib64/\n/opt/\n/sbin/\n/sys/\n/proc/\n/var/\n";
/* The filters now: one object, replaced whole (never changed in place), so
 * a reader sees an include and an exclude list set together.  No lock: a
 * fork while another thread sets filters leaves the child nothing to wait
 * for.  Every object ever set stays linked from the newest and is never
 * freed (a wrapper on another thread may still be reading an older one). */
typedef struct filters {
    struct filters *older;
    const char *include;        /* newline-separated, NULL: none */
    const char *exclude;        /* NULL: the defaults */
    char text[];
} filters;
static _Atomic(filters *) g_filters;

static int prefix_match_len(const char *list, const char *path, size_t len) {
    int best = -1;
    if (!list) return best;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n > 0 && n <= len && memcmp(p, path, n) == 0 && (int)n > best) best = (int)n;
        if (!e) break;
        p = e + 1;
    }
    return best;
}

int tbio_path_traced(const char *abs, size_t len) {
    const filters *f = atomic_load_explicit(&g_filters, memory_order_acquire);
    const char *ex = f && f->exclude ? f->exclude : k_default_excludes;
    int e = prefix_match_len(ex, abs, len);
    if (e < 0) return 1;
    int i = prefix_match_len(f ? f->include : NULL, abs, len);
    return i >= e;
}

int tbio_set_filters(const char *include_prefixes, const char *exclude_prefixes) {
    size_t ni = include_prefixes ? strlen(include_prefixes) + 1 : 0;
    size_t ne = exclude_prefixes ? strlen(exclude_prefixes) + 1 : 0;
    filters *f = malloc(sizeof *f + ni + ne);
    if (!f) return -1;
    if (ni) memcpy(f->text, include_prefixes, ni);
    if (ne) memcpy(f->text + ni, exclude_prefixes, ne);
    /* a list not given is kept from the current filters */
    filters *cur = atomic_load_explicit(&g_filters, memory_order_acquire);
    do {
        f->older = cur;
        f->include = ni ? f->text : cur ? cur->include : NULL;
        f->exclude = ne ? f->text + ni : cur ? cur->exclude : NULL;
    } while (!atomic_compare_exchange_weak_explicit(&g_filters, &cur, f, memory_order_acq_rel,
                                                    memory_order_acquire));
    return 0;
}

const char *tbio_get_excludes(void) {
    const filters *f = atomic_load_explicit(&g_filters, memory_order_acquire);
    return f && f->exclude ? f->exclude : k_default_excludes;
}

/* ---------- paths ---------- */
/* Clean an absolute path in place: collapse "//", drop "/./", resolve "/../"
 * lexically (as Darshan does; symlinks are not followed). */
static size_t clean_path(char *p, size_t n) {
    size_t w = 0;
    size_t i = 0;
    while (i < n) {
        if (p[i] == '/') {
            while (i < n && p[i] == '/') i++;
            size_t s = i;
            while (i < n && p[i] != '/') i++;
            size_t cl = i - s;
            if (cl == 0) break;
            if (cl == 1 && p[s] == '.') continue;
            if (cl == 2 && p[s] == '.' && p[s + 1] == '.') {
                while (w > 0 && p[w - 1] != '/') w--;
                if (w > 0) w--;
                continue;
            }
            p[w++] = '/';
            memmove(p + w, p + s, cl);
            w += cl;
        } else {
            i++;
        }
    }
    if (w == 0) p[w++] = '/';
    p[w] = 0;
    return w;
}

static ssize_t fd_path(int fd, char *out, size_t cap) {
    char link[32] = "/proc/self/fd/";
    char digits[12];
    int nd = 0;
    if (fd < 0) return -1;
    do digits[nd++] = (char)('0' + fd % 10); while ((fd /= 10) > 0);
    size_t at = 14;
    while (nd > 0) link[at++] = digits[--nd];
    link[at] = 0;
    ssize_t n = tbio_raw_readlink(link, out, cap - 1);
    if (n < 0) return -1;
    out[n] = 0;
    return n;
}

size_t tbio_abspath(int dirfd, const char *path, char *out, size_t cap) {
    size_t plen = strlen(path);
    size_t base = 0;
    if (path[0] != '/') {
        if (dirfd == AT_FDCWD) {
            long r = syscall(SYS_getcwd, out, cap);
            if (r < 0) return 0;
            base = strlen(out);
        } else {
            ssize_t r = fd_path(dirfd, out, cap);
            if (r <= 0 || out[0] != '/') return 0;
            base = (size_t)r;
        }
        if (base + 1 + plen + 1 > cap) return 0;
        out[base++] = '/';
    } else if (plen + 1 > cap) {
        return 0;
    }
    memcpy(out + base, path, plen);
    return clean_path(out, base + plen);
}

/* ---------- fd table ---------- */
_Static_assert(DIRBITS == TBIO_FD_DIRBITS, "fd table geometry (hot.h)");
typedef tbio_fdent fdent;
#define g_fds tbio_g_fds   /* in tbio_g_hot (hot.h) */

static fdent *fd_slot(int fd, int create) {
    if (fd < 0 || (unsigned)fd >= DIRSZ * DIRSZ) return NULL;
    unsigned hi = (unsigned)fd >> DIRBITS;
    fdent *blk = atomic_load_explicit(&g_fds[hi], memory_order_acquire);
    if (!blk) {
        if (!create) return NULL;
        fdent *nb = tbio_map(DIRSZ * sizeof *nb);
        if (!nb) return NULL;
        fdent *expect = NULL;
        if (!atomic_compare_exchange_strong(&g_fds[hi], &expect, nb)) {
            tbio_unmap(nb, DIRSZ * sizeof *nb);
            blk = expect;
        } else {
            blk = nb;
        }
    }
    return &blk[(unsigned)fd & (DIRSZ - 1)];
}

/* Name an fd through /proc/self/fd: the first time a recording touches an fd
 * opened while idle, before enable(), or by a call we do not wrap. */
/* The calling thread's path buffer (hot.h): inside a recorded call only. */
static char *path_buf(void) { return tbio_tl_thread->path; }

/* A socket's endpoint (sockets.c): its id, TBIO_NO_FILE when local, and
 * *later = 1 when it is not connected yet (the caller keeps the fd unknown). */
static uint32_t resolve_socket(int fd, int module, char *path, int *later) {
    if (module != TBIO_POSIX) return TBIO_NO_FILE;   /* a socket under fdopen: its fd is traced */
    ssize_t n = tbio_socket_name(fd, tbio_fd_role(fd), NULL, 0, path, TBIO_PATH_BUF);
    if (n < 0) *later = 1;
    if (n <= 0 || !tbio_path_traced(path, (size_t)n)) return TBIO_NO_FILE;
    uint32_t id = tbio_file_intern(path, (size_t)n, module);
    if (id == TBIO_OVER_FILE) tbio_note_over_file(path, (size_t)n);
    return id;
}

static uint32_t resolve_fd(int fd, int module, char *link, size_t link_cap, int *later) {
    char *path = path_buf();
    ssize_t n = fd_path(fd, path, TBIO_PATH_BUF);
    if (n > 7 && memcmp(path, "socket:", 7) == 0) {
        if (link && (size_t)n < link_cap) memcpy(link, path, (size_t)n + 1);
        return resolve_socket(fd, module, path, later);
    }
    if (n <= 0 || path[0] != '/') return TBIO_NO_FILE;  /* pipe:, anon_inode: */
    /* deleted files read as "/path (deleted)": keep the name as is */
    if (!tbio_path_traced(path, (size_t)n)) return TBIO_NO_FILE;
    uint32_t id = tbio_file_intern(path, (size_t)n, module);
    if (tbio_tracked(id)) tbio_file_learn_blksize(id, fd);
    else if (id == TBIO_OVER_FILE) tbio_note_over_file(path, (size_t)n);   /* its first use */
    return id;
}

uint32_t tbio_socket_id(int fd, const struct sockaddr *peer, unsigned len) {
    char *path = path_buf();
    int role = tbio_fd_role(fd) == TBIO_SOCK_LOCAL ? TBIO_SOCK_LOCAL : TBIO_SOCK_CLIENT;
    ssize_t n = tbio_socket_name(fd, role, peer, len, path, TBIO_PATH_BUF);
    if (n <= 0 || !tbio_path_traced(path, (size_t)n)) return TBIO_NO_FILE;
    uint32_t id = tbio_file_intern(path, (size_t)n, TBIO_POSIX);
    if (id == TBIO_OVER_FILE) tbio_note_over_file(path, (size_t)n);
    return id;
}

uint32_t tbio_path_id(int dirfd, const char *path, int module, int opens) {
    if (!path) return TBIO_NO_FILE;
    char *abs = path_buf();
    size_t n = tbio_abspath(dirfd, path, abs, TBIO_PATH_BUF);
    if (n == 0 || !tbio_path_traced(abs, n)) return TBIO_NO_FILE;
    uint32_t id = tbio_file_intern(abs, n, module);
    if (id == TBIO_OVER_FILE && opens) tbio_note_over_file(abs, n);
    return id;
}

/* fd still names file id (read again through /proc/self/fd); a socket: still
 * the same socket (link, its "socket:[inode]" when it was named) */
static int fd_still_names(int fd, uint32_t id, const char *link) {
    char *path = path_buf();
    ssize_t n = fd_path(fd, path, TBIO_PATH_BUF);
    if (link[0]) return n > 0 && strcmp(path, link) == 0;
    const tbio_file *f = tbio_file_get(id);
    return n > 0 && f && f->len == (size_t)n && memcmp(f->path, path, (size_t)n) == 0;
}

uint32_t tbio_fd_posix_slow(int fd) {
    fdent *e = fd_slot(fd, 0);
    uint32_t st = e ? atomic_load_explicit(&e->posix, memory_order_acquire) : TBIO_FD_UNKNOWN;
    if (st != TBIO_FD_UNKNOWN) return tbio_fd_state_id(st);
    char link[48] = "";
    int later = 0;
    uint32_t id = resolve_fd(fd, TBIO_POSIX, link, sizeof link, &later);
    e = later ? NULL : fd_slot(fd, 1);
    if (e) {
        uint32_t expect = TBIO_FD_UNKNOWN;
        uint32_t nv = tbio_fd_id_state(id);
        if (atomic_compare_exchange_strong(&e->posix, &expect, nv) && tbio_tracked(id) &&
            !fd_still_names(fd, id, link)) {
            /* ABA: between the readlink and the store the number was closed
             * and made again (a socket: its entry was reset to unknown, so
             * the store succeeded).  Undo, unless someone stored since. */
            expect = nv;
            atomic_compare_exchange_strong(&e->posix, &expect, TBIO_FD_UNKNOWN);
            return TBIO_NO_FILE;
        }
    }
    return id;
}

void tbio_fd_set_posix(int fd, uint32_t id) {
    fdent *e = fd_slot(fd, 1);
    if (e) atomic_store_explicit(&e->posix, tbio_fd_id_state(id), memory_order_release);
}

void tbio_fd_forget(int fd) {
    fdent *e = fd_slot(fd, 0);
    if (!e) return;
    /* idle, the entry is usually clear already: read before writing, so the line stays shared */
    if (atomic_load_explicit(&e->posix, memory_order_relaxed) == TBIO_FD_UNKNOWN &&
        atomic_load_explicit(&e->stdio, memory_order_relaxed) == TBIO_FD_UNKNOWN &&
        atomic_load_explicit(&e->fp, memory_order_relaxed) == NULL &&
        atomic_load_explicit(&e->role, memory_order_relaxed) == TBIO_SOCK_UNKNOWN)
        return;
    atomic_store_explicit(&e->posix, TBIO_FD_UNKNOWN, memory_order_release);
    atomic_store_explicit(&e->stdio, TBIO_FD_UNKNOWN, memory_order_release);
    atomic_store_explicit(&e->fp, NULL, memory_order_release);
    atomic_store_explicit(&e->role, TBIO_SOCK_UNKNOWN, memory_order_release);
}

void tbio_fd_set_role(int fd, int role) {
    fdent *e = fd_slot(fd, 1);
    if (!e) return;
    atomic_store_explicit(&e->role, (uint32_t)role, memory_order_release);
    /* a socket named while unconnected (e.g. by an fcntl) is named afresh */
    atomic_store_explicit(&e->posix, TBIO_FD_UNKNOWN, memory_order_release);
}

int tbio_fd_role(int fd) {
    fdent *e = fd_slot(fd, 0);
    return e ? (int)atomic_load_explicit(&e->role, memory_order_acquire) : TBIO_SOCK_UNKNOWN;
}

void tbio_fd_forget_roles(void) {
    for (unsigned hi = 0; hi < DIRSZ; hi++) {
        fdent *blk = atomic_load_explicit(&g_fds[hi], memory_order_acquire);
        if (!blk) continue;
        for (unsigned i = 0; i < DIRSZ; i++)
            atomic_store_explicit(&blk[i].role, TBIO_SOCK_UNKNOWN, memory_order_relaxed);
    }
}

void tbio_fd_forget_stdio(int fd) {
    fdent *e = fd_slot(fd, 0);
    if (!e) return;
    atomic_store_explicit(&e->stdio, TBIO_FD_UNKNOWN, memory_order_release);
    atomic_store_explicit(&e->fp, NULL, memory_order_release);
}

void tbio_fd_forget_range(unsigned first, unsigned last) {
    for (unsigned hi = first >> DIRBITS; hi < DIRSZ && hi <= (last >> DIRBITS); hi++) {
        if (!atomic_load_explicit(&g_fds[hi], memory_order_acquire)) continue;
        unsigned lo = hi == (first >> DIRBITS) ? (first & (DIRSZ - 1)) : 0;
        unsigned up = hi == (last >> DIRBITS) ? (last & (DIRSZ - 1)) : DIRSZ - 1;
        for (unsigned i = lo; i <= up; i++) tbio_fd_forget((int)((hi << DIRBITS) | i));
    }
}

uint32_t tbio_fp_stdio(FILE *fp) {
    if (!fp) return TBIO_NO_FILE;
    int fd = fileno(fp);
    fdent *e = fd_slot(fd, 0);
    if (e && atomic_load_explicit(&e->fp, memory_order_acquire) == fp) {
        uint32_t st = atomic_load_explicit(&e->stdio, memory_order_acquire);
        if (LIKELY(st != TBIO_FD_UNKNOWN)) return tbio_fd_state_id(st);
    }
    if (fd < 0) return TBIO_NO_FILE;
    int later = 0;
    uint32_t id = resolve_fd(fd, TBIO_STDIO, NULL, 0, &later);
    tbio_fp_set(fp, id);
    return id;
}

void tbio_fp_set(FILE *fp, uint32_t id) {
    int fd = fp ? fileno(fp) : -1;
    fdent *e = fd_slot(fd, 1);
    if (!e) return;
    atomic_store_explicit(&e->stdio, tbio_fd_id_state(id), memory_order_release);
    atomic_store_explicit(&e->fp, fp, memory_order_release);
}

void tbio_fp_forget(FILE *fp) {
    int fd = fp ? fileno(fp) : -1;
    fdent *e = fd_slot(fd, 0);
    if (!e) return;
    if (atomic_load_explicit(&e->fp, memory_order_acquire) == fp) {
        atomic_store_explicit(&e->stdio, TBIO_FD_UNKNOWN, memory_order_release);
        atomic_store_explicit(&e->fp, NULL, memory_order_release);
    }
    /* fclose also closes the descriptor inside libc, where we cannot see it */
    atomic_store_explicit(&e->posix, TBIO_FD_UNKNOWN, memory_order_release);
    atomic_store_explicit(&e->role, TBIO_SOCK_UNKNOWN, memory_order_release);
}

/* Forget every descriptor state learned before: by enable() (a stale mapping
 * from an earlier enable/disable cycle must never name a new file) and when
 * the file table is dropped (its ids mean nothing any more). */
void tbio_fd_scan_existing(void) {
    for (unsigned hi = 0; hi < DIRSZ; hi++) {
        fdent *blk = atomic_load_explicit(&g_fds[hi], memory_order_acquire);
        if (!blk) continue;
        for (unsigned i = 0; i < DIRSZ; i++) {
            atomic_store_explicit(&blk[i].posix, TBIO_FD_UNKNOWN, memory_order_relaxed);
            atomic_store_explicit(&blk[i].stdio, TBIO_FD_UNKNOWN, memory_order_relaxed);
            atomic_store_explicit(&blk[i].fp, NULL, memory_order_relaxed);
        }
    }
}
