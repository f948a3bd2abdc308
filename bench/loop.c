/* Hot loops for bench/pread_overhead.py, bench/socket_overhead.py and bench/scale_files.py.
 *
 * Built by the benchmark with `gcc -O2 -fPIC -shared` and loaded through
 * ctypes, so every pread below is a call through THIS library's PLT/GOT slot
 * -- the slot tb_iotrace patches.  Timing is taken inside C with the clock
 * the caller names (CLOCK_THREAD_CPUTIME_ID: this thread's user + system
 * time, blind to time spent preempted on a busy machine; or CLOCK_MONOTONIC,
 * wall time); the shim wraps neither, and no Python overhead enters.
 *
 * Every function returns the elapsed nanoseconds of its loop, or -1 when a
 * call did not return what was asked for. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

static inline int64_t clock_ns(clockid_t clk) {
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static inline int64_t now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

/* n preads of `size` bytes, offsets walking 0, size, 2*size, ... modulo
 * `span` (a multiple of size that fits the file): cached, sequential reads. */
int64_t tb_pread_loop(int fd, int64_t n, int64_t size, int64_t span, int clk) {
    char buf[4096] __attribute__((aligned(64)));
    if (size <= 0 || size > (int64_t)sizeof buf || span < size) return -1;
    int64_t t0 = clock_ns(clk);
    int64_t off = 0;
    for (int64_t i = 0; i < n; i++) {
        if (pread(fd, buf, (size_t)size, (off_t)off) != (ssize_t)size) return -1;
        off += size;
        if (off + size > span) off = 0;
    }
    return clock_ns(clk) - t0;
}

/* n recv(MSG_PEEK) of `size` bytes on a connected socket whose peer sent at
 * least that much: a syscall that neither waits nor consumes, as a cached pread
 * (bench/socket_overhead.py). */
int64_t tb_recv_peek_loop(int fd, int64_t n, int64_t size, int clk) {
    char buf[4096] __attribute__((aligned(64)));
    if (size <= 0 || size > (int64_t)sizeof buf) return -1;
    int64_t t0 = clock_ns(clk);
    for (int64_t i = 0; i < n; i++)
        if (recv(fd, buf, (size_t)size, MSG_PEEK) != (ssize_t)size) return -1;
    return clock_ns(clk) - t0;
}

/* Cost of the clocks a tracer can use, n back-to-back reads each. */
int64_t tb_clock_gettime_loop(int clk, int64_t n) {
    struct timespec ts;
    volatile int64_t sink = 0;
    int64_t t0 = now_ns();
    for (int64_t i = 0; i < n; i++) {
        clock_gettime(clk, &ts);
        sink += ts.tv_nsec;
    }
    (void)sink;
    return now_ns() - t0;
}

int64_t tb_rdtsc_loop(int64_t n) {
#if defined(__x86_64__) || defined(__i386__)
    volatile uint64_t sink = 0;
    int64_t t0 = now_ns();
    for (int64_t i = 0; i < n; i++) sink += __rdtsc();
    (void)sink;
    return now_ns() - t0;
#else
    (void)n;
    return -1;
#endif
}

/* A syscall-free hooked call, to resolve the idle wrapper's cost below the
 * noise of a pread: n fgetc on a fully buffered stream over the file
 * (rewound at EOF, one read(2) per buffer).  Returns elapsed ns, -1 on error. */
void *tb_fopen(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (fp) setvbuf(fp, NULL, _IOFBF, 1 << 17);
    return fp;
}

void tb_fclose(void *fp) { fclose((FILE *)fp); }

int64_t tb_fgetc_loop(void *stream, int64_t n, int clk) {
    FILE *fp = stream;
    volatile int sink = 0;
    int64_t t0 = clock_ns(clk);
    for (int64_t i = 0; i < n; i++) {
        int c = fgetc(fp);
        if (c == EOF) {
            rewind(fp);
            if ((c = fgetc(fp)) == EOF) return -1;
        }
        sink += c;
    }
    (void)sink;
    return clock_ns(clk) - t0;
}

/* bench/scale_files.py: files <dir>/f<9 digits> numbered first .. first+n-1,
 * file i holding (i % 13) + 1 bytes.  Create them (open O_CREAT, write, close)... */
static int64_t file_size(int64_t i) { return i % 13 + 1; }

int64_t tb_create_files(const char *dir, int64_t first, int64_t n, int clk) {
    char path[4096];
    static const char data[16] = "xxxxxxxxxxxxxxx";
    int64_t t0 = clock_ns(clk);
    for (int64_t i = first; i < first + n; i++) {
        snprintf(path, sizeof path, "%s/f%09lld", dir, (long long)i);
        int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (fd < 0) return -1;
        if (write(fd, data, (size_t)file_size(i)) != (ssize_t)file_size(i)) return -1;
        if (close(fd) != 0) return -1;
    }
    return clock_ns(clk) - t0;
}

/* ...and open + close each (O_RDONLY): the idle cost of the path calls. */
int64_t tb_open_close_loop(const char *dir, int64_t first, int64_t n, int clk) {
    char path[4096];
    int64_t t0 = clock_ns(clk);
    for (int64_t i = first; i < first + n; i++) {
        snprintf(path, sizeof path, "%s/f%09lld", dir, (long long)i);
        int fd = open(path, O_RDONLY);
        if (fd < 0 || close(fd) != 0) return -1;
    }
    return clock_ns(clk) - t0;
}
