/* Socket wrappers: connect names an endpoint (and counts a connection), the
 * send/recv family is traced as reads and writes of it, splice as a copy,
 * getaddrinfo remembers the names resolved (sockets.c).  Which sockets are
 * endpoints, and which are local and never traced: sockets.c.
 *
 * Idle cost: the send/recv family checks one global and calls the real
 * function, as every data call; connect also marks its descriptor a client
 * or, inside a local window, local (a load and a store), getaddrinfo remembers its answer's addresses (a few stores into
 * a fixed ring per address, next to a name lookup's microseconds). */
#include "wrap.h"

/* glibc's transparent union (GNU C) or a plain pointer */
#if defined(__USE_GNU) && !defined(__cplusplus)
#define SA_PTR(a) ((const struct sockaddr *)(a).__sockaddr__)
#else
#define SA_PTR(a) ((const struct sockaddr *)(a))
#endif

/* ---------------- connect ---------------- */
static void connect_done(tbio_call *c, int fd, const struct sockaddr *sa, socklen_t len, int ret, int err) {
    uint64_t t1;
    int made = ret == 0 || err == EINPROGRESS;
    if (!tbio_call_post(c, &t1)) return;
    /* named from the address given: a non-blocking connect has no peer yet */
    uint32_t id = made || err != EFAULT ? tbio_socket_id(fd, sa, len) : TBIO_NO_FILE;
    if (made) tbio_fd_set_posix(fd, id);
    if (id == TBIO_OVER_FILE) TBIO_EACH_SESSION(c) tbio_count_over(c, 0, 0);
    if (tbio_tracked(id)) TBIO_EACH_SESSION(c) {
        tbio_rec *r = made ? tbio_rec_get(c->s, id) : NULL;
        if (r) {
            tbio_rec_lock(r);
            tbio_posix_on_open(&r->u.p, 0, tbio_sec(c->s, c->t0), tbio_sec(c->s, t1));
            r->offset_known = 1;
            tbio_rec_unlock(r);
        }
        tbio_trace_add(c, t1, TBIO_OP_connect, id, fd, -1, -1, ret, made ? 0 : err, 0, 0);
    }
    tbio_call_leave(c);
}

int tbio_w_connect(int fd, __CONST_SOCKADDR_ARG addr, socklen_t len) {
    tbio_call c;
    int rec = !IDLE() && tbio_call_pre(&c);
    int ret = real_connect(fd, addr, len);
    int err = errno;
    /* inside a window the job opened for its own traffic (tbio_local_begin): local */
    if (ret == 0 || err == EINPROGRESS) tbio_fd_set_role(fd, tbio_local_window() ? TBIO_SOCK_LOCAL : TBIO_SOCK_CLIENT);
    /* the address is the caller's: read it only when the kernel could */
    if (rec) connect_done(&c, fd, err == EFAULT && ret != 0 ? NULL : SA_PTR(addr), len, ret, err);
    errno = err;
    return ret;
}

/* ---------------- data ---------------- */
#define NET_CALL(OP, KIND, FD, REQ, RTYPE, CALL) \
    TBIO_TRACED(RTYPE, CALL, tbio_io_done(&c, OP, KIND, FD, -1, REQ, 1, (int64_t)ret_, err_))

/* bytes a message asks for; the caller's msghdr is read only after the kernel accepted it */
static int64_t msg_len(const struct msghdr *m) {
    int64_t n = 0;
    for (size_t i = 0; m && m->msg_iov && i < m->msg_iovlen; i++) n += (int64_t)m->msg_iov[i].iov_len;
    return n;
}

