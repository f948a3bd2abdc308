/* fork() while another thread is inside the shim's API: the child must
 * never inherit a lock held by, or a state half-written by, a thread that
 * does not exist there.  Each child is given a few seconds; one that does
 * not exit by then is killed and counted as hung. */
#include "check.h"
#include "tbio.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Under ThreadSanitizer: a child holds a copy of the parent's other thread
 * that it can never join; that is what these tests are about, not a leak. */
const char *__tsan_default_options(void);
__attribute__((visibility("default"))) const char *__tsan_default_options(void) { return "report_thread_leaks=0"; }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Exit status of pid, or -1 if it had not exited after `limit` seconds (then killed). */
static int wait_or_kill(pid_t pid, double limit) {
    double end = now_s() + limit;
    for (;;) {
        int st = 0;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (now_s() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
}

static atomic_int g_stop, g_started;

/* ---- the clock: another thread's first tbio_begin calibrating it (10 ms) ---- */
static tbio_session *g_first;
static void *first_begin(void *arg) {
    (void)arg;
    g_first = tbio_begin();
    return NULL;
}

static double fcounter(const tbio_file_info *fi, const char *name) {
    for (int i = 0; i < tbio_counter_count(fi->module, 1); i++)
        if (strcmp(tbio_counter_name(fi->module, 1, i), name) == 0) return fi->fcounters[i];
    return -1.0;
}

/* The child's own capture: a write 15 ms after it starts must be stamped
 * 15 ms in, not at 15 ms times the tick rate a half-calibrated clock assumed. */
static int child_times_one_write(void) {
    char path[600];
    const char *tmp = getenv("TBIO_TEST_TMP");
    snprintf(path, sizeof path, "%s/tbio_fork_clock_%d.bin", tmp && *tmp ? tmp : "/tmp", (int)getpid());
    if (tbio_enable() != 0) return 10;
    tbio_session *s = tbio_begin();
    if (!s) return 11;
    struct timespec ts = {0, 15000000};
    nanosleep(&ts, NULL);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "x", 1) != 1) return 12;
    close(fd);
    tbio_session *e = tbio_end(s);
    unlink(path);
    if (!e) return 13;
    double len_s = (double)(tbio_session_end_ns(e) - tbio_session_start_ns(e)) * 1e-9;
    int rc = 14;
    tbio_file_info fi;
    for (uint32_t i = 0; i < tbio_session_nfiles(e); i++) {
        if (tbio_session_file(e, i, &fi) != 0 || fi.path_len != strlen(path) ||
            memcmp(fi.path, path, fi.path_len) != 0 || !fi.has_record)
            continue;
        double at = fcounter(&fi, "POSIX_F_WRITE_START_TIMESTAMP");
        rc = at >= 0.014 && at <= len_s ? 0 : 15;
        if (rc) fprintf(stderr, "child: write stamped at %.4f s in a %.4f s capture\n", at, len_s);
    }
    tbio_session_free(e);
    return rc;
}

static void test_fork_while_clock_calibrates(void) {
    pthread_t t;
    CHECK(pthread_create(&t, NULL, first_begin, NULL) == 0);
    struct timespec ts = {0, 3000000};   /* well inside the calibration's 10 ms */
    nanosleep(&ts, NULL);
    pid_t pid = fork();
    if (pid == 0) _exit(child_times_one_write());
    CHECK_EQ_I64(wait_or_kill(pid, 10.0), 0);
    pthread_join(t, NULL);
    CHECK(g_first != NULL);
    if (g_first) tbio_session_free(tbio_end(g_first));
    tbio_disable();
}

/* ---- sessions: another thread beginning and ending them (no tbio_enable yet) ---- */
static atomic_long g_rotations;
static void *rotator(void *arg) {
    (void)arg;
    while (!atomic_load(&g_stop)) {
        tbio_session *s = tbio_begin();
        if (s) tbio_session_free(tbio_end(s));
        atomic_fetch_add(&g_rotations, 1);
    }
    return NULL;
}

