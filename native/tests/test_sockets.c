/* Sockets: a client's TCP connection is an endpoint "file" (tcp://host:port)
 * whose counters and trace rows hold exactly the bytes sent and received by
 * every call family (send/recv, read/write, sendmsg/recvmsg); the server
 * side (accepted sockets), Unix sockets and datagram sockets are local and
 * never traced. */
#include "check.h"
#include "tbio.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

/* ThreadSanitizer's interceptors make socket calls where the shim cannot see
 * them (ATTRIBUTION, CHECK_ATTR: check.h): the sequences still run, the
 * attribution checks do not. */

enum { REQ = 1000, RESP = 5000 };

typedef struct server {
    int lfd;
    int port;
    pthread_t th;
} server;

static int recv_all(int fd, char *buf, int n) {
    int got = 0;
    while (got < n) {
        ssize_t r = recv(fd, buf + got, (size_t)(n - got), 0);
        if (r <= 0) return -1;
        got += (int)r;
    }
    return got;
}

/* one connection: read REQ bytes, answer RESP bytes, close */
static void *serve(void *arg) {
    server *sv = arg;
    int fd = accept(sv->lfd, NULL, NULL);
    if (fd < 0) return NULL;
    char *buf = calloc(1, RESP);
    if (recv_all(fd, buf, REQ) == REQ) {
        memset(buf, 'r', RESP);
        for (int sent = 0; sent < RESP;) {
            ssize_t w = send(fd, buf + sent, (size_t)(RESP - sent), 0);
            if (w <= 0) break;
            sent += (int)w;
        }
    }
    free(buf);
    close(fd);
    return NULL;
}

