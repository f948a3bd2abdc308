/* Sockets as endpoints: which socket is storage traffic, and its name.
 *
 * A connected stream socket (TCP over IPv4 or IPv6) that this process opened
 * as a client is an endpoint "file" named tcp://HOST:PORT: HOST is the name
 * the process resolved for the peer's address through getaddrinfo (when it
 * did, while the shim was installed), else the numeric address ([v6] in
 * brackets).  Its calls are traced as a file's, and its per-file counters are
 * the endpoint's: OPENS are connections, READS/WRITES the calls, BYTES_* the
 * bytes in and out, F_READ_TIME/F_WRITE_TIME the time in them, SIZE_* the
 * size histogram.
 *
 * Everything else is local and never traced: Unix sockets (X11, D-Bus,
 * the profiler's own pipes), datagram sockets (DNS, QUIC), listening sockets
 * and the sockets they accept (the process's own servers: TensorFlow's
 * profiler server, TensorBoard, a test's server), X11 over TCP (ports
 * 6000-6063) and DNS over TCP (port 53).  Who opened a socket is known from
 * the connect and accept wrappers (the fd table's role); a socket connected
 * before the shim was installed has no role, and counts as a client when its
 * peer's port is below its own (clients use an ephemeral local port, servers
 * a lower, fixed one).  An endpoint can be left out with the path filters'
 * exclude prefixes (e.g. "tcp://127.0.0.1:6006").
 *
 * The job's own traffic between its processes (torch.distributed's store,
 * gloo's pairs, TensorFlow's workers) is made of client connections too, and
 * is local when the job says so (tbio.h): connections made while a
 * tbio_local_begin window is open (any thread: gloo connects on its own
 * threads), to a peer in the local peer table, or on an fd marked local.  The
 * window is one atomic count read by connect only; the table a fixed array
 * of slots published with a release store, read lock-free.
 *
 * Host names: getaddrinfo's answers are kept in a fixed ring of recent
 * (address, name) pairs, written and read without a lock or allocation
 * (a sequence count per slot), so a signal handler's traced call may read it. */
#include "shim.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>

/* ---------- host names from getaddrinfo ---------- */
#define NAME_SLOTS 256u
#define NAME_WORDS 12u   /* 96 bytes: a longer name is cut (the ring keeps NUL-terminated text) */
typedef struct name_slot {
    _Atomic uint32_t seq;             /* 0 empty, odd: being written, even: stable */
    _Atomic uint32_t family;
    _Atomic uint64_t addr[2];
    _Atomic uint64_t name[NAME_WORDS];
} name_slot;
static name_slot g_names[NAME_SLOTS];
static _Atomic uint32_t g_next_slot;

static void addr_words(int family, const void *addr, uint64_t out[2]) {
    out[0] = out[1] = 0;
    memcpy(out, addr, family == AF_INET ? 4 : 16);
}

/* The name of slot s if it holds (family, a): copied into nm, 1; else 0. */
static int slot_read(name_slot *s, int family, const uint64_t a[2], uint64_t nm[NAME_WORDS]) {
    uint32_t q = atomic_load_explicit(&s->seq, memory_order_acquire);
    if (q == 0 || (q & 1u)) return 0;
    if (atomic_load_explicit(&s->family, memory_order_acquire) != (uint32_t)family ||
        atomic_load_explicit(&s->addr[0], memory_order_acquire) != a[0] ||
        atomic_load_explicit(&s->addr[1], memory_order_acquire) != a[1])
        return 0;
    /* acquire loads: the second read of seq cannot move above them (no fence: TSan has none) */
    for (unsigned i = 0; i < NAME_WORDS; i++) nm[i] = atomic_load_explicit(&s->name[i], memory_order_acquire);
    return atomic_load_explicit(&s->seq, memory_order_relaxed) == q;
}

static int lookup_words(int family, const uint64_t a[2], uint64_t nm[NAME_WORDS]) {
    for (unsigned i = 0; i < NAME_SLOTS; i++)
        if (slot_read(&g_names[i], family, a, nm)) return 1;
    return 0;
}

void tbio_host_note(int family, const void *addr, const char *name) {
    if ((family != AF_INET && family != AF_INET6) || !name || !name[0]) return;
    uint64_t a[2], nm[NAME_WORDS] = {0}, old[NAME_WORDS];
    addr_words(family, addr, a);
    size_t n = strnlen(name, sizeof nm - 1);
    memcpy(nm, name, n);
    if (lookup_words(family, a, old) && memcmp(old, nm, sizeof nm) == 0) return;   /* known already */
    name_slot *s = &g_names[atomic_fetch_add_explicit(&g_next_slot, 1, memory_order_relaxed) % NAME_SLOTS];
    uint32_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
    /* another writer on this slot (the ring went round meanwhile): leave it to them */
    if ((q & 1u) || !atomic_compare_exchange_strong_explicit(&s->seq, &q, q + 1, memory_order_relaxed,
                                                             memory_order_relaxed))
        return;
    /* release stores: the odd count is seen before any of them */
    atomic_store_explicit(&s->family, (uint32_t)family, memory_order_release);
    atomic_store_explicit(&s->addr[0], a[0], memory_order_release);
    atomic_store_explicit(&s->addr[1], a[1], memory_order_release);
    for (unsigned i = 0; i < NAME_WORDS; i++) atomic_store_explicit(&s->name[i], nm[i], memory_order_release);
    atomic_store_explicit(&s->seq, q + 2, memory_order_release);
}

