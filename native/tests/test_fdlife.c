/* Descriptor lifecycle: a number closed where the shim cannot see it (inside
 * libc: closedir, pclose, closefrom; here a raw close(2)) and made again by
 * another call must never keep naming the file it named before. */
#include "check.h"
#include "tbio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

/* ATTRIBUTION, CHECK_ATTR: check.h (what ThreadSanitizer hides from the shim) */

static char g_dir[512];
static char g_stale[600];

/* id of `path` (POSIX) in the session, or -1 */
static int64_t file_id(tbio_session *s, const char *path) {
    for (uint32_t i = 0; i < tbio_session_nfiles(s); i++) {
        tbio_file_info fi;
        if (tbio_session_file(s, i, &fi) != 0) continue;
        if (fi.module == 0 && fi.path_len == strlen(path) && memcmp(fi.path, path, fi.path_len) == 0)
            return i;
    }
    return -1;
}

/* trace rows of `path` other than opening, duplicating and closing it (the
 * calls made on the reused number) */
static int64_t io_rows(tbio_session *s, const char *path) {
    int64_t id = file_id(s, path);
    if (id < 0) return 0;
    uint64_t n = tbio_session_nevents(s);
    tbio_event *ev = calloc(n + 1, sizeof *ev);
    tbio_session_copy_events(s, ev, n);
    int64_t rows = 0;
    for (uint64_t i = 0; i < n; i++) {
        const char *op = tbio_op_name(ev[i].op);
        if (ev[i].file == (uint32_t)id && strncmp(op, "open", 4) != 0 && strcmp(op, "close") != 0 &&
            strcmp(op, "fcntl") != 0) {
            fprintf(stderr, "  row on %s: %s fd %d returned %lld\n", path, op, ev[i].fd,
                    (long long)ev[i].returned);
            rows++;
        }
    }
    free(ev);
    return rows;
}

typedef int (*maker)(int *second);

static int mk_socket(int *b) { (void)b; return socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0); }
static int mk_socketpair(int *b) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) != 0) return -1;
    *b = sv[1];
    return sv[0];
}
static int mk_pipe(int *b) {
    int p[2];
    if (pipe(p) != 0) return -1;
    *b = p[1];
    return p[0];
}
static int mk_pipe2(int *b) {
    int p[2];
    if (pipe2(p, O_NONBLOCK) != 0) return -1;
    *b = p[1];
    return p[0];
}
static int mk_eventfd(int *b) { (void)b; return eventfd(1, EFD_NONBLOCK); }
static int mk_epoll_create(int *b) { (void)b; return epoll_create(1); }
static int mk_epoll_create1(int *b) { (void)b; return epoll_create1(0); }
static int mk_memfd(int *b) { (void)b; return memfd_create("tbio-test", 0); }
static int mk_timerfd(int *b) { (void)b; return timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK); }
static int mk_signalfd(int *b) {
    (void)b;
    sigset_t m;
    sigemptyset(&m);
    sigaddset(&m, SIGUSR2);
    return signalfd(-1, &m, SFD_NONBLOCK);
}
static int mk_inotify_init(int *b) {
    (void)b;
    int fd = inotify_init();
    if (fd >= 0) fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}
static int mk_inotify_init1(int *b) { (void)b; return inotify_init1(IN_NONBLOCK); }
static int g_listener = -1, g_client = -1;
static int mk_accept(int *b) { (void)b; return accept(g_listener, NULL, NULL); }
static int mk_accept4(int *b) { (void)b; return accept4(g_listener, NULL, NULL, SOCK_NONBLOCK); }
static char g_tmpl[700];
static int mk_mkstemp(int *b) {
    (void)b;
    snprintf(g_tmpl, sizeof g_tmpl, "%s/mkstemp.XXXXXX", g_dir);
    return mkstemp(g_tmpl);
}
static int mk_mkostemp(int *b) {
    (void)b;
    snprintf(g_tmpl, sizeof g_tmpl, "%s/mkostemp.XXXXXX", g_dir);
    return mkostemp(g_tmpl, O_CLOEXEC);
}
static DIR *g_dirp;
static int mk_opendir(int *b) {
    (void)b;
    g_dirp = opendir(g_dir);
    return g_dirp ? dirfd(g_dirp) : -1;
}
static FILE *g_fp;
static int mk_tmpfile(int *b) {
    (void)b;
    g_fp = tmpfile();
    return g_fp ? fileno(g_fp) : -1;
}

