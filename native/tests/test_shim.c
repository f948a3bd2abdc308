/* End-to-end tests of the shim from C: patching, counters through real
 * calls, the trace, detach, threads. */
#include "check.h"
#include "tbio.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[512];

static const tbio_file_info *find(tbio_session *s, const char *path, int module, tbio_file_info *fi) {
    for (uint32_t i = 0; i < tbio_session_nfiles(s); i++) {
        if (tbio_session_file(s, i, fi) != 0) continue;
        if (fi->module == module && fi->path_len == strlen(path) && memcmp(fi->path, path, fi->path_len) == 0 &&
            fi->has_record)
            return fi;
    }
    return NULL;
}

static int64_t counter(const tbio_file_info *fi, const char *name) {
    int n = tbio_counter_count(fi->module, 0);
    for (int i = 0; i < n; i++)
        if (strcmp(tbio_counter_name(fi->module, 0, i), name) == 0) return fi->counters[i];
    fprintf(stderr, "no counter %s\n", name);
    return -12345;
}

static void test_posix_roundtrip(void) {
    char path[600];
    snprintf(path, sizeof path, "%s/a.bin", g_dir);
    char buf[4096];
    memset(buf, 7, sizeof buf);
    CHECK(tbio_enable() == 0);
    CHECK(tbio_patch_count() > 0);
    tbio_session *s = tbio_begin();
    CHECK(s != NULL);
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK(write(fd, buf, 4096) == 4096);
    CHECK(pwrite(fd, buf, 100, 8192) == 100);
    CHECK(lseek(fd, 0, SEEK_SET) == 0);
    CHECK(read(fd, buf, 1000) == 1000);
    CHECK(read(fd, buf, 1000) == 1000);
    CHECK(pread(fd, buf, 64, 5000) == 64);
    struct stat st;
    CHECK(fstat(fd, &st) == 0);
    CHECK(stat(path, &st) == 0);
    int fd2 = dup(fd);
    CHECK(fd2 >= 0);
    CHECK(read(fd2, buf, 10) == 10);
    close(fd2);
    fsync(fd);
    void *m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
    CHECK(m != MAP_FAILED);
    munmap(m, 4096);
    CHECK(close(fd) == 0);
    errno = 0;
    CHECK(open("/nonexistent-dir-tbio/x", O_RDONLY) == -1 && errno == ENOENT);
    CHECK(read(-1, buf, 1) == -1 && errno == EBADF);
    tbio_session *e = tbio_end(s);
    CHECK(e == s);
    tbio_file_info fi;
    CHECK(find(e, path, 0, &fi) != NULL);
    if (find(e, path, 0, &fi)) {
        CHECK_EQ_I64(counter(&fi, "POSIX_OPENS"), 2);      /* open + dup */
        CHECK_EQ_I64(counter(&fi, "POSIX_DUPS"), 1);
        CHECK_EQ_I64(counter(&fi, "POSIX_READS"), 4);
        CHECK_EQ_I64(counter(&fi, "POSIX_WRITES"), 2);
        CHECK_EQ_I64(counter(&fi, "POSIX_BYTES_READ"), 2074);
        CHECK_EQ_I64(counter(&fi, "POSIX_BYTES_WRITTEN"), 4196);
        CHECK_EQ_I64(counter(&fi, "POSIX_SEEKS"), 1);
        CHECK_EQ_I64(counter(&fi, "POSIX_STATS"), 2);
        CHECK_EQ_I64(counter(&fi, "POSIX_MMAPS"), 1);
        CHECK_EQ_I64(counter(&fi, "POSIX_FSYNCS"), 1);
        CHECK_EQ_I64(counter(&fi, "POSIX_MAX_BYTE_WRITTEN"), 8291);
        /* read at 1000 after 0..999; and, as in Darshan, the pread moved the
         * tracked offset to 5064, so the dup'd read of 10 counts at 5064 too */
        CHECK_EQ_I64(counter(&fi, "POSIX_CONSEC_READS"), 2);
        CHECK_EQ_I64(counter(&fi, "POSIX_MODE"), 0644);
    }
    {   /* the bulk copy gives what the per-file API gives, in the same order */
        uint64_t nrows = 0, nbytes = 0;
        CHECK(tbio_session_files_size(e, 0, 1, &nrows, &nbytes) == 0);
        CHECK(nrows >= 1);
        int nc = tbio_counter_count(0, 0), nf = tbio_counter_count(0, 1);
        uint8_t *used = calloc((size_t)nc, 1), *fused = calloc((size_t)nf, 1);
        CHECK(tbio_session_files_used(e, 0, used, fused) == 0);
        int32_t *cols = calloc((size_t)nc, sizeof *cols), *fcols = calloc((size_t)nf, sizeof *fcols);
        uint32_t ncols = 0, nfcols = 0;
        for (int k = 0; k < nc; k++)
            if (used[k]) cols[ncols++] = k;
        for (int k = 0; k < nf; k++)
            if (fused[k]) fcols[nfcols++] = k;
        int64_t *cm = calloc(nrows * (size_t)nc, sizeof *cm);
        double *fm = calloc(nrows * (size_t)nf, sizeof *fm);
        uint32_t *ids = calloc(nrows, sizeof *ids);
        uint64_t *ends = calloc(nrows, sizeof *ends);
        char *paths = malloc(nbytes + 1);
        CHECK_EQ_I64(tbio_session_copy_files(e, 0, 1, nrows, ids, NULL, cols, ncols, cm, fcols, nfcols, fm, ends,
                                             paths, nbytes), nrows);
        uint64_t row = 0, start = 0;
        for (uint32_t i = 0; i < tbio_session_nfiles(e); i++) {
            tbio_file_info g;
            if (tbio_session_file(e, i, &g) != 0 || g.module != 0 || !g.has_record) continue;
            CHECK(row < nrows);
            if (row >= nrows) break;
            CHECK_EQ_I64(ids[row], g.id);
            CHECK_EQ_I64(ends[row] - start, g.path_len);
            CHECK(memcmp(paths + start, g.path, g.path_len) == 0);
            for (int k = 0; k < nc; k++) {
                CHECK(used[k] || g.counters[k] == 0);
                CHECK_EQ_I64(cm[(uint64_t)k * nrows + row], g.counters[k]);
            }
            for (int k = 0; k < nf; k++) CHECK(fm[(uint64_t)k * nrows + row] == g.fcounters[k]);
            start = ends[row++];
        }
        CHECK_EQ_I64(row, nrows);
        /* a column index out of range copies nothing */
        int32_t bad = nc;
        CHECK_EQ_I64(tbio_session_copy_files(e, 0, 1, nrows, NULL, NULL, &bad, 1, cm, NULL, 0, NULL, NULL, NULL, 0), 0);
        free(used), free(fused), free(cols), free(fcols), free(cm), free(fm), free(ids), free(ends), free(paths);
    }
    uint64_t n = tbio_session_nevents(e);
    CHECK(n >= 14);
    tbio_event *ev = calloc(n, sizeof *ev);
    CHECK_EQ_I64(tbio_session_copy_events(e, ev, n), n);
    int saw_fail_open = 0, saw_pread = 0;
    for (uint64_t i = 0; i < n; i++) {
        const char *op = tbio_op_name(ev[i].op);
        CHECK(ev[i].end_ns >= ev[i].start_ns);
        CHECK(ev[i].start_ns >= tbio_session_start_ns(e) && ev[i].end_ns <= tbio_session_end_ns(e));
        if (strcmp(op, "pread") == 0 || strcmp(op, "pread64") == 0) {
            saw_pread = ev[i].offset == 5000 && ev[i].returned == 64 && ev[i].requested == 64;
        }
        if (strcmp(op, "open") == 0 || strcmp(op, "open64") == 0)
            if (ev[i].err == ENOENT) saw_fail_open = 1;
    }
    /* /nonexistent-dir-tbio is traced (not excluded): the failed open is in the trace */
    CHECK(saw_fail_open);
    CHECK(saw_pread);
    free(ev);
    tbio_session_free(e);
    CHECK(tbio_disable() == 0);
}