static void test_fork_while_sessions_rotate(void) {
    pthread_t t;
    atomic_store(&g_stop, 0);
    CHECK(pthread_create(&t, NULL, rotator, NULL) == 0);
    while (atomic_load(&g_rotations) < 2) sched_yield();
    int hung = 0, bad = 0;
    for (int i = 0; i < 10; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            tbio_session *s = tbio_begin();   /* the session lock: held by the rotator at fork? */
            tbio_session *e = s ? tbio_end(s) : NULL;
            _exit(e ? 0 : 1);
        }
        int st = wait_or_kill(pid, 3.0);
        hung += st == -1;
        bad += st != 0 && st != -1;
    }
    atomic_store(&g_stop, 1);
    pthread_join(t, NULL);
    CHECK_EQ_I64(hung, 0);
    CHECK_EQ_I64(bad, 0);
}

/* ---- set_filters: another thread replacing the path filters ---- */
static char *g_big;

static void *filter_setter(void *arg) {
    (void)arg;
    atomic_store(&g_started, 1);
    while (!atomic_load(&g_stop)) tbio_set_filters(g_big, g_big);
    return NULL;
}

static void test_fork_while_setting_filters(void) {
    /* a long list: copying it keeps the setter inside tbio_set_filters nearly all the time */
    size_t n = 64 * 1024;
    g_big = malloc(n + 1);
    CHECK(g_big != NULL);
    if (!g_big) return;
    for (size_t i = 0; i < n; i++) g_big[i] = i % 8 == 7 ? '\n' : 'a' + (char)(i % 7);
    g_big[n] = 0;
    const char *old = tbio_get_excludes();
    char *keep = strdup(old);
    pthread_t t;
    atomic_store(&g_stop, 0);
    atomic_store(&g_started, 0);
    CHECK(pthread_create(&t, NULL, filter_setter, NULL) == 0);
    while (!atomic_load(&g_started)) sched_yield();
    int hung = 0, bad = 0;
    for (int i = 0; i < 3; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            /* the child's own filters: waits forever on a lock held by a thread not copied */
            int r = tbio_set_filters("/tmp/\n", "/\n");
            _exit(r == 0 && strcmp(tbio_get_excludes(), "/\n") == 0 ? 0 : 1);
        }
        int st = wait_or_kill(pid, 3.0);
        hung += st == -1;
        bad += st != 0 && st != -1;
    }
    atomic_store(&g_stop, 1);
    pthread_join(t, NULL);
    CHECK_EQ_I64(hung, 0);
    CHECK_EQ_I64(bad, 0);
    tbio_set_filters("", keep);
    free(keep);
    free(g_big);
}

/* ---- the first tbio_enable: another thread inside it while this one forks ----
 * enable() calibrates the clock (10 ms) under its lock; the child's own
 * enable must not wait on that lock forever.  Run in a fresh process (this
 * program again, exec'ed: the shim untouched there, and ThreadSanitizer's
 * view of its locks too) so that this enable is the process's first call. */
static void *first_enable(void *arg) {
    (void)arg;
    atomic_store(&g_started, 1);
    return (void *)(intptr_t)tbio_enable();
}

static int fresh_fork_while_enabling(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, first_enable, NULL) != 0) return 20;
    while (!atomic_load(&g_started)) sched_yield();
    struct timespec ts = {0, 3000000};   /* inside enable's 10 ms calibration */
    nanosleep(&ts, NULL);
    pid_t pid = fork();
    if (pid == 0) _exit(tbio_enable() == 0 ? 0 : 1);
    int st = wait_or_kill(pid, 10.0);
    void *r = NULL;
    pthread_join(t, &r);
    tbio_disable();
    return st == -1 ? 21 : st != 0 ? 22 : r != NULL ? 23 : 0;
}

static void test_fork_while_first_enable(void) {
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "test_fork", "--first-enable", (char *)NULL);
        _exit(127);
    }
    CHECK_EQ_I64(wait_or_kill(pid, 30.0), 0);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--first-enable") == 0) return fresh_fork_while_enabling();
    /* first, before anything calls tbio_enable(): the clock is not calibrated yet,
     * and nothing has been hooked at fork by enable() */
    test_fork_while_first_enable();
    test_fork_while_clock_calibrates();
    test_fork_while_sessions_rotate();
    test_fork_while_setting_filters();
    return CHECK_DONE();
}