static int server_start(server *sv) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    sv->lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (sv->lfd < 0 || bind(sv->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(sv->lfd, 4) != 0 ||
        getsockname(sv->lfd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    sv->port = ntohs(a.sin_port);
    return pthread_create(&sv->th, NULL, serve, sv);
}

static void server_stop(server *sv) {
    pthread_join(sv->th, NULL);
    close(sv->lfd);
}

static int64_t counter(const tbio_file_info *fi, const char *name) {
    int n = tbio_counter_count(fi->module, 0);
    for (int i = 0; i < n; i++)
        if (strcmp(tbio_counter_name(fi->module, 0, i), name) == 0) return fi->counters[i];
    return -12345;
}

/* the session's files named tcp://...: how many, and the first in *fi */
static int endpoints(tbio_session *s, tbio_file_info *fi) {
    int n = 0;
    for (uint32_t i = 0; i < tbio_session_nfiles(s); i++) {
        tbio_file_info f;
        if (tbio_session_file(s, i, &f) != 0 || f.path_len < 6 || memcmp(f.path, "tcp://", 6) != 0) continue;
        if (n++ == 0) *fi = f;
    }
    return n;
}

/* A client's conversation over every call family: REQ bytes out, RESP in. */
static int converse(int fd, int *reads) {
    char out[REQ], in[RESP];
    memset(out, 'q', sizeof out);
    if (send(fd, out, 300, 0) != 300 || write(fd, out, 200) != 200) return -1;
    struct iovec iov[2] = {{out, 250}, {out + 250, 250}};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
    if (sendmsg(fd, &m, 0) != 500) return -1;
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (poll(&pf, 1, 10000) != 1) return -1;   /* a wait for the answer: a row on the endpoint */
    int got = 0;
    *reads = 0;
    for (int k = 0; got < RESP; k++) {
        ssize_t r;
        if (k % 3 == 0) r = recv(fd, in + got, 700, 0);
        else if (k % 3 == 1) r = read(fd, in + got, (size_t)(RESP - got) < 900 ? (size_t)(RESP - got) : 900);
        else {
            struct iovec v = {in + got, (size_t)(RESP - got) < 800 ? (size_t)(RESP - got) : 800};
            struct msghdr h = {.msg_iov = &v, .msg_iovlen = 1};
            r = recvmsg(fd, &h, 0);
        }
        if (r <= 0) return -1;
        got += (int)r;
        (*reads)++;
    }
    return got;
}

static void check_endpoint(tbio_session *e, const char *want, int reads) {
    tbio_file_info fi;
    int n = endpoints(e, &fi);
    CHECK_ATTR(n, 1);   /* the client's side only: the server's accepted socket is local */
    if (n != 1) return;
    CHECK(fi.path_len == strlen(want) && memcmp(fi.path, want, fi.path_len) == 0);
    if (!(fi.path_len == strlen(want) && memcmp(fi.path, want, fi.path_len) == 0))
        fprintf(stderr, "  endpoint %.*s, expected %s\n", (int)fi.path_len, fi.path, want);
    CHECK(fi.has_record);
    CHECK_EQ_I64(counter(&fi, "POSIX_OPENS"), 1);
    CHECK_EQ_I64(counter(&fi, "POSIX_BYTES_WRITTEN"), REQ);
    CHECK_EQ_I64(counter(&fi, "POSIX_BYTES_READ"), RESP);
    CHECK_EQ_I64(counter(&fi, "POSIX_WRITES"), 3);
    CHECK_EQ_I64(counter(&fi, "POSIX_READS"), reads);
    /* the trace: a row per call, bytes on the rows exact */
    uint64_t ne = tbio_session_nevents(e);
    tbio_event *ev = calloc(ne + 1, sizeof *ev);
    tbio_session_copy_events(e, ev, ne);
    int64_t in = 0, out = 0, connects = 0, polls = 0, rows = 0;
    for (uint64_t i = 0; i < ne; i++) {
        if (ev[i].file != fi.id) continue;
        const char *op = tbio_op_name(ev[i].op);
        rows++;
        if (strcmp(op, "connect") == 0) connects++;
        else if (strcmp(op, "poll") == 0) polls++;
        else if (strncmp(op, "recv", 4) == 0 || strcmp(op, "read") == 0) in += ev[i].returned;
        else if (strncmp(op, "send", 4) == 0 || strcmp(op, "write") == 0) out += ev[i].returned;
        CHECK(ev[i].end_ns >= ev[i].start_ns);
    }
    free(ev);
    CHECK_EQ_I64(connects, 1);
    CHECK_EQ_I64(polls, 1);
    CHECK_EQ_I64(in, RESP);
    CHECK_EQ_I64(out, REQ);
    CHECK_EQ_I64(rows, 1 + 3 + 1 + reads + 1);   /* connect, writes, poll, reads, close */
}

/* How a client's conversation (converse) reaches its server in the table-driven cases. */
typedef enum {
    BY_NUMBER,           /* connect to the numeric address: the endpoint is named by it */
    BY_NAME,             /* connect to what getaddrinfo resolved: the name names the endpoint */
    AFTER_FAILED_RECV,   /* a recv on the socket before it is connected (ENOTCONN): named once it is */
    DUP_BEFORE_SESSION,  /* connected while idle, on a port below the server's, then dup'ed and the
                          * original closed: the copy stays a client in the later capture (the fd
                          * table's states are forgotten when a capture ends; who opened the socket
                          * is not; by the port rule alone, for a socket of unknown role, it would
                          * be the server's side) */
    /* the job's own connections, local: no endpoint, no row */
    IN_LOCAL_WINDOW,     /* connected inside a local window (tbio_local_begin) */
    IN_THREADS_WINDOW,   /* a window opened on another thread (gloo connects on its own threads) */
    TO_LOCAL_PEER,       /* to a peer in the local table (tbio_local_peer) */
    MARKED_LOCAL,        /* connected before the session and marked local (tbio_fd_set_local) */
    /* as BY_NUMBER after the cases above: an endpoint again, whose name may be one resolved earlier */
    NUMBER_AGAIN,
} how_connected;

typedef struct client_case {
    const char *what;
    int endpoints;       /* the session's endpoints: 1 or 0 (local) */
    const char *host;    /* with 1: the endpoint's name (check_endpoint); NULL: its byte counters only */
} client_case;

static const client_case CLIENT_CASES[] = {
    [BY_NUMBER] = {"numeric address", 1, "127.0.0.1"},
    [BY_NAME] = {"resolved name", 1, "localhost"},
    [AFTER_FAILED_RECV] = {"touched before connect", 1, NULL},
    [DUP_BEFORE_SESSION] = {"dup keeps the role", 1, NULL},
    [IN_LOCAL_WINDOW] = {"local window", 0, NULL},
    [IN_THREADS_WINDOW] = {"another thread's local window", 0, NULL},
    [TO_LOCAL_PEER] = {"local peer", 0, NULL},
    [MARKED_LOCAL] = {"marked local", 0, NULL},
    [NUMBER_AGAIN] = {"an endpoint again", 1, NULL},
};

static struct sockaddr_in loopback(int port) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

/* a client socket connected while idle from a port below the server's, as a dup */
static int dup_of_low_port_client(int server_port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int mine = 0;
    for (int p = 20000; p < 20200 && !mine; p++) {
        struct sockaddr_in b = loopback(p);
        if (bind(fd, (struct sockaddr *)&b, sizeof b) == 0) mine = p;
    }
    CHECK(mine != 0 && mine < server_port);
    struct sockaddr_in a = loopback(server_port);
    CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);   /* idle: marks the client */
    int copy = dup(fd);
    CHECK(copy >= 0);
    close(fd);
    return copy;
}

/* a local window opened on this thread and left open (its opener ends it) */
static void *window_open(void *arg) {
    (void)arg;
    tbio_local_begin();
    return NULL;
}

/* one client conversation with a fresh server in a session, connected as the case says */
static void client_conversation(how_connected how) {
    const client_case *t = &CLIENT_CASES[how];
    int failed_before = check_failures;
    server sv;
    CHECK(server_start(&sv) == 0);
    struct sockaddr_in a = loopback(sv.port);
    int fd = how == DUP_BEFORE_SESSION ? dup_of_low_port_client(sv.port) : socket(AF_INET, SOCK_STREAM, 0);
    if (how == TO_LOCAL_PEER) CHECK(tbio_local_peer("127.0.0.1", (unsigned)sv.port) == 0);
    if (how == MARKED_LOCAL) {
        CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
        CHECK(!tbio_fd_is_local(fd));
        CHECK(tbio_fd_set_local(fd) == 0);
        CHECK(tbio_fd_is_local(fd));
    }
    tbio_session *s = tbio_begin();
    switch (how) {
    case BY_NUMBER:
    case TO_LOCAL_PEER:
    case NUMBER_AGAIN:
        CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
        break;
    case IN_LOCAL_WINDOW:
        tbio_local_begin();
        CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
        tbio_local_end();
        break;
    case IN_THREADS_WINDOW: {
        pthread_t th;
        CHECK(pthread_create(&th, NULL, window_open, NULL) == 0 && pthread_join(th, NULL) == 0);
        CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
        tbio_local_end();
        break;
    }
    case BY_NAME: {
        char port[16];
        snprintf(port, sizeof port, "%d", sv.port);
        struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
        CHECK(getaddrinfo(t->host, port, &hints, &res) == 0 && res);
        CHECK(res && connect(fd, res->ai_addr, res->ai_addrlen) == 0);
        freeaddrinfo(res);
        break;
    }
    case AFTER_FAILED_RECV: {
        char b[8];
        CHECK(recv(fd, b, sizeof b, MSG_DONTWAIT) < 0);   /* not connected: ENOTCONN */
        CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
        break;
    }
    case DUP_BEFORE_SESSION:
    case MARKED_LOCAL:
        break;
    }
    int reads = 0;
    CHECK_EQ_I64(converse(fd, &reads), RESP);
    close(fd);
    server_stop(&sv);
    tbio_session *e = tbio_end(s);
    tbio_file_info fi;
    if (t->endpoints == 0) {
        CHECK_EQ_I64(endpoints(e, &fi), 0);
    } else if (t->host) {
        char want[64];
        snprintf(want, sizeof want, "tcp://%s:%d", t->host, sv.port);
        check_endpoint(e, want, reads);
    } else {
        CHECK_ATTR(endpoints(e, &fi), 1);
        if (ATTRIBUTION && endpoints(e, &fi) == 1) {
            CHECK_EQ_I64(counter(&fi, "POSIX_BYTES_READ"), RESP);
            CHECK_EQ_I64(counter(&fi, "POSIX_BYTES_WRITTEN"), REQ);
        }
    }
    tbio_session_free(e);
    if (check_failures != failed_before) fprintf(stderr, "  (in the client case: %s)\n", t->what);
}

/* Unix stream sockets and datagram sockets are local: no file, no row */
static void test_local(void) {
    tbio_session *s = tbio_begin();
    int sv[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    char b[64] = {0};
    CHECK(write(sv[0], b, 64) == 64);
    CHECK(read(sv[1], b, 64) == 64);
    CHECK(send(sv[1], b, 10, 0) == 10);
    CHECK(recv(sv[0], b, 10, 0) == 10);
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(9)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(connect(u, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(send(u, b, 10, 0) == 10);
    close(u);
    /* a listening socket polled: local, and named once (its state kept: no row, no endpoint) */
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in la = {.sin_family = AF_INET, .sin_port = 0};
    la.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(l, (struct sockaddr *)&la, sizeof la) == 0 && listen(l, 1) == 0);
    struct pollfd pf = {.fd = l, .events = POLLIN};
    CHECK(poll(&pf, 1, 0) == 0);
    CHECK(poll(&pf, 1, 0) == 0);
    close(l);
    close(sv[0]);
    close(sv[1]);
    tbio_session *e = tbio_end(s);
    tbio_file_info fi;
    CHECK_EQ_I64(endpoints(e, &fi), 0);
    CHECK_ATTR(tbio_session_nevents(e), 0);
    tbio_session_free(e);
}

/* the other call families: sendto/recvfrom on a connected socket, splice from
 * the socket into a pipe (the pipe's side untraced), a ppoll */
static void test_other_calls(void) {
    server sv;
    CHECK(server_start(&sv) == 0);
    tbio_session *s = tbio_begin();
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = loopback(sv.port);
    CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
    char out[REQ], in[RESP];
    memset(out, 'q', sizeof out);
    CHECK(sendto(fd, out, 600, 0, NULL, 0) == 600);
    CHECK(sendto(fd, out + 600, 400, 0, NULL, 0) == 400);
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    struct timespec tmo = {10, 0};
    CHECK(ppoll(&pf, 1, &tmo, NULL) == 1);
    int p[2];
    CHECK(pipe(p) == 0);
    int got = 0, spliced = 0;
    while (got < RESP) {
        ssize_t r;
        if (got < RESP / 2) {
            r = recvfrom(fd, in + got, 1000, 0, NULL, NULL);
        } else {
            r = splice(fd, NULL, p[1], NULL, (size_t)(RESP - got), 0);
            if (r > 0 && read(p[0], in, (size_t)r) != r) r = -1;
            if (r > 0) spliced += (int)r;
        }
        if (r <= 0) break;
        got += (int)r;
    }
    CHECK_EQ_I64(got, RESP);
    CHECK(spliced > 0);
    close(p[0]);
    close(p[1]);
    close(fd);
    server_stop(&sv);
    tbio_session *e = tbio_end(s);
    tbio_file_info fi;
    CHECK_ATTR(endpoints(e, &fi), 1);
    if (ATTRIBUTION && endpoints(e, &fi) == 1) {
        CHECK_EQ_I64(counter(&fi, "POSIX_BYTES_WRITTEN"), REQ);
        CHECK_EQ_I64(counter(&fi, "POSIX_BYTES_READ"), RESP);
        uint64_t ne = tbio_session_nevents(e);
        tbio_event *ev = calloc(ne + 1, sizeof *ev);
        tbio_session_copy_events(e, ev, ne);
        int64_t by_splice = 0, ppolls = 0, sendtos = 0;
        for (uint64_t i = 0; i < ne; i++) {
            if (ev[i].file != fi.id) continue;
            const char *op = tbio_op_name(ev[i].op);
            if (strcmp(op, "splice") == 0) by_splice += ev[i].returned;
            if (strcmp(op, "ppoll") == 0) ppolls++;
            if (strcmp(op, "sendto") == 0) sendtos++;
        }
        free(ev);
        CHECK_EQ_I64(by_splice, spliced);
        CHECK_EQ_I64(ppolls, 1);
        CHECK_EQ_I64(sendtos, 2);
    }
    tbio_session_free(e);
}

/* the job's own connections are local: no endpoint, no row; others stay endpoints */
static void test_marked_local(void) {
    for (how_connected h = IN_LOCAL_WINDOW; h <= MARKED_LOCAL; h++) client_conversation(h);
    /* the window closed, the table names other ports: a connection is an endpoint again */
    client_conversation(NUMBER_AGAIN);
    tbio_local_end();   /* unbalanced: no effect */
    client_conversation(NUMBER_AGAIN);
    CHECK(tbio_local_peer("not-numeric", 80) == -1);
    CHECK(tbio_local_peer("::1", 0) == -1);
    CHECK(tbio_local_peer("::1", 8080) == 0);
    CHECK(tbio_fd_set_local(-1) == -1);
}

int main(void) {
    CHECK(tbio_enable() == 0);
    for (how_connected h = BY_NUMBER; h <= DUP_BEFORE_SESSION; h++) client_conversation(h);
    test_local();
    test_other_calls();
    test_marked_local();
    CHECK(tbio_disable() == 0);
    return CHECK_DONE();
}