static void test_detach_restores(void) {
    CHECK(tbio_enable() == 0);
    uint64_t n = tbio_patch_count();
    CHECK(n > 0);
    uintptr_t *slots = calloc(n, sizeof *slots), *orig = calloc(n, sizeof *orig);
    for (uint64_t i = 0; i < n; i++) {
        uintptr_t w;
        CHECK(tbio_patch_get(i, &slots[i], &orig[i], &w) == 0);
        CHECK(*(uintptr_t *)slots[i] == w);
    }
    CHECK(tbio_enable() == 0);  /* idempotent */
    CHECK_EQ_I64(tbio_patch_count(), n);
    CHECK(tbio_disable() == 0);
    CHECK(tbio_disable() == 0);
    for (uint64_t i = 0; i < n; i++) CHECK(*(uintptr_t *)slots[i] == orig[i]);
    free(slots);
    free(orig);
}

#define NT 16
#define PER 500
static char g_tpath[NT][600];
static void *worker(void *arg) {
    int k = (int)(intptr_t)arg;
    char buf[256];
    memset(buf, k, sizeof buf);
    int fd = open(g_tpath[k], O_CREAT | O_RDWR | O_TRUNC, 0600);
    for (int i = 0; i < PER; i++) {
        if (write(fd, buf, 100) != 100) abort();
        if (pread(fd, buf, 50, 0) != 50) abort();
    }
    close(fd);
    FILE *f = fopen(g_tpath[k], "r");
    size_t tot = 0;
    while (fread(buf, 1, 256, f) > 0) tot += 1;
    fclose(f);
    return NULL;
}

