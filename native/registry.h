/* The file table of the recordings running now ((path, module) -> id), the
 * path filters and the fd / FILE* tables.
 *
 * Nothing here runs while idle: the table is filled lazily, only by calls a
 * session records (an open names its path; an fd opened earlier is named
 * through /proc/self/fd the first time a recording touches it), and dropped
 * when the last recording ends.  It is bounded (tbio_set_max_files): a file
 * that does not fit is TBIO_OVER_FILE, and its opens, calls and bytes are
 * counted in every session that sees them, never dropped silently.
 *
 * Every function that takes the table's lock or grows it must run with the
 * calling thread `in` (hot.h) and a recording active; it allocates with mmap
 * only, never malloc. */
#ifndef TBIO_REGISTRY_H
#define TBIO_REGISTRY_H

#include "hot.h"

enum { TBIO_POSIX = 0, TBIO_STDIO = 1 };
#define TBIO_NO_FILE 0xffffffffu     /* no traced file: excluded, a socket or pipe, no path */
#define TBIO_OVER_FILE 0xfffffffeu   /* a traced file the full table could not take */
static inline int tbio_tracked(uint32_t id) { return id < TBIO_OVER_FILE; }

#define TBIO_MAX_FILES_LIMIT (1u << 24)   /* the most tbio_set_max_files accepts */
#define TBIO_FILE_DIRSZ (TBIO_MAX_FILES_LIMIT >> 10)

typedef struct tbio_file {      /* lives in the table's arena until the table is freed */
    uint32_t id;
    uint32_t next;              /* hash chain: id of the next entry, TBIO_NO_FILE ends it */
    int module;
    uint32_t len;
    uint64_t hash;              /* Darshan's record id of the path (tbio_record_id); also the hash */
    _Atomic int64_t blksize;    /* file system block size, 0 unknown */
    char path[];
} tbio_file;

typedef struct tbio_registry tbio_registry;

/* (path, module) -> id in the current table: TBIO_OVER_FILE when full (the
 * caller notes an open or first use of such a file: tbio_note_over_file). */
TBIO_HIDDEN uint32_t tbio_file_intern(const char *path, size_t len, int module);
TBIO_HIDDEN const tbio_file *tbio_file_get(uint32_t id);            /* current table */
TBIO_HIDDEN const tbio_file *tbio_registry_file(const tbio_registry *r, uint32_t id);
TBIO_HIDDEN void tbio_file_set_blksize(uint32_t id, int64_t blksize);
/* Learn the block size of a file just opened as fd, once (one fstat per file, not per open). */
TBIO_HIDDEN void tbio_file_learn_blksize(uint32_t id, int fd);

/* tbio_begin: the current table (made if none), one reference more. */
TBIO_HIDDEN tbio_registry *tbio_registry_acquire(void);
TBIO_HIDDEN void tbio_registry_release(tbio_registry *r);
/* tbio_end of the last recording, once no thread is `in`: drop the current
 * table and forget every fd state learned from it. */
TBIO_HIDDEN void tbio_registry_retire(void);
TBIO_HIDDEN void tbio_registry_atfork_prepare(void);
TBIO_HIDDEN void tbio_registry_atfork_parent(void);
TBIO_HIDDEN void tbio_registry_atfork_child(void);

/* Anonymous memory straight from the kernel (signal-safe; zero-filled). */
TBIO_HIDDEN void *tbio_map(size_t bytes);
/* The same, zero-filled in a forked child (MADV_WIPEONFORK): a session's memory
 * (its records, trace chunks, thread structs), which the child drops at fork
 * and never reads (session.c's fork handlers).  fork() copies no page table
 * entry of it, and the parent takes no copy-on-write fault on it after.  Not
 * MADV_DONTFORK: a child made without the fork handlers (a raw clone, glibc's
 * _Fork) that makes a call before its exec finds zeros there, not a hole. */
TBIO_HIDDEN void *tbio_map_unshared(size_t bytes);
TBIO_HIDDEN void tbio_unmap(void *p, size_t bytes);

TBIO_HIDDEN int tbio_path_traced(const char *abs, size_t len);
/* Absolute, cleaned path of `path` relative to dirfd (AT_FDCWD or a directory fd). */
TBIO_HIDDEN size_t tbio_abspath(int dirfd, const char *path, char *out, size_t cap);
/* Id of a path named by a recorded call (relative to dirfd): interned if
 * traced, TBIO_NO_FILE if not, TBIO_OVER_FILE if the table is full.  opens:
 * the call opens it (an open past the bound is noted in the sessions'
 * untracked files; a stat or rename is only a call on one). */
TBIO_HIDDEN uint32_t tbio_path_id(int dirfd, const char *path, int module, int opens);

/* ---- fd table: fd -> file ids ---- */
/* state: 0 unknown, else id + 3 (unsigned): 1 is TBIO_OVER_FILE, 2 TBIO_NO_FILE
 * (untracked), 3.. a tracked id, so a known state decodes with one subtraction */
