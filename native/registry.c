/* The file registry ((path, module) -> id), path filters, path cleaning and
 * the fd / FILE* tables.  The registry and the tables live as long as the
 * process: wrappers may run at any time, even after disable(). */
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---------- registry ---------- */
#define NBUCKETS 65536u
#define DIRBITS 10u
#define DIRSZ (1u << DIRBITS)

static pthread_mutex_t g_reg_mu = PTHREAD_MUTEX_INITIALIZER;
static tbio_file *g_buckets[NBUCKETS];
static _Atomic(tbio_file **) g_by_id[DIRSZ];
static _Atomic uint32_t g_nfiles;

static uint64_t fnv1a(const char *p, size_t n, int module) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ull;
    }
    return h ^ (uint64_t)module;
}

uint32_t tbio_file_intern(const char *path, size_t len, int module) {
    uint64_t h = fnv1a(path, len, module);
    uint32_t b = (uint32_t)(h & (NBUCKETS - 1));
    pthread_mutex_lock(&g_reg_mu);
    for (tbio_file *f = g_buckets[b]; f; f = f->next) {
        if (f->module == module && f->len == len && memcmp(f->path, path, len) == 0) {
            pthread_mutex_unlock(&g_reg_mu);
            return f->id;
        }
    }
    uint32_t id = atomic_load_explicit(&g_nfiles, memory_order_relaxed);
    if (id >= DIRSZ * DIRSZ) {
        pthread_mutex_unlock(&g_reg_mu);
        return TBIO_NO_FILE;
    }
    tbio_file **blk = atomic_load_explicit(&g_by_id[id >> DIRBITS], memory_order_relaxed);
    if (!blk) {
        blk = calloc(DIRSZ, sizeof *blk);
        if (!blk) { pthread_mutex_unlock(&g_reg_mu); return TBIO_NO_FILE; }
        atomic_store_explicit(&g_by_id[id >> DIRBITS], blk, memory_order_release);
    }
    tbio_file *f = malloc(sizeof *f + len + 1);
    if (!f) { pthread_mutex_unlock(&g_reg_mu); return TBIO_NO_FILE; }
    f->id = id;
    f->module = module;
    f->hash = tbio_record_id(path, len);  /* Darshan's id: also RENAMED_FROM */
    f->blksize = 0;
    f->len = len;
    memcpy(f->path, path, len);
    f->path[len] = 0;
    f->next = g_buckets[b];
    g_buckets[b] = f;
    blk[id & (DIRSZ - 1)] = f;
    atomic_store_explicit(&g_nfiles, id + 1, memory_order_release);
    pthread_mutex_unlock(&g_reg_mu);
    return id;
}

const tbio_file *tbio_file_get(uint32_t id) {
    if (id >= atomic_load_explicit(&g_nfiles, memory_order_acquire)) return NULL;
    tbio_file **blk = atomic_load_explicit(&g_by_id[id >> DIRBITS], memory_order_acquire);
    return blk ? blk[id & (DIRSZ - 1)] : NULL;
}

uint32_t tbio_file_count(void) { return atomic_load_explicit(&g_nfiles, memory_order_acquire); }

void tbio_file_set_blksize(uint32_t id, int64_t blksize) {
    const tbio_file *f = tbio_file_get(id);
    if (f && f->blksize == 0 && blksize > 0) ((tbio_file *)f)->blksize = blksize;
}

void tbio_registry_atfork_prepare(void) { pthread_mutex_lock(&g_reg_mu); }
void tbio_registry_atfork_parent(void) { pthread_mutex_unlock(&g_reg_mu); }
void tbio_registry_atfork_child(void) { pthread_mutex_init(&g_reg_mu, NULL); }

/* ---------- filters ---------- */
/* Darshan's default exclusions, plus /dev/shm which Darshan also hides. */
static const char *const k_default_excludes =
    "/etc/\n/dev/\n/usr/\n/bin/\n/boot/\n/lib/\n/lib64/\n/opt/\n/sbin/\n/sys/\n/proc/\n/var/\n";
static pthread_mutex_t g_filter_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(char *) g_excludes;   /* newline-separated */
static _Atomic(char *) g_includes;

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
    const char *ex = atomic_load_explicit(&g_excludes, memory_order_acquire);
    if (!ex) ex = k_default_excludes;
    int e = prefix_match_len(ex, abs, len);
    if (e < 0) return 1;
    int i = prefix_match_len(atomic_load_explicit(&g_includes, memory_order_acquire), abs, len);
    return i >= e;
}