static void test_threads(void) {
    CHECK(tbio_enable() == 0);
    tbio_set_trace_cap(1000);  /* force drops: counters must stay exact */
    tbio_session *s = tbio_begin();
    pthread_t th[NT];
    for (int k = 0; k < NT; k++) {
        snprintf(g_tpath[k], sizeof g_tpath[k], "%s/t%d.bin", g_dir, k);
        pthread_create(&th[k], NULL, worker, (void *)(intptr_t)k);
    }
    for (int k = 0; k < NT; k++) pthread_join(th[k], NULL);
    tbio_session *e = tbio_end(s);
    CHECK(e == s);
    int64_t reads = 0, writes = 0, bytes = 0, sreads = 0;
    for (int k = 0; k < NT; k++) {
        tbio_file_info fi;
        if (find(e, g_tpath[k], 0, &fi)) {
            reads += counter(&fi, "POSIX_READS");
            writes += counter(&fi, "POSIX_WRITES");
            bytes += counter(&fi, "POSIX_BYTES_WRITTEN");
        }
        if (find(e, g_tpath[k], 1, &fi)) sreads += counter(&fi, "STDIO_BYTES_READ");
    }
    CHECK_EQ_I64(reads, NT * PER);
    CHECK_EQ_I64(writes, NT * PER);
    CHECK_EQ_I64(bytes, NT * PER * 100);
    CHECK_EQ_I64(sreads, NT * PER * 100);
    /* every call either kept or counted as dropped, exactly */
    uint64_t expect = (uint64_t)NT * (1 + 2 * PER + 1) + 0;
    uint64_t stdio_calls = 0;
    (void)stdio_calls;
    CHECK(tbio_session_nevents(e) <= 1000);
    CHECK(tbio_session_nevents(e) + tbio_session_dropped(e) >= expect);
    tbio_session_free(e);
    tbio_set_trace_cap(1000000);
    CHECK(tbio_disable() == 0);
}