#define TBIO_FD_UNKNOWN 0u
#define TBIO_FD_BASE 3u
#define TBIO_FD_OVER (TBIO_OVER_FILE + TBIO_FD_BASE)
#define TBIO_FD_UNTRACKED (TBIO_NO_FILE + TBIO_FD_BASE)
_Static_assert(TBIO_FD_OVER == 1u && TBIO_FD_UNTRACKED == 2u, "fd states below TBIO_FD_BASE");
/* fd -> entry: a directory (tbio_g_fds) of 1024 blocks of 1024 entries, blocks made on first use */
struct tbio_fdent {
    _Atomic uint32_t posix;   /* TBIO_FD_* state or id + TBIO_FD_BASE */
    _Atomic uint32_t stdio;
    _Atomic(FILE *) fp;
    _Atomic uint32_t role;    /* TBIO_SOCK_*: who opened the socket (kept across captures) */
};
static inline uint32_t tbio_fd_state_id(uint32_t st) { return st - TBIO_FD_BASE; }
/* id: below TBIO_MAX_FILES_LIMIT, TBIO_OVER_FILE or TBIO_NO_FILE (never 0 - 3) */
static inline uint32_t tbio_fd_id_state(uint32_t id) { return id + TBIO_FD_BASE; }
/* Resolves an unknown fd through /proc/self/fd: only inside a recorded call. */
TBIO_HIDDEN uint32_t tbio_fd_posix_slow(int fd);
/* file id, TBIO_NO_FILE or TBIO_OVER_FILE; a known fd is an inline lookup.
 * Only inside a recorded call (thread `in`, a session active). */
static inline uint32_t tbio_fd_posix(int fd) {
    if (LIKELY((unsigned)fd < (1u << (2 * TBIO_FD_DIRBITS)))) {
        tbio_fdent *blk = atomic_load_explicit(&tbio_g_fds[(unsigned)fd >> TBIO_FD_DIRBITS],
                                               memory_order_acquire);
        if (LIKELY(blk != NULL)) {
            uint32_t st = atomic_load_explicit(&blk[(unsigned)fd & ((1u << TBIO_FD_DIRBITS) - 1)].posix,
                                               memory_order_acquire);
            if (LIKELY(st != TBIO_FD_UNKNOWN)) return tbio_fd_state_id(st);
        }
    }
    return tbio_fd_posix_slow(fd);
}
TBIO_HIDDEN void tbio_fd_set_posix(int fd, uint32_t id);  /* inside a recorded call */
/* Idle-safe (a few stores, no lock, no allocation, no system call): */
TBIO_HIDDEN void tbio_fd_forget(int fd);
TBIO_HIDDEN void tbio_fd_forget_stdio(int fd);
TBIO_HIDDEN void tbio_fd_forget_range(unsigned first, unsigned last);
TBIO_HIDDEN void tbio_fp_forget(FILE *fp);
TBIO_HIDDEN uint32_t tbio_fp_stdio(FILE *fp);      /* inside a recorded call; resolves lazily */
TBIO_HIDDEN void tbio_fp_set(FILE *fp, uint32_t id);
TBIO_HIDDEN void tbio_fd_scan_existing(void);

/* ---- sockets (sockets.c) ---- */
/* Who opened a socket: set by the connect and accept wrappers, idle or not
 * (one store; the fd's block is mapped on first use), reset whenever the
 * number is forgotten (close, socket, ...) and by tbio_enable. */
enum { TBIO_SOCK_UNKNOWN = 0, TBIO_SOCK_ACCEPTED = 1, TBIO_SOCK_CLIENT = 2, TBIO_SOCK_LOCAL = 3 };
/* TBIO_SOCK_LOCAL: a client the job marked its own (tbio_local_begin, tbio_fd_set_local) */
TBIO_HIDDEN int tbio_local_window(void);   /* a tbio_local_begin window is open: a connect is local */
TBIO_HIDDEN void tbio_fd_set_role(int fd, int role);   /* also forgets what fd named */
TBIO_HIDDEN int tbio_fd_role(int fd);
TBIO_HIDDEN void tbio_fd_forget_roles(void);            /* tbio_enable: roles from before are stale */
struct sockaddr;
struct addrinfo;
/* The endpoint name of socket fd ("tcp://host:port", NUL-terminated in out):
 * its length; 0: not a storage socket (local: see sockets.c); -1: not
 * connected yet (ask again on a later call).  given: the peer a connect
 * names (NULL: getpeername). */
TBIO_HIDDEN ssize_t tbio_socket_name(int fd, int role, const struct sockaddr *given, unsigned given_len,
                                     char *out, size_t cap);
/* getaddrinfo's answer for node: each address remembered with its name (lock-free ring). */
TBIO_HIDDEN void tbio_host_note(int family, const void *addr, const char *name);
TBIO_HIDDEN void tbio_host_note_all(const char *node, const struct addrinfo *res);
/* Endpoint id of a socket a connect just named (inside a recorded call). */
TBIO_HIDDEN uint32_t tbio_socket_id(int fd, const struct sockaddr *peer, unsigned len);

#endif