void tbio_host_note_all(const char *node, const struct addrinfo *res) {
    if (!node) return;
    /* a numeric host names nothing new */
    unsigned char probe[16];
    if (inet_pton(AF_INET, node, probe) == 1 || inet_pton(AF_INET6, node, probe) == 1) return;
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (!ai->ai_addr) continue;
        if (ai->ai_family == AF_INET && ai->ai_addrlen >= sizeof(struct sockaddr_in))
            tbio_host_note(AF_INET, &((const struct sockaddr_in *)ai->ai_addr)->sin_addr, node);
        else if (ai->ai_family == AF_INET6 && ai->ai_addrlen >= sizeof(struct sockaddr_in6))
            tbio_host_note(AF_INET6, &((const struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, node);
    }
}

/* ---------- the job's own peers ---------- */
static _Atomic int g_local_depth;

void tbio_local_begin(void) { atomic_fetch_add_explicit(&g_local_depth, 1, memory_order_acq_rel); }
void tbio_local_end(void) {
    int d = atomic_load_explicit(&g_local_depth, memory_order_relaxed);
    while (d > 0 && !atomic_compare_exchange_weak_explicit(&g_local_depth, &d, d - 1, memory_order_acq_rel,
                                                           memory_order_relaxed)) {
    }
}
int tbio_local_window(void) { return atomic_load_explicit(&g_local_depth, memory_order_acquire) > 0; }

#define LOCAL_PEERS 64u
typedef struct local_slot {
    _Atomic uint32_t ready;       /* 1 once family, addr and port are stored */
    _Atomic uint32_t family;
    _Atomic uint32_t port;
    _Atomic uint64_t addr[2];
} local_slot;
static local_slot g_local[LOCAL_PEERS];
static _Atomic uint32_t g_nlocal;

static int local_has(int family, const uint64_t a[2], unsigned port) {
    uint32_t n = atomic_load_explicit(&g_nlocal, memory_order_acquire);
    for (uint32_t i = 0; i < n && i < LOCAL_PEERS; i++) {
        local_slot *s = &g_local[i];
        if (!atomic_load_explicit(&s->ready, memory_order_acquire)) continue;
        if (atomic_load_explicit(&s->family, memory_order_relaxed) == (uint32_t)family &&
            atomic_load_explicit(&s->port, memory_order_relaxed) == port &&
            atomic_load_explicit(&s->addr[0], memory_order_relaxed) == a[0] &&
            atomic_load_explicit(&s->addr[1], memory_order_relaxed) == a[1])
            return 1;
    }
    return 0;
}

int tbio_local_peer(const char *host, unsigned port) {
    unsigned char bin[16];
    int family;
    if (!host || port == 0 || port > 65535) return -1;
    if (inet_pton(AF_INET, host, bin) == 1) family = AF_INET;
    else if (inet_pton(AF_INET6, host, bin) == 1) family = AF_INET6;
    else return -1;
    uint64_t a[2];
    addr_words(family, bin, a);
    if (local_has(family, a, port)) return 0;
    uint32_t i = atomic_fetch_add_explicit(&g_nlocal, 1, memory_order_acq_rel);
    if (i >= LOCAL_PEERS) {
        atomic_store_explicit(&g_nlocal, LOCAL_PEERS, memory_order_release);
        return -1;
    }
    local_slot *s = &g_local[i];
    atomic_store_explicit(&s->family, (uint32_t)family, memory_order_relaxed);
    atomic_store_explicit(&s->port, port, memory_order_relaxed);
    atomic_store_explicit(&s->addr[0], a[0], memory_order_relaxed);
    atomic_store_explicit(&s->addr[1], a[1], memory_order_relaxed);
    atomic_store_explicit(&s->ready, 1, memory_order_release);
    return 0;
}

int tbio_fd_set_local(int fd) {
    if (fd < 0) return -1;
    tbio_fd_set_role(fd, TBIO_SOCK_LOCAL);
    return tbio_fd_role(fd) == TBIO_SOCK_LOCAL ? 0 : -1;
}

int tbio_fd_is_local(int fd) { return fd >= 0 && tbio_fd_role(fd) == TBIO_SOCK_LOCAL; }

/* ---------- which socket, and its name ---------- */
static int sock_opt(int fd, int opt, int *out) {
    socklen_t len = sizeof *out;
    return tbio_sys(SYS_getsockopt, fd, SOL_SOCKET, opt, (long)out, (long)&len, 0) == 0 ? 0 : -1;
}

/* (family, 4 or 16 address bytes, port) of a peer; an IPv4-mapped IPv6 address as IPv4 */
typedef struct peer {
    int family;
    unsigned char addr[16];
    unsigned port;
} peer;

static int peer_of(const struct sockaddr *sa, socklen_t len, peer *p) {
    static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (!sa || len < (socklen_t)sizeof(sa_family_t)) return -1;
    if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
        p->family = AF_INET;
        memcpy(p->addr, &s4->sin_addr, 4);
        p->port = ntohs(s4->sin_port);
        return 0;
    }
    if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
        p->port = ntohs(s6->sin6_port);
        if (memcmp(&s6->sin6_addr, v4mapped, 12) == 0) {
            p->family = AF_INET;
            memcpy(p->addr, (const unsigned char *)&s6->sin6_addr + 12, 4);
        } else {
            p->family = AF_INET6;
            memcpy(p->addr, &s6->sin6_addr, 16);
        }
        return 0;
    }
    return 1;   /* another family: local */
}