int tbio_set_filters(const char *include_prefixes, const char *exclude_prefixes) {
    pthread_mutex_lock(&g_filter_mu);
    /* Old lists are leaked on purpose: a wrapper on another thread may be reading them. */
    if (include_prefixes) {
        char *c = strdup(include_prefixes);
        if (!c) { pthread_mutex_unlock(&g_filter_mu); return -1; }
        atomic_store_explicit(&g_includes, c, memory_order_release);
    }
    if (exclude_prefixes) {
        char *c = strdup(exclude_prefixes);
        if (!c) { pthread_mutex_unlock(&g_filter_mu); return -1; }
        atomic_store_explicit(&g_excludes, c, memory_order_release);
    }
    pthread_mutex_unlock(&g_filter_mu);
    return 0;
}

const char *tbio_get_excludes(void) {
    const char *ex = atomic_load_explicit(&g_excludes, memory_order_acquire);
    return ex ? ex : k_default_excludes;
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
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
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
_Static_assert(DIRBITS == TBIO_FD_DIRBITS, "fd table geometry (shim.h)");
typedef tbio_fdent fdent;
#define g_fds tbio_g_fds   /* in tbio_g_hot (shim.h) */

static fdent *fd_slot(int fd, int create) {
    if (fd < 0 || (unsigned)fd >= DIRSZ * DIRSZ) return NULL;
    unsigned hi = (unsigned)fd >> DIRBITS;
    fdent *blk = atomic_load_explicit(&g_fds[hi], memory_order_acquire);
    if (!blk) {
        if (!create) return NULL;
        fdent *nb = calloc(DIRSZ, sizeof *nb);
        if (!nb) return NULL;
        fdent *expect = NULL;
        if (!atomic_compare_exchange_strong(&g_fds[hi], &expect, nb)) {
            free(nb);
            blk = expect;
        } else {
            blk = nb;
        }
    }
    return &blk[(unsigned)fd & (DIRSZ - 1)];
}

/* Resolve an fd we never saw opened (opened before enable(), or by a path we
 * do not wrap) through /proc/self/fd. */
static uint32_t resolve_fd(int fd, int module) {
    char path[4096];
    ssize_t n = fd_path(fd, path, sizeof path);
    if (n <= 0 || path[0] != '/') return TBIO_NO_FILE;  /* socket:, pipe:, anon_inode: */
    /* deleted files read as "/path (deleted)": keep the name as is */
    if (!tbio_path_traced(path, (size_t)n)) return TBIO_NO_FILE;
    uint32_t id = tbio_file_intern(path, (size_t)n, module);
    if (id != TBIO_NO_FILE) tbio_file_set_blksize(id, tbio_raw_blksize_fd(fd));
    return id;
}

/* fd still names file id (read again through /proc/self/fd) */
static int fd_still_names(int fd, uint32_t id) {
    char path[4096];
    ssize_t n = fd_path(fd, path, sizeof path);
    const tbio_file *f = tbio_file_get(id);
    return n > 0 && f && f->len == (size_t)n && memcmp(f->path, path, (size_t)n) == 0;
}

uint32_t tbio_fd_posix_slow(int fd) {
    fdent *e = fd_slot(fd, 0);
    uint32_t st = e ? atomic_load_explicit(&e->posix, memory_order_acquire) : TBIO_FD_UNKNOWN;
    if (st >= 2) return st - 2;
    if (st == TBIO_FD_UNTRACKED) return TBIO_NO_FILE;
    uint32_t id = resolve_fd(fd, TBIO_POSIX);
    e = fd_slot(fd, 1);
    if (e) {
        uint32_t expect = TBIO_FD_UNKNOWN;
        uint32_t nv = id == TBIO_NO_FILE ? TBIO_FD_UNTRACKED : id + 2;
        if (atomic_compare_exchange_strong(&e->posix, &expect, nv) && id != TBIO_NO_FILE &&
            !fd_still_names(fd, id)) {
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
    if (e) atomic_store_explicit(&e->posix, id == TBIO_NO_FILE ? TBIO_FD_UNTRACKED : id + 2,
                                 memory_order_release);
}

void tbio_fd_forget(int fd) {
    fdent *e = fd_slot(fd, 0);
    if (!e) return;
    atomic_store_explicit(&e->posix, TBIO_FD_UNKNOWN, memory_order_release);
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
        if (LIKELY(st >= 2)) return st - 2;
        if (st == TBIO_FD_UNTRACKED) return TBIO_NO_FILE;
    }
    if (fd < 0) return TBIO_NO_FILE;
    uint32_t id = resolve_fd(fd, TBIO_STDIO);
    tbio_fp_set(fp, id);
    return id;
}

void tbio_fp_set(FILE *fp, uint32_t id) {
    int fd = fp ? fileno(fp) : -1;
    fdent *e = fd_slot(fd, 1);
    if (!e) return;
    atomic_store_explicit(&e->stdio, id == TBIO_NO_FILE ? TBIO_FD_UNTRACKED : id + 2,
                          memory_order_release);
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
}

/* Forget every descriptor state learned before: called by enable() so a
 * stale mapping from an earlier enable/disable cycle never names a new file. */
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
