/* A signal handler on a small alternate stack (sigaltstack) that does I/O
 * while a capture records: the shim's accounting must fit in about what the
 * handler needs untraced.  Each run is a forked child whose alternate stack
 * has a guard page below it, so an overflow is a SIGSEGV the parent sees.
 * Signal frames differ from CPU to CPU (AVX-512 state is ~2.7 KB), so the
 * bound is relative: the smallest stack (1 KB steps) on which the handler
 * runs with the shim disabled, plus 2 KB. */
#include "check.h"
#include "tbio.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_dir[512];
static int g_fd = -1;

static void on_usr1(int sig) {
    (void)sig;
    /* a relative path (the shim reads the cwd), and an fd the capture first meets here
     * (the shim reads its /proc/self/fd link twice) */
    int fd = open("from-handler.bin", O_CREAT | O_WRONLY | O_TRUNC, 0600);
    if (fd >= 0) {
        if (write(fd, "abc", 3) != 3) _exit(5);
        close(fd);
    }
    if (write(g_fd, "z", 1) != 1) _exit(6);
}

/* In a child: run the handler once on an alternate stack of `size` bytes. */
static int child(size_t size, int traced) {
    if (chdir(g_dir) != 0) return 7;
    g_fd = open("before.bin", O_CREAT | O_WRONLY | O_TRUNC, 0600);
    if (g_fd < 0) return 8;
    tbio_session *s = NULL;
    if (traced) {
        if (tbio_enable() != 0) return 9;
        s = tbio_begin();
        if (!s) return 10;
    }
    char *m = mmap(NULL, size + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m, 4096, PROT_NONE) != 0) return 11;   /* the guard page */
    stack_t st = {.ss_sp = m + 4096, .ss_size = size, .ss_flags = 0};
    if (sigaltstack(&st, NULL) != 0) return 12;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR1, &sa, NULL);
    raise(SIGUSR1);
    if (!s) return 0;
    tbio_session *e = tbio_end(s);
    /* the handler's calls were recorded: both files, with their writes */
    uint64_t n = e ? tbio_session_nevents(e) : 0;
    uint32_t files = e ? tbio_session_nfiles(e) : 0;
    return files == 2 && n >= 4 ? 0 : 13;
}

static int run(size_t size, int traced) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) _exit(child(size, traced));
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int main(void) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    /* what it measures, stack use, is what the sanitizers change: ASan's redzones and
     * its own SIGSEGV handler on the overflowed stack, TSan's deferred signals */
    printf("test_altstack: plain builds only (run there by the same ctest)\n");
    return 0;
#endif
    const char *base = getenv("TBIO_TEST_TMP");
    snprintf(g_dir, sizeof g_dir, "%s/altstack.%d", base && *base ? base : "/tmp", (int)getpid());
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", g_dir);
    if (system(cmd) != 0) return 2;
    size_t plain = 0;
    for (size_t kb = 2; kb <= 64 && !plain; kb++)
        if (run(kb * 1024, 0) == 0) plain = kb * 1024;
    CHECK(plain != 0);
    if (plain) {
        int st = run(plain + 2048, 1);
        if (st != 0)
            fprintf(stderr, "the handler runs untraced on a %zu-byte alternate stack; traced on %zu bytes: "
                    "status %d (139: overflow)\n", plain, plain + 2048, st);
        CHECK_EQ_I64(st, 0);
    }
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0) return 2;
    return CHECK_DONE();
}