static void listen_socket(void) {
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "tbio-fdlife-%d", (int)getpid());  /* abstract */
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a.sun_path + 1));
    g_listener = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(bind(g_listener, (struct sockaddr *)&a, len) == 0);
    CHECK(listen(g_listener, 4) == 0);
    g_client = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(connect(g_client, (struct sockaddr *)&a, len) == 0);
}

/* The number of a traced file, closed behind the shim's back, is made again
 * by `mk`: reads and writes on it must not be counted for the file. */
static void reuse_after_hidden_close(const char *what, maker mk) {
    tbio_session *s = tbio_begin();
    CHECK(s != NULL);
    int fd = open(g_stale, O_RDWR);
    CHECK(fd >= 0);
    CHECK(syscall(SYS_close, fd) == 0);   /* as closedir/fclose do inside libc */
    int second = -1;
    int nfd = mk(&second);
    if (nfd != fd) fprintf(stderr, "%s: got fd %d, expected the reused %d\n", what, nfd, fd);
    CHECK(nfd == fd);
    uint64_t one = 1;
    char buf[64];
    ssize_t w = write(second >= 0 ? second : nfd, &one, sizeof one);
    ssize_t r = read(nfd, buf, sizeof buf);
    (void)w;
    (void)r;
    struct stat st;
    (void)fstat(nfd, &st);
    if (g_dirp) {
        closedir(g_dirp);
        g_dirp = NULL;
    } else if (g_fp) {
        fclose(g_fp);
        g_fp = NULL;
    } else {
        close(nfd);
    }
    if (second >= 0) close(second);
    tbio_session *e = tbio_end(s);
    int64_t rows = io_rows(e, g_stale);
    if (rows) fprintf(stderr, "%s: %lld calls on the reused number counted for %s\n", what, (long long)rows, g_stale);
    CHECK_ATTR(rows, 0);
    tbio_session_free(e);
}

/* os.scandir(fd): a dup of a directory fd handed to fdopendir, closed by
 * closedir inside libc; the number is then made again by a raw syscall the
 * shim cannot wrap: closedir itself must have reset it. */
static void test_closedir_resets(void) {
    tbio_session *s = tbio_begin();
    int dfd = open(g_dir, O_RDONLY | O_DIRECTORY);
    CHECK(dfd >= 0);
    int dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
    DIR *d = fdopendir(dup_fd);
    CHECK(d != NULL);
    while (readdir(d)) {
    }
    CHECK(closedir(d) == 0);
    int efd = (int)syscall(SYS_eventfd2, 0, EFD_NONBLOCK);
    CHECK(efd == dup_fd);
    uint64_t v = 7;
    for (int i = 0; i < 1250; i++) CHECK(write(efd, &v, sizeof v) == 8);   /* 10,000 bytes */
    close(efd);
    close(dfd);
    tbio_session *e = tbio_end(s);
    CHECK_ATTR(io_rows(e, g_dir), 0);
    tbio_session_free(e);
}