ssize_t tbio_w_send(int fd, const void *buf, size_t n, int flags) {
    NET_CALL(TBIO_OP_send, TBIO_K_WRITE, fd, (int64_t)n, ssize_t, real_send(fd, buf, n, flags));
}
ssize_t tbio_w_recv(int fd, void *buf, size_t n, int flags) {
    NET_CALL(TBIO_OP_recv, TBIO_K_READ, fd, (int64_t)n, ssize_t, real_recv(fd, buf, n, flags));
}
ssize_t tbio_w___recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags) {
    NET_CALL(TBIO_OP___recv_chk, TBIO_K_READ, fd, (int64_t)n, ssize_t, real___recv_chk(fd, buf, n, buflen, flags));
}
ssize_t tbio_w_sendto(int fd, const void *buf, size_t n, int flags, __CONST_SOCKADDR_ARG addr, socklen_t len) {
    NET_CALL(TBIO_OP_sendto, TBIO_K_WRITE, fd, (int64_t)n, ssize_t, real_sendto(fd, buf, n, flags, addr, len));
}
ssize_t tbio_w_recvfrom(int fd, void *__restrict buf, size_t n, int flags, __SOCKADDR_ARG addr,
                        socklen_t *__restrict len) {
    NET_CALL(TBIO_OP_recvfrom, TBIO_K_READ, fd, (int64_t)n, ssize_t, real_recvfrom(fd, buf, n, flags, addr, len));
}
ssize_t tbio_w___recvfrom_chk(int fd, void *__restrict buf, size_t n, size_t buflen, int flags,
                              __SOCKADDR_ARG addr, socklen_t *__restrict len) {
    NET_CALL(TBIO_OP___recvfrom_chk, TBIO_K_READ, fd, (int64_t)n, ssize_t,
             real___recvfrom_chk(fd, buf, n, buflen, flags, addr, len));
}
ssize_t tbio_w_sendmsg(int fd, const struct msghdr *msg, int flags) {
    NET_CALL(TBIO_OP_sendmsg, TBIO_K_WRITE, fd, ret_ >= 0 ? msg_len(msg) : -1, ssize_t,
             real_sendmsg(fd, msg, flags));
}
ssize_t tbio_w_recvmsg(int fd, struct msghdr *msg, int flags) {
    NET_CALL(TBIO_OP_recvmsg, TBIO_K_READ, fd, ret_ >= 0 ? msg_len(msg) : -1, ssize_t,
             real_recvmsg(fd, msg, flags));
}
ssize_t tbio_w_splice(int in, off64_t *inoff, int out, off64_t *outoff, size_t n, unsigned int flags) {
    TBIO_TRACED(ssize_t, real_splice(in, inoff, out, outoff, n, flags),
                tbio_copy_done(&c, TBIO_OP_splice, in, TBIO_COPY_OFF(inoff, ret_), out, TBIO_COPY_OFF(outoff, ret_),
                               (int64_t)n, ret_, err_));
}

/* ---------------- waits ----------------
 * Python's sockets with a timeout (requests, botocore, urllib with timeout=) poll before each
 * recv, so the wait for the answer is in poll, not in the recv: a poll whose set holds an
 * endpoint's socket is a row on that endpoint (the first of the first POLL_SCAN entries;
 * counters unchanged).  Looked at only while recording, after the call. */
#define POLL_SCAN 8
static void poll_done(tbio_call *c, int op, const struct pollfd *fds, nfds_t n, int ret, int err) {
    uint64_t t1;
    if (!tbio_call_post(c, &t1)) return;
    uint32_t id = TBIO_NO_FILE;
    int fd = -1;
    for (nfds_t i = 0; fds && i < n && i < POLL_SCAN && !(ret < 0 && err == EFAULT); i++) {
        if (fds[i].fd < 0) continue;
        uint32_t k = tbio_fd_posix(fds[i].fd);
        const tbio_file *f = tbio_tracked(k) ? tbio_file_get(k) : NULL;
        if (f && f->len > 6 && memcmp(f->path, "tcp://", 6) == 0) {
            id = k;
            fd = fds[i].fd;
            break;
        }
    }
    if (tbio_tracked(id)) TBIO_EACH_SESSION(c)
        tbio_trace_add(c, t1, op, id, fd, -1, -1, ret, ret >= 0 ? 0 : err, 0, 0);
    tbio_call_leave(c);
}
#define POLL_CALL(OP, FDS, N, CALL) TBIO_TRACED(int, CALL, poll_done(&c, OP, FDS, N, ret_, err_))
int tbio_w_poll(struct pollfd *fds, nfds_t n, int timeout) {
    POLL_CALL(TBIO_OP_poll, fds, n, real_poll(fds, n, timeout));
}
int tbio_w___poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen) {
    POLL_CALL(TBIO_OP___poll_chk, fds, n, real___poll_chk(fds, n, timeout, fdslen));
}
int tbio_w_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *sigmask) {
    POLL_CALL(TBIO_OP_ppoll, fds, n, real_ppoll(fds, n, tmo, sigmask));
}

/* ---------------- names ---------------- */
int tbio_w_getaddrinfo(const char *__restrict node, const char *__restrict service,
                       const struct addrinfo *__restrict hints, struct addrinfo **__restrict res) {
    int ret = real_getaddrinfo(node, service, hints, res);
    int err = errno;
    /* the job's own names (gloo resolving its host) do not name storage endpoints */
    if (ret == 0 && res && !tbio_local_window()) tbio_host_note_all(node, *res);
    errno = err;
    return ret;
}
