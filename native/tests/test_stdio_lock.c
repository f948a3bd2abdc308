/* A stream's lock held by another thread (as a thread blocked in fread on an
 * empty pipe holds it) must stall neither a traced call on the stream nor
 * tbio_end: the shim never waits for a FILE lock while inside its own code. */
#include "check.h"
#include "tbio.h"

#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static FILE *g_fp;
static atomic_int g_locked, g_release, g_read_done;
static size_t g_got;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* holds the stream's lock until told, or 3 s at most (so a failing run ends) */
static void *holder(void *arg) {
    (void)arg;
    flockfile(g_fp);
    atomic_store(&g_locked, 1);
    double t0 = now();
    while (!atomic_load(&g_release) && now() - t0 < 3.0) usleep(1000);
    funlockfile(g_fp);
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    char buf[64];
    volatile size_t n = 10;   /* not a constant: no inline fread_unlocked expansion */
    g_got = (fread_unlocked)(buf, 1, n, g_fp);
    atomic_store(&g_read_done, 1);
    return NULL;
}

static void test_end_while_stream_locked(void) {
    const char *base = getenv("TBIO_TEST_TMP");
    char dir[512], fifo[600], cmd[700];
    snprintf(dir, sizeof dir, "%s/stdiolock.%d", base ? base : "/tmp", (int)getpid());
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    CHECK(system(cmd) == 0);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK(tbio_enable() == 0);
    int fd = open(fifo, O_RDWR);   /* a named pipe: a traced path */
    CHECK(fd >= 0);
    CHECK(write(fd, "0123456789", 10) == 10);
    g_fp = fdopen(fd, "r");    /* opened before the capture: its position is read on first use */
    CHECK(g_fp != NULL);
    tbio_session *s = tbio_begin();
    CHECK(s != NULL);
    pthread_t h, r;
    pthread_create(&h, NULL, holder, NULL);
    while (!atomic_load(&g_locked)) usleep(100);
    pthread_create(&r, NULL, reader, NULL);
    double t0 = now();
    while (!atomic_load(&g_read_done) && now() - t0 < 1.0) usleep(1000);
    double read_s = now() - t0;
    CHECK(atomic_load(&g_read_done));   /* the traced read returned while the lock was held */
    t0 = now();
    tbio_session *e = tbio_end(s);
    double end_s = now() - t0;
    atomic_store(&g_release, 1);
    pthread_join(r, NULL);
    pthread_join(h, NULL);
    if (read_s >= 1.0 || end_s >= 0.5) fprintf(stderr, "read took %.2f s, tbio_end %.2f s\n", read_s, end_s);
    CHECK(end_s < 0.5);
    CHECK_EQ_I64(g_got, 10);
    CHECK(e == s);
    tbio_session_free(e);
    fclose(g_fp);
    CHECK(tbio_disable() == 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
}

int main(void) {
    test_end_while_stream_locked();
    return CHECK_DONE();
}