/* closefrom closes inside libc: numbers above lowfd are forgotten */
static void test_closefrom_resets(void) {
    tbio_session *s = tbio_begin();
    int keep = open(g_stale, O_RDONLY);          /* below: stays */
    int fd = open(g_stale, O_RDWR);
    CHECK(keep >= 0 && fd > keep);
    closefrom(fd);
    int efd = (int)syscall(SYS_eventfd2, 0, EFD_NONBLOCK);
    CHECK(efd == fd);
    uint64_t v = 7;
    CHECK(write(efd, &v, sizeof v) == 8);
    char b[4];
    CHECK(pread(keep, b, 4, 0) == 4);           /* still the file */
    close(efd);
    close(keep);
    tbio_session *e = tbio_end(s);
    int64_t id = file_id(e, g_stale);
    CHECK_ATTR(id >= 0, 1);
    if (id < 0 && ATTRIBUTION) {
        fprintf(stderr, "closefrom: %s not in the capture; %llu events:\n", g_stale,
                (unsigned long long)tbio_session_nevents(e));
        for (uint32_t i = 0; i < tbio_session_nfiles(e); i++) {
            tbio_file_info fi;
            if (tbio_session_file(e, i, &fi) == 0) fprintf(stderr, "  %.*s\n", (int)fi.path_len, fi.path);
        }
    }
    tbio_file_info fi;
    if (id >= 0 && tbio_session_file(e, (uint32_t)id, &fi) == 0) {
        int n = tbio_counter_count(0, 0);
        for (int i = 0; i < n; i++) {
            const char *name = tbio_counter_name(0, 0, i);
            if (strcmp(name, "POSIX_WRITES") == 0) CHECK_ATTR(fi.counters[i], 0);
            if (strcmp(name, "POSIX_READS") == 0) CHECK_ATTR(fi.counters[i], 1);
        }
    }
    tbio_session_free(e);
}

int main(void) {
    const char *base = getenv("TBIO_TEST_TMP");
    snprintf(g_dir, sizeof g_dir, "%s/fdlife.%d", base ? base : "/tmp", (int)getpid());
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", g_dir);
    if (system(cmd) != 0) return 2;
    snprintf(g_stale, sizeof g_stale, "%s/stale.bin", g_dir);
    int f = open(g_stale, O_CREAT | O_WRONLY | O_TRUNC, 0600);
    if (f < 0 || write(f, "0123456789abcdef", 16) != 16) return 2;
    close(f);
    sigset_t m;
    sigemptyset(&m);
    sigaddset(&m, SIGUSR2);
    sigprocmask(SIG_BLOCK, &m, NULL);
    signal(SIGPIPE, SIG_IGN);   /* writes on unconnected sockets answer EPIPE */
    CHECK(tbio_enable() == 0);
    listen_socket();
    static const struct {
        const char *name;
        maker mk;
    } makers[] = {
        {"socket", mk_socket},     {"socketpair", mk_socketpair},         {"pipe", mk_pipe},
        {"pipe2", mk_pipe2},       {"eventfd", mk_eventfd},               {"epoll_create", mk_epoll_create},
        {"epoll_create1", mk_epoll_create1}, {"memfd_create", mk_memfd}, {"timerfd_create", mk_timerfd},
        {"signalfd", mk_signalfd}, {"inotify_init", mk_inotify_init},     {"inotify_init1", mk_inotify_init1},
        {"accept", mk_accept},     {"accept4", mk_accept4},               {"mkstemp", mk_mkstemp},
        {"mkostemp", mk_mkostemp}, {"opendir", mk_opendir},               {"tmpfile", mk_tmpfile},
    };
    for (size_t i = 0; i < sizeof makers / sizeof makers[0]; i++) {
        if (strncmp(makers[i].name, "accept", 6) == 0) {
            /* one pending connection per accept */
            close(g_client);
            struct sockaddr_un a;
            socklen_t len = sizeof a;
            getsockname(g_listener, (struct sockaddr *)&a, &len);
            g_client = socket(AF_UNIX, SOCK_STREAM, 0);
            CHECK(connect(g_client, (struct sockaddr *)&a, len) == 0);
        }
        reuse_after_hidden_close(makers[i].name, makers[i].mk);
    }
    test_closedir_resets();
    test_closefrom_resets();
    close(g_client);
    close(g_listener);
    CHECK(tbio_disable() == 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0) return 2;
    return CHECK_DONE();
}
