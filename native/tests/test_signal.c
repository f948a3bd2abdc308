/* Signal safety: a SIGALRM handler that does open/write/close (all
 * async-signal-safe in POSIX; crash reporters and loggers do this) while the
 * interrupted thread is inside the shim must never deadlock it, idle or
 * recording.  Each phase runs in a child process that the parent kills
 * after a timeout: a hang is a failure, not a stuck test run. */
#include "check.h"
#include "tbio.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char g_dir[512];
static char g_sigpath[600];
static volatile sig_atomic_t g_handled;

static void on_alarm(int sig) {
    (void)sig;
    int saved = errno;
    int fd = open(g_sigpath, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
        if (write(fd, "x", 1) != 1) _exit(3);
        close(fd);
    }
    g_handled++;
    errno = saved;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The loop a signal interrupts: opens of distinct traced paths (absolute and
 * relative), stats, dups and closes: every wrapper that resolves a path or an fd. */
static void churn(double seconds) {
    char path[700];
    double end = now_s() + seconds;
    for (unsigned i = 0; now_s() < end; i++) {
        snprintf(path, sizeof path, "%s/f%u", g_dir, i % 4096);
        int fd = open(path, O_RDWR | O_CREAT, 0600);
        if (fd < 0) _exit(4);
        int fd2 = dup(fd);
        struct stat st;
        if (stat(path, &st) != 0) _exit(5);
        if (pwrite(fd, "abc", 3, 0) != 3) _exit(6);
        close(fd2);
        close(fd);
        snprintf(path, sizeof path, "f%u", i % 4096);   /* relative: cwd is g_dir */
        fd = open(path, O_RDONLY);
        if (fd < 0) _exit(7);
        close(fd);
    }
}

/* Wait for a phase's child: 0 it exited 0, 1 hung (killed after `limit` s), 2 any other end. */
static int wait_phase(pid_t pid, double limit, const char *name) {
    double deadline = now_s() + limit;
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) break;
        if (now_s() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fprintf(stderr, "%s phase: hung (killed after %.0f s)\n", name, limit);
            return 1;
        }
        usleep(20000);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "%s phase: child status %d (exit %d)\n", name, status, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        return 2;
    }
    return 0;
}

/* One phase in a child: 0 ok, 1 hung (killed after the timeout), 2 crashed. */
static int run_phase(int recording, double seconds) {
    pid_t pid = fork();
    if (pid == 0) {
        if (chdir(g_dir) != 0) _exit(8);
        if (tbio_enable() != 0) _exit(9);
        tbio_session *s = recording ? tbio_begin() : NULL;
        if (recording && !s) _exit(10);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm;
        sa.sa_flags = SA_RESTART;
        sigaction(SIGALRM, &sa, NULL);
        struct itimerval it = {{0, 50}, {0, 50}};   /* every 50 us */
        setitimer(ITIMER_REAL, &it, NULL);
        churn(seconds);
        struct itimerval off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_REAL, &off, NULL);
        if (g_handled < 100) _exit(11);   /* the handler must really have run often */
        if (s) {
            tbio_session *e = tbio_end(s);
            if (e != s) _exit(12);
            /* every handler call was either traced or counted as passed through */
            tbio_untracked_info u;
            if (tbio_session_untracked(e, &u) != 0) _exit(13);
            uint64_t opens = 0;
            uint64_t n = tbio_session_nevents(e) + tbio_session_dropped(e);
            (void)n;
            tbio_event *ev = calloc(tbio_session_nevents(e) + 1, sizeof *ev);
            uint64_t got = tbio_session_copy_events(e, ev, tbio_session_nevents(e));
            tbio_file_info fi;
            for (uint64_t i = 0; i < got; i++)
                if (ev[i].file != 0xffffffffu && tbio_session_file_by_id(e, ev[i].file, &fi) == 0 &&
                    fi.path_len == strlen(g_sigpath) && memcmp(fi.path, g_sigpath, fi.path_len) == 0 &&
                    strncmp(tbio_op_name(ev[i].op), "write", 5) == 0)
                    opens++;
            free(ev);
            if (tbio_session_dropped(e) == 0 && opens + u.reentrant_calls / 3 < (uint64_t)g_handled / 2) _exit(14);
            tbio_session_free(e);
        }
        _exit(0);
    }
    return wait_phase(pid, seconds + 20.0, recording ? "recording" : "idle");
}

/* A handler's traced I/O landing while this thread forks: the session memory is
 * zeros in the child (MADV_WIPEONFORK), so from the fork handlers' prepare until the
 * child's has run, the forking thread's calls must pass through untouched.  In a
 * child of its own (as run_phase): forks 300 times under a 50 us timer, every
 * grandchild recording a session of its own; 0 ok, else the first failure. */
static int run_forking(void) {
    pid_t pid = fork();
    if (pid == 0) {
        if (chdir(g_dir) != 0) _exit(8);
        if (tbio_enable() != 0) _exit(9);
        tbio_session *s = tbio_begin();
        if (!s) _exit(10);
        churn(0.05);    /* records, trace chunks and thread structs to leave behind */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_alarm;
        sa.sa_flags = SA_RESTART;
        sigaction(SIGALRM, &sa, NULL);
        struct itimerval it = {{0, 50}, {0, 50}};
        setitimer(ITIMER_REAL, &it, NULL);
        for (int i = 0; i < 300; i++) {
            pid_t c = fork();
            if (c < 0) _exit(15);
            if (c == 0) {
                tbio_session *cs = tbio_begin();
                if (!cs) _exit(16);
                churn(0.002);
                tbio_session *e = tbio_end(cs);
                if (e != cs || tbio_session_nevents(e) == 0) _exit(17);
                tbio_session_free(e);
                if (tbio_end(s) != NULL) _exit(18);   /* the parent's: not recording here */
                _exit(0);
            }
            int st = 0;
            while (waitpid(c, &st, 0) < 0 && errno == EINTR) {}
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) _exit(WIFEXITED(st) ? 40 + WEXITSTATUS(st) : 100 + WTERMSIG(st));
        }
        struct itimerval off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_REAL, &off, NULL);
        tbio_session *e = tbio_end(s);
        if (e != s || tbio_session_nevents(e) == 0) _exit(19);
        tbio_session_free(e);
        _exit(0);
    }
    return wait_phase(pid, 60.0, "forking");
}

int main(void) {
    const char *base = getenv("TBIO_TEST_TMP");
    snprintf(g_dir, sizeof g_dir, "%s/sigtest.%d", base ? base : "/tmp", (int)getpid());
    snprintf(g_sigpath, sizeof g_sigpath, "%s/from-handler.log", g_dir);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", g_dir);
    if (system(cmd) != 0) return 2;
    for (int round = 0; round < 2; round++) {
        CHECK_EQ_I64(run_phase(0, 1.5), 0);
        CHECK_EQ_I64(run_phase(1, 1.5), 0);
    }
    CHECK_EQ_I64(run_forking(), 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0) return 2;
    return CHECK_DONE();
}
