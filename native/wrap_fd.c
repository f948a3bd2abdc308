/* Descriptor lifecycle wrappers: calls that make a descriptor or close one
 * inside libc only reset the number's fd-table entry. */
#include "wrap.h"

/* ---------------- descriptor lifecycle ----------------
 * Calls that make a descriptor, or close one inside libc, only reset the
 * number's fd-table entry: the next traced call on it resolves it afresh
 * (through /proc/self/fd) instead of trusting what the number named before.
 * Whether idle or recording: the table outlives captures.  A store per
 * entry, no lock and no allocation (signal handlers may call these). */
static inline int fd_fresh(int fd) {
    if (fd >= 0) tbio_fd_forget(fd);
    return fd;
}
static inline int fd_fresh_pair(int ret, const int fds[2]) {
    if (ret == 0) {
        tbio_fd_forget(fds[0]);
        tbio_fd_forget(fds[1]);
    }
    return ret;
}
static inline FILE *fp_fresh(FILE *fp) {
    if (fp) tbio_fd_forget(fileno(fp));
    return fp;
}
/* errno is the real call's: tbio_fd_forget never touches it */
int tbio_w_socket(int domain, int type, int protocol) { return fd_fresh(real_socket(domain, type, protocol)); }
int tbio_w_socketpair(int domain, int type, int protocol, int sv[2]) {
    return fd_fresh_pair(real_socketpair(domain, type, protocol, sv), sv);
}
/* an accepted socket is one of the process's own servers': local, never an endpoint (sockets.c) */
static inline int fd_accepted(int fd) {
    if (fd >= 0) {
        tbio_fd_forget(fd);
        tbio_fd_set_role(fd, TBIO_SOCK_ACCEPTED);
    }
    return fd;
}
int tbio_w_accept(int fd, __SOCKADDR_ARG addr, socklen_t *__restrict len) {
    int ret = real_accept(fd, addr, len);
    int err = errno;
    fd_accepted(ret);
    errno = err;
    return ret;
}
int tbio_w_accept4(int fd, __SOCKADDR_ARG addr, socklen_t *__restrict len, int flags) {
    int ret = real_accept4(fd, addr, len, flags);
    int err = errno;
    fd_accepted(ret);
    errno = err;
    return ret;
}
int tbio_w_pipe(int fds[2]) { return fd_fresh_pair(real_pipe(fds), fds); }
int tbio_w_pipe2(int fds[2], int flags) { return fd_fresh_pair(real_pipe2(fds, flags), fds); }
int tbio_w_eventfd(unsigned int count, int flags) { return fd_fresh(real_eventfd(count, flags)); }
int tbio_w_epoll_create(int size) { return fd_fresh(real_epoll_create(size)); }
int tbio_w_epoll_create1(int flags) { return fd_fresh(real_epoll_create1(flags)); }
int tbio_w_memfd_create(const char *name, unsigned int flags) {
    return fd_fresh(real_memfd_create(name, flags));
}
int tbio_w_timerfd_create(int clockid, int flags) { return fd_fresh(real_timerfd_create(clockid, flags)); }
int tbio_w_signalfd(int fd, const sigset_t *mask, int flags) {
    int ret = real_signalfd(fd, mask, flags);
    return ret != fd ? fd_fresh(ret) : ret;   /* fd != -1: changed the mask of an existing one */
}
int tbio_w_inotify_init(void) { return fd_fresh(real_inotify_init()); }
int tbio_w_inotify_init1(int flags) { return fd_fresh(real_inotify_init1(flags)); }
/* mkstemp opens inside libc: the file is then found through /proc/self/fd */
int tbio_w_mkstemp(char *tmpl) { return fd_fresh(real_mkstemp(tmpl)); }
int tbio_w_mkstemp64(char *tmpl) { return fd_fresh(real_mkstemp64(tmpl)); }
int tbio_w_mkostemp(char *tmpl, int flags) { return fd_fresh(real_mkostemp(tmpl, flags)); }
int tbio_w_mkostemp64(char *tmpl, int flags) { return fd_fresh(real_mkostemp64(tmpl, flags)); }
DIR *tbio_w_opendir(const char *name) {
    DIR *d = real_opendir(name);
    if (d) fd_fresh(dirfd(d));
    return d;
}
int tbio_w_closedir(DIR *d) {
    /* closes the descriptor inside libc (fdopendir's, e.g. os.scandir(fd)'s dup) */
    if (d) fd_fresh(dirfd(d));
    return real_closedir(d);
}
void tbio_w_closefrom(int lowfd) {
    real_closefrom(lowfd);
    if (lowfd >= 0) tbio_fd_forget_range((unsigned)lowfd, ~0u);
}
FILE *tbio_w_tmpfile(void) { return fp_fresh(real_tmpfile()); }
FILE *tbio_w_tmpfile64(void) { return fp_fresh(real_tmpfile64()); }
FILE *tbio_w_popen(const char *cmd, const char *mode) { return fp_fresh(real_popen(cmd, mode)); }
int tbio_w_pclose(FILE *fp) {
    if (fp) fd_fresh(fileno(fp));
    return real_pclose(fp);
}
