/* Raw system calls, the clock and error reporting.  Nothing here calls a
 * function the shim wraps, so the shim's own I/O can never recurse. */
#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

long tbio_sys(long n, long a, long b, long c, long d, long e, long f) {
    return syscall(n, a, b, c, d, e, f);
}

int tbio_raw_open(const char *path, int flags) {
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC, 0);
}

int tbio_raw_close(int fd) { return (int)syscall(SYS_close, fd); }

ssize_t tbio_raw_read(int fd, void *buf, size_t n) { return syscall(SYS_read, fd, buf, n); }

ssize_t tbio_raw_readlink(const char *path, char *buf, size_t n) {
    return syscall(SYS_readlinkat, AT_FDCWD, path, buf, n);
}

int64_t tbio_raw_lseek(int fd, int64_t off, int whence) {
    return syscall(SYS_lseek, fd, off, whence);
}

int64_t tbio_raw_blksize_fd(int fd) {
    struct stat st;
    if (syscall(SYS_fstat, fd, &st) != 0) return 0;
    return (int64_t)st.st_blksize;
}

pid_t tbio_gettid(void) { return (pid_t)syscall(SYS_gettid); }

char *tbio_read_file(const char *path, size_t *len) {
    int fd = tbio_raw_open(path, O_RDONLY);
    if (fd < 0) return NULL;
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); buf = NULL; break; }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = tbio_raw_read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
    }
    tbio_raw_close(fd);
    if (buf) {
        buf[n] = 0;
        if (len) *len = n;
    }
    return buf;
}

/* ---- clock: a cheap tick counter calibrated against CLOCK_REALTIME ---- */
/* tbio_g_use_tsc (shim.h, in tbio_g_hot): -1 until tbio_clock_init */
static _Atomic double g_ns_per_tick = 1.0;

uint64_t tbio_realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double tbio_ns_per_tick(void) { return atomic_load(&g_ns_per_tick); }

/* A (ticks, realtime ns) pair taken close together: the read of the clock is
 * bracketed by two tick reads and the tightest of a few tries wins, so a
 * preemption between the two reads cannot skew the pair. */
static void clock_pair(int tsc, uint64_t *ticks, uint64_t *ns) {
    uint64_t best_gap = UINT64_MAX;
    for (int i = 0; i < 8; i++) {
        uint64_t a = tsc ? tbio_tsc() : tbio_realtime_ns();
        uint64_t r = tbio_realtime_ns();
        uint64_t b = tsc ? tbio_tsc() : r;
        if (b - a < best_gap) {
            best_gap = b - a;
            *ticks = a + (b - a) / 2;
            *ns = r;
        }
        if (!tsc) break;   /* ticks are the realtime clock itself */
    }
}

void tbio_clock_pair(uint64_t *ticks, uint64_t *ns) { clock_pair(tbio_g_use_tsc == 1, ticks, ns); }

static int tsc_is_invariant(void) {
#if defined(__x86_64__) || defined(__i386__)
    size_t len = 0;
    char *info = tbio_read_file("/proc/cpuinfo", &len);
    if (!info) return 0;
    int ok = strstr(info, " constant_tsc") && strstr(info, " nonstop_tsc");
    free(info);
    return ok;
#elif defined(__aarch64__)
    return 1;   /* the generic timer is architecturally constant-rate */
#else
    return 0;
#endif
}

/* Calibrated into locals and published last (the rate, then the choice), so
 * no other thread, and no child forked during the 10 ms it takes, ever sees
 * the tick counter chosen with its rate not yet known: until then the clock
 * stays uninitialised (-1) and whoever asks calibrates for itself. */
void tbio_clock_init(void) {
    if (tbio_g_use_tsc != -1) return;
    const char *force = getenv("TBIO_CLOCK");
    int use = tsc_is_invariant() && !(force && strcmp(force, "realtime") == 0);
    double npt = 1.0;
    if (use) {
        /* Two tight (ticks, realtime) pairs 10 ms apart; sessions refine with
         * their own begin/end pairs when they last long enough. */
        uint64_t a_t = 0, a_ns = 0, b_t = 0, b_ns = 0;
        clock_pair(1, &a_t, &a_ns);
        do {
            clock_pair(1, &b_t, &b_ns);
        } while (b_ns - a_ns < 10000000u);
        npt = (double)(b_ns - a_ns) / (double)(b_t - a_t);
        if (!(npt > 0.0)) {
            use = 0;
            npt = 1.0;
        }
    }
    atomic_store(&g_ns_per_tick, npt);   /* the rate before the choice */
    atomic_store_explicit(&tbio_g_hot.use_tsc, use, memory_order_release);
}

/* ---- errors ---- */
static char g_error[512];

void tbio_set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_error, sizeof g_error, fmt, ap);
    va_end(ap);
}

const char *tbio_last_error(void) { return g_error; }