static void test_misuse(void) {
    CHECK(tbio_end(NULL) == NULL);
    CHECK(tbio_enable() == 0);
    tbio_session *s[4];
    for (int i = 0; i < 4; i++) {
        s[i] = tbio_begin();               /* up to four record at once */
        CHECK(s[i] != NULL);
    }
    CHECK_EQ_I64(tbio_active(), 4);
    CHECK(tbio_begin() == NULL);           /* a fifth: clear error, no crash */
    CHECK(strstr(tbio_last_error(), "already recording") != NULL);
    CHECK(close(12345) == -1 && errno == EBADF);   /* an fd we never saw */
    for (int i = 0; i < 4; i++) tbio_session_free(tbio_end(s[i]));
    CHECK(tbio_end(s[0]) == NULL);         /* ended twice: refused */
    CHECK_EQ_I64(tbio_active(), 0);
    CHECK(tbio_disable() == 0);
}

/* Overlapping sessions each get exact counters for their own window. */
static void test_overlapping_sessions(void) {
    char path[600];
    snprintf(path, sizeof path, "%s/ov.bin", g_dir);
    char buf[100];
    memset(buf, 1, sizeof buf);
    CHECK(tbio_enable() == 0);
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
    tbio_session *outer = tbio_begin();
    CHECK(pwrite(fd, buf, 100, 0) == 100);           /* outer only */
    tbio_session *inner = tbio_begin();
    for (int i = 0; i < 10; i++) CHECK(pwrite(fd, buf, 100, 100 * (i + 1)) == 100);  /* both */
    tbio_session *e_inner = tbio_end(inner);
    CHECK(pread(fd, buf, 50, 0) == 50);              /* outer only */
    tbio_session *e_outer = tbio_end(outer);
    tbio_file_info fi;
    CHECK(find(e_outer, path, 0, &fi) != NULL);
    if (find(e_outer, path, 0, &fi)) {
        CHECK_EQ_I64(counter(&fi, "POSIX_WRITES"), 11);
        CHECK_EQ_I64(counter(&fi, "POSIX_READS"), 1);
        CHECK_EQ_I64(counter(&fi, "POSIX_CONSEC_WRITES"), 10);
    }
    CHECK(find(e_inner, path, 0, &fi) != NULL);
    if (find(e_inner, path, 0, &fi)) {
        CHECK_EQ_I64(counter(&fi, "POSIX_WRITES"), 10);
        CHECK_EQ_I64(counter(&fi, "POSIX_READS"), 0);
        CHECK_EQ_I64(counter(&fi, "POSIX_BYTES_WRITTEN"), 1000);
    }
    CHECK_EQ_I64(tbio_session_nevents(e_inner), 10);
    CHECK_EQ_I64(tbio_session_nevents(e_outer), 12);
    close(fd);
    tbio_session_free(e_inner);
    tbio_session_free(e_outer);
    CHECK(tbio_disable() == 0);
}

/* One capture of n preads (offset (i % 64) * 64) checked row by row: trace
 * chunks go back to a pool when a session is freed and are reused by the
 * next one, which must start empty and see only its own rows. */
