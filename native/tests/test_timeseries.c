/* Time-series bins (native/timeseries.h): widening against a reference
 * binning, merging bins of different widths, and a session's series fed by
 * real calls on several threads (bytes equal the files' counters, calls equal
 * the trace rows kept plus dropped, whatever the trace cap). */
#include "check.h"
#include "tbio.h"
#include "timeseries.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char g_dir[512];

static uint64_t rnd(uint64_t *x) {   /* xorshift64 */
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Calls at random ticks (any order) through tbio_ts_add: the bins widen, and
 * end up exactly as binning every call at the final width would. */
static void test_widen_matches_reference(void) {
    enum { N = 5000 };
    static uint64_t t[N], len[N], rd[N];
    static tbio_tsbins b, ref;
    memset(&b, 0, sizeof b);
    b.origin = 1000;
    b.lg = 3;
    uint64_t x = 88172645463325252ull;
    uint64_t maxd = 0;
    for (int i = 0; i < N; i++) {
        /* mostly early calls, a few far out: several doublings at once */
        uint64_t span = i % 100 == 99 ? 1u << 20 : 1u << 10;
        t[i] = 1000 + rnd(&x) % span;
        len[i] = rnd(&x) % 50;
        rd[i] = rnd(&x) % 4096;
        if (t[i] - 1000 > maxd) maxd = t[i] - 1000;
        tbio_ts_add(&b, i % 2, t[i], t[i] + len[i], (int64_t)rd[i], i % 3 == 0 ? 7 : 0);
    }
    /* the narrowest width that holds the farthest call */
    uint32_t want = 3;
    while ((maxd >> want) >= TBIO_TS_BINS) want++;
    CHECK_EQ_I64(b.lg, want);
    CHECK(b.lg > 3);
    memset(&ref, 0, sizeof ref);
    uint64_t calls = 0, bytes[2] = {0, 0};
    for (int i = 0; i < N; i++) {   /* odd calls are STDIO's, even ones POSIX's */
        tbio_tsbin *r = &ref.bin[(t[i] - 1000) >> want];
        r->calls++;
        r->io[i % 2].read += rd[i];
        r->io[i % 2].written += i % 3 == 0 ? 7 : 0;
        r->ticks += len[i];
    }
    for (uint32_t i = 0; i < TBIO_TS_BINS; i++) {
        CHECK_EQ_I64(b.bin[i].calls, ref.bin[i].calls);
        for (int m = 0; m < TBIO_TS_MODS; m++) {
            CHECK_EQ_I64(b.bin[i].io[m].read, ref.bin[i].io[m].read);
            CHECK_EQ_I64(b.bin[i].io[m].written, ref.bin[i].io[m].written);
            bytes[m] += b.bin[i].io[m].read;
        }
        CHECK_EQ_I64(b.bin[i].ticks, ref.bin[i].ticks);
        calls += b.bin[i].calls;
    }
    CHECK_EQ_I64(calls, N);
    uint64_t want_bytes[2] = {0, 0};
    for (int i = 0; i < N; i++) want_bytes[i % 2] += rd[i];
    CHECK_EQ_I64(bytes[TBIO_TS_POSIX], want_bytes[0]);
    CHECK_EQ_I64(bytes[TBIO_TS_STDIO], want_bytes[1]);
    CHECK(want_bytes[0] > 0 && want_bytes[1] > 0);
    /* a call before the origin counts in bin 0 */
    tbio_ts_add(&b, TBIO_TS_POSIX, 10, 20, 5, 0);
    CHECK_EQ_I64(b.bin[0].calls, ref.bin[0].calls + 1);
}

/* Pairs merge when the width doubles; merging two series of different
 * widths widens the narrower one first. */
static void test_rebin_and_merge(void) {
    static tbio_tsbins a, c;
    memset(&a, 0, sizeof a);
    memset(&c, 0, sizeof c);
    a.lg = c.lg = 0;
    for (uint32_t i = 0; i < TBIO_TS_BINS; i++) a.bin[i].calls = i + 1;
    tbio_ts_rebin(&a, 1);
    CHECK_EQ_I64(a.lg, 1);
    CHECK_EQ_I64(a.bin[0].calls, 1 + 2);
    CHECK_EQ_I64(a.bin[1].calls, 3 + 4);
    CHECK_EQ_I64(a.bin[127].calls, 255 + 256);
    CHECK_EQ_I64(a.bin[128].calls, 0);
    CHECK_EQ_I64(a.bin[255].calls, 0);
    tbio_ts_rebin(&a, 1);   /* no narrowing, no change */
    CHECK_EQ_I64(a.bin[1].calls, 7);
    c.lg = 3;
    c.bin[0].io[TBIO_TS_POSIX].read = 10;
    c.bin[31].io[TBIO_TS_POSIX].read = 20;   /* ticks [248, 256) */
    c.bin[31].io[TBIO_TS_STDIO].written = 30;
    tbio_ts_merge(&a, &c);
    CHECK_EQ_I64(a.lg, 3);
    CHECK_EQ_I64(a.bin[0].calls, 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8);
    CHECK_EQ_I64(a.bin[31].calls, 249 + 250 + 251 + 252 + 253 + 254 + 255 + 256);
    CHECK_EQ_I64(a.bin[0].io[TBIO_TS_POSIX].read, 10);
    CHECK_EQ_I64(a.bin[31].io[TBIO_TS_POSIX].read, 20);
    CHECK_EQ_I64(a.bin[31].io[TBIO_TS_STDIO].written, 30);
    CHECK_EQ_I64(a.bin[31].io[TBIO_TS_STDIO].read, 0);
    tbio_ts_rebin(&a, 4);   /* bins 30 and 31 merge into 15 */
    CHECK_EQ_I64(a.bin[15].io[TBIO_TS_POSIX].read, 20);
    CHECK_EQ_I64(a.bin[15].io[TBIO_TS_STDIO].written, 30);
    CHECK_EQ_I64(a.bin[31].io[TBIO_TS_STDIO].written, 0);
    uint64_t total = 0;
    for (uint32_t i = 0; i < TBIO_TS_BINS; i++) total += a.bin[i].calls;
    CHECK_EQ_I64(a.lg, 4);
    CHECK_EQ_I64(total, 256 * 257 / 2);
    /* the base width is the smallest power of two ticks of at least 1 ms */
    CHECK_EQ_I64(tbio_ts_base_lg(1.0), 20);
    CHECK_EQ_I64(tbio_ts_base_lg(0.25), 22);
    CHECK_EQ_I64(tbio_ts_lg_for(&a, 255u << 4), 4);
    CHECK_EQ_I64(tbio_ts_lg_for(&a, 256u << 4), 5);
}

typedef struct worker {
    int fd;
    int n;
} worker;

static void *reader(void *arg) {
    worker *w = arg;
    char buf[100];
    for (int i = 0; i < w->n; i++)
        if (pread(w->fd, buf, 100, (i % 10) * 100) != 100) abort();
    return NULL;
}

static int64_t counter(const tbio_file_info *fi, const char *name) {
    int n = tbio_counter_count(fi->module, 0);
    for (int i = 0; i < n; i++)
        if (strcmp(tbio_counter_name(fi->module, 0, i), name) == 0) return fi->counters[i];
    return -12345;
}

/* Four threads, POSIX and STDIO, a trace cap far below the calls made. */
static void test_session_series(void) {
    char path[600], spath[600];
    snprintf(path, sizeof path, "%s/ts.bin", g_dir);
    snprintf(spath, sizeof spath, "%s/ts.txt", g_dir);
    char buf[1000];
    memset(buf, 1, sizeof buf);
    CHECK(tbio_enable() == 0);
    uint64_t cap = tbio_get_trace_cap();
    tbio_set_trace_cap(50);
    tbio_session *s = tbio_begin();
    CHECK(s != NULL);
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0644);
    CHECK(write(fd, buf, 1000) == 1000);
    worker w[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        w[i].fd = fd;
        w[i].n = 300;
        CHECK(pthread_create(&th[i], NULL, reader, &w[i]) == 0);
    }
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    FILE *fp = fopen(spath, "w+");
    CHECK(fp != NULL);
    CHECK(fwrite(buf, 1, 333, fp) == 333);
    rewind(fp);
    CHECK(fread(buf, 1, 300, fp) == 300);
    fclose(fp);
    close(fd);
    tbio_session *e = tbio_end(s);
    tbio_set_trace_cap(cap);
    CHECK(e == s);
    uint64_t rd_files = 0, wr_files = 0, rd_mod[2] = {0, 0}, wr_mod[2] = {0, 0};
    tbio_file_info fi;
    for (uint32_t i = 0; i < tbio_session_nfiles(e); i++) {
        if (tbio_session_file(e, i, &fi) != 0 || !fi.has_record) continue;
        uint64_t fr = (uint64_t)counter(&fi, fi.module == 0 ? "POSIX_BYTES_READ" : "STDIO_BYTES_READ");
        uint64_t fw = (uint64_t)counter(&fi, fi.module == 0 ? "POSIX_BYTES_WRITTEN" : "STDIO_BYTES_WRITTEN");
        rd_files += fr;
        wr_files += fw;
        rd_mod[fi.module] += fr;
        wr_mod[fi.module] += fw;
    }
    CHECK_EQ_I64(rd_files, 1200 * 100 + 300);
    CHECK_EQ_I64(wr_files, 1000 + 333);
    CHECK_EQ_I64(rd_mod[1], 300);
    CHECK_EQ_I64(wr_mod[1], 333);
    tbio_timeseries_info info;
    static uint64_t r[TBIO_TS_BINS], wr[TBIO_TS_BINS], calls[TBIO_TS_BINS];
    static double io[TBIO_TS_BINS];
    CHECK(tbio_session_timeseries(e, &info, r, wr, calls, io, TBIO_TS_BINS) == 0);
    CHECK_EQ_I64(info.start_ns, tbio_session_start_ns(e));
    CHECK(info.nbins >= 1 && info.nbins <= TBIO_TS_BINS);
    CHECK(info.bin_ns >= 1e6 * 0.99);
    /* the bins reach the session's end */
    CHECK((double)info.start_ns + info.nbins * info.bin_ns >= (double)tbio_session_end_ns(e) - 1e3);
    uint64_t sr = 0, sw = 0, sc = 0;
    double st = 0;
    for (uint32_t i = 0; i < info.nbins; i++) {
        sr += r[i];
        sw += wr[i];
        sc += calls[i];
        st += io[i];
    }
    CHECK_EQ_I64(sr, rd_files);
    CHECK_EQ_I64(sw, wr_files);
    /* per module: the STDIO wrappers' bytes in the STDIO bins, the rest in POSIX's */
    static uint64_t mr[TBIO_TS_BINS], mw[TBIO_TS_BINS];
    for (int m = 0; m < 2; m++) {
        CHECK(tbio_session_timeseries_module(e, m, mr, mw, TBIO_TS_BINS) == 0);
        uint64_t a = 0, b = 0;
        for (uint32_t i = 0; i < info.nbins; i++) {
            a += mr[i];
            b += mw[i];
        }
        CHECK_EQ_I64(a, rd_mod[m]);
        CHECK_EQ_I64(b, wr_mod[m]);
    }
    CHECK(tbio_session_timeseries_module(e, 2, mr, mw, TBIO_TS_BINS) == -1);
    CHECK(tbio_session_dropped(e) > 0);
    CHECK_EQ_I64(sc, tbio_session_nevents(e) + tbio_session_dropped(e));
    CHECK(sc >= 1200 + 6);
    CHECK(st > 0);
    tbio_session_free(e);
    CHECK(tbio_disable() == 0);
}

int main(void) {
    const char *base = getenv("TBIO_TEST_TMP");
    snprintf(g_dir, sizeof g_dir, "%s/tstest.%d", base ? base : "/tmp", (int)getpid());
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", g_dir);
    if (system(cmd) != 0) return 2;
    test_widen_matches_reference();
    test_rebin_and_merge();
    test_session_series();
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0) return 2;
    return CHECK_DONE();
}