static int is_loopback(const peer *p) {
    static const unsigned char v6lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return p->family == AF_INET ? p->addr[0] == 127 : memcmp(p->addr, v6lo, 16) == 0;
}

static int local_port(int fd) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    peer me;
    if (tbio_sys(SYS_getsockname, fd, (long)&ss, (long)&len, 0, 0, 0) != 0) return -1;
    return peer_of((const struct sockaddr *)&ss, len, &me) == 0 ? (int)me.port : -1;
}

static size_t put(char *out, size_t at, size_t cap, const char *s) {
    size_t n = strlen(s);
    if (at + n >= cap) return cap;
    memcpy(out + at, s, n);
    return at + n;
}

ssize_t tbio_socket_name(int fd, int role, const struct sockaddr *given, unsigned given_len, char *out,
                         size_t cap) {
    if (role == TBIO_SOCK_ACCEPTED || role == TBIO_SOCK_LOCAL) return 0;
    int type = 0;
    if (sock_opt(fd, SO_TYPE, &type) != 0 || type != SOCK_STREAM) return 0;
    struct sockaddr_storage ss;
    const struct sockaddr *sa = given;
    socklen_t len = given_len;
    if (!sa) {
        len = sizeof ss;
        if (tbio_sys(SYS_getpeername, fd, (long)&ss, (long)&len, 0, 0, 0) != 0) {
            if (errno != ENOTCONN) return 0;
            /* a listening socket (a server's, polled all the time) is local for good; any
             * other is not connected yet: ask again on a later call */
            int listening = 0;
            return sock_opt(fd, SO_ACCEPTCONN, &listening) == 0 && listening ? 0 : -1;
        }
        sa = (const struct sockaddr *)&ss;
    }
    peer p;
    if (peer_of(sa, len, &p) != 0) return 0;
    if (role != TBIO_SOCK_CLIENT) {
        int listening = 0;
        if (sock_opt(fd, SO_ACCEPTCONN, &listening) == 0 && listening) return 0;
        int mine = local_port(fd);
        if (mine >= 0 && (unsigned)mine < p.port) return 0;   /* its port is the lower: a server's */
    }
    if (p.port == 53 || (is_loopback(&p) && p.port >= 6000 && p.port <= 6063)) return 0;
    char host[NAME_WORDS * 8 + 2];
    uint64_t a[2], nm[NAME_WORDS];
    addr_words(p.family, p.addr, a);
    if (local_has(p.family, a, p.port)) return 0;   /* the job's own peer */
    if (lookup_words(p.family, a, nm)) {
        memcpy(host, nm, sizeof nm);
        host[sizeof nm - 1] = 0;
    } else {
        char num[INET6_ADDRSTRLEN];
        if (!inet_ntop(p.family, p.addr, num, sizeof num)) return 0;
        size_t k = 0;
        if (p.family == AF_INET6) host[k++] = '[';
        memcpy(host + k, num, strlen(num));
        k += strlen(num);
        if (p.family == AF_INET6) host[k++] = ']';
        host[k] = 0;
    }
    char port[8];
    int np = 0;
    unsigned v = p.port;
    char digits[6];
    do digits[np++] = (char)('0' + v % 10); while ((v /= 10) > 0);
    for (int i = 0; i < np; i++) port[i] = digits[np - 1 - i];
    port[np] = 0;
    size_t at = put(out, 0, cap, "tcp://");
    at = put(out, at, cap, host);
    at = put(out, at, cap, ":");
    at = put(out, at, cap, port);
    if (at >= cap) return 0;
    out[at] = 0;
    return (ssize_t)at;
}