static void pread_capture(int fd, uint64_t n, uint64_t cap) {
    char buf[64];
    tbio_set_trace_cap(cap);
    tbio_session *s = tbio_begin();
    CHECK(s != NULL);
    if (!s) return;
    for (uint64_t i = 0; i < n; i++) {
        if (pread(fd, buf, 64, (off_t)((i % 64) * 64)) != 64) {
            CHECK(!"pread");
            break;
        }
    }
    tbio_session *e = tbio_end(s);
    uint64_t kept = n < cap ? n : cap;
    CHECK_EQ_I64(tbio_session_nevents(e), kept);
    CHECK_EQ_I64(tbio_session_dropped(e), n - kept);
    tbio_event *ev = calloc(kept + 1, sizeof *ev);
    CHECK(ev != NULL);
    if (ev) {
        CHECK_EQ_I64(tbio_session_copy_events(e, ev, kept + 1), kept);
        uint64_t bad = 0;
        for (uint64_t i = 0; i < kept; i++) {
            const char *op = tbio_op_name(ev[i].op);
            bad += strncmp(op, "pread", 5) != 0 || ev[i].offset != (int64_t)((i % 64) * 64) ||
                   ev[i].requested != 64 || ev[i].returned != 64 || ev[i].err != 0 || ev[i].fd != fd ||
                   ev[i].end_ns < ev[i].start_ns || ev[i].thread != 0;
        }
        CHECK_EQ_I64(bad, 0);
        free(ev);
    }
    tbio_session_free(e);
}

static void test_trace_chunks_reused(void) {
    char path[600];
    snprintf(path, sizeof path, "%s/chunks.bin", g_dir);
    static char data[4096];
    CHECK(tbio_enable() == 0);
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
    CHECK(fd >= 0);
    CHECK(write(fd, data, sizeof data) == (ssize_t)sizeof data);
    uint64_t old_cap = tbio_get_trace_cap();
    pread_capture(fd, 140000, 1000000);  /* chunks of 256 .. 65536 events, then a 4 MiB one */
    pread_capture(fd, 300, 1000000);     /* reuses the pooled 256 and 512 chunks */
    pread_capture(fd, 140000, 1000000);
    pread_capture(fd, 2000, 1000);       /* the cap ends on a chunk of 232: not a pooled size */
    pread_capture(fd, 1, 1000000);
    tbio_set_trace_cap(old_cap);
    close(fd);
    CHECK(tbio_disable() == 0);
}

/* Exited threads are not walked forever (by every begin, end and
 * trace_bytes): once their trace is taken, a tbio_end drops them. */
static char g_dpath[600];
static void *short_lived(void *arg) {
    (void)arg;
    char b[8];
    int fd = open(g_dpath, O_RDONLY);
    if (fd < 0 || pread(fd, b, 8, 0) < 0) abort();
    close(fd);
    return NULL;
}

static void test_dead_threads_dropped(void) {
    snprintf(g_dpath, sizeof g_dpath, "%s/dead.bin", g_dir);
    int fd = open(g_dpath, O_CREAT | O_RDWR | O_TRUNC, 0600);
    CHECK(fd >= 0 && write(fd, "12345678", 8) == 8);
    close(fd);
    CHECK(tbio_enable() == 0);
    uint32_t before = tbio_threads_held();
    for (int round = 0; round < 3; round++) {
        tbio_session *s = tbio_begin();
        pthread_t th[64];
        for (int k = 0; k < 64; k++) pthread_create(&th[k], NULL, short_lived, NULL);
        for (int k = 0; k < 64; k++) pthread_join(th[k], NULL);
        tbio_session *e = tbio_end(s);
        CHECK_EQ_I64(tbio_session_nthreads(e), 64);   /* their traces are kept... */
        tbio_session_free(e);
        /* ...and their structs dropped (a thread joined a moment ago may still be
         * exiting in the kernel: a few may wait for the next tbio_end) */
        CHECK(tbio_threads_held() <= before + 8);
    }
    CHECK(tbio_disable() == 0);
}

int main(void) {
    const char *base = getenv("TBIO_TEST_TMP");
    snprintf(g_dir, sizeof g_dir, "%s/shimtest.%d", base ? base : "/tmp", (int)getpid());
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", g_dir);
    if (system(cmd) != 0) return 2;
    test_posix_roundtrip();
    test_detach_restores();
    test_threads();
    test_misuse();
    test_overlapping_sessions();
    test_trace_chunks_reused();
    test_dead_threads_dropped();
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0) return 2;
    return CHECK_DONE();
}
