/* Golden tests for the Darshan counter rules in counters.c.
 *
 * Every expected value below is derived by hand from the rules (docs/internals.md,
 * "Darshan counter rules", and the notes in counters.c); the derivation is in the comment
 * next to it.  Notation: o = offset used, lbr/lbw = last_byte_read/_written
 * before the call, "seq" = o > lbr, "consec" = o == lbr + 1,
 * stride = o - lbr - 1 when o > 0 && o > lbr && lbr != 0.
 * Times are binary fractions so that sums are exact.
 */
#include <string.h>

#include "counters.h"
#include "check.h"

#define PC(r, X) ((r).counters[POSIX_##X])
#define PF(r, X) ((r).fcounters[POSIX_##X])
#define SC(r, X) ((r).counters[STDIO_##X])
#define SF(r, X) ((r).fcounters[STDIO_##X])
#define EPS 1e-12

static int all_posix_zero_except(const tbio_posix_rec *r, int a, int b)
{
    for (int i = 0; i < POSIX_NUM_INDICES; i++)
        if (i != a && i != b && r->counters[i] != 0)
            return 0;
    for (int i = 0; i < POSIX_F_NUM_INDICES; i++)
        if (r->fcounters[i] != 0)
            return 0;
    return 1;
}

static void test_names(void)
{
    /* Darshan's module sizes: POSIX 69 + 17, STDIO 14 + 15 */
    CHECK_EQ_I64(POSIX_NUM_INDICES, 69);
    CHECK_EQ_I64(POSIX_F_NUM_INDICES, 17);
    CHECK_EQ_I64(STDIO_NUM_INDICES, 14);
    CHECK_EQ_I64(STDIO_F_NUM_INDICES, 15);

    /* first and last of each table, and a few from the middle */
    CHECK(strcmp(tbio_posix_counter_names[0], "POSIX_OPENS") == 0);
    CHECK(strcmp(tbio_posix_counter_names[POSIX_NUM_INDICES - 1], "POSIX_SLOWEST_RANK_BYTES") == 0);
    CHECK(strcmp(tbio_posix_counter_names[POSIX_MODE], "POSIX_MODE") == 0);
    CHECK(strcmp(tbio_posix_counter_names[POSIX_SIZE_READ_1G_PLUS], "POSIX_SIZE_READ_1G_PLUS") == 0);
    CHECK(strcmp(tbio_posix_counter_names[POSIX_ACCESS4_COUNT], "POSIX_ACCESS4_COUNT") == 0);
    CHECK(strcmp(tbio_posix_fcounter_names[0], "POSIX_F_OPEN_START_TIMESTAMP") == 0);
    CHECK(strcmp(tbio_posix_fcounter_names[POSIX_F_READ_TIME], "POSIX_F_READ_TIME") == 0);
    CHECK(strcmp(tbio_posix_fcounter_names[POSIX_F_NUM_INDICES - 1], "POSIX_F_VARIANCE_RANK_BYTES") == 0);
    CHECK(strcmp(tbio_stdio_counter_names[0], "STDIO_OPENS") == 0);
    CHECK(strcmp(tbio_stdio_counter_names[STDIO_BYTES_READ], "STDIO_BYTES_READ") == 0);
    CHECK(strcmp(tbio_stdio_counter_names[STDIO_NUM_INDICES - 1], "STDIO_SLOWEST_RANK_BYTES") == 0);
    CHECK(strcmp(tbio_stdio_fcounter_names[0], "STDIO_F_META_TIME") == 0);
    CHECK(strcmp(tbio_stdio_fcounter_names[STDIO_F_READ_END_TIMESTAMP], "STDIO_F_READ_END_TIMESTAMP") == 0);
    CHECK(strcmp(tbio_stdio_fcounter_names[STDIO_F_NUM_INDICES - 1], "STDIO_F_VARIANCE_RANK_BYTES") == 0);

    /* no hole in any table, all 115 names unique, each with its module prefix */
    const char *all[69 + 17 + 14 + 15];
    int n = 0, bad = 0;
    for (int i = 0; i < POSIX_NUM_INDICES; i++) all[n++] = tbio_posix_counter_names[i];
    for (int i = 0; i < POSIX_F_NUM_INDICES; i++) all[n++] = tbio_posix_fcounter_names[i];
    for (int i = 0; i < STDIO_NUM_INDICES; i++) all[n++] = tbio_stdio_counter_names[i];
    for (int i = 0; i < STDIO_F_NUM_INDICES; i++) all[n++] = tbio_stdio_fcounter_names[i];
    CHECK_EQ_I64(n, 115);
    for (int i = 0; i < n; i++) {
        if (!all[i]) { bad++; continue; }
        int posix = i < 69 + 17;
        if (strncmp(all[i], posix ? "POSIX_" : "STDIO_", 6) != 0) bad++;
        int fl = (i >= 69 && i < 86) || i >= 100;   /* float tables: "_F_" after prefix */
        if ((strncmp(all[i] + 6, "F_", 2) == 0) != fl) bad++;
        for (int j = 0; j < i; j++)
            if (all[j] && strcmp(all[i], all[j]) == 0) bad++;
    }
    CHECK_EQ_I64(bad, 0);
}

static void test_init(void)
{
    tbio_posix_rec r;
    memset(&r, 0xAB, sizeof(r));               /* garbage must be cleared */
    tbio_posix_rec_init(&r, 4096);
    CHECK_EQ_I64(PC(r, FILE_ALIGNMENT), 4096);
    CHECK_EQ_I64(PC(r, MEM_ALIGNMENT), TBIO_MEM_ALIGNMENT);
    CHECK_EQ_I64(PC(r, MEM_ALIGNMENT), 8);
    /* everything else, ranks and variances included, is 0 (single process) */
    CHECK(all_posix_zero_except(&r, POSIX_FILE_ALIGNMENT, POSIX_MEM_ALIGNMENT));
    CHECK_EQ_I64(r.offset, 0);
    CHECK_EQ_I64(r.last_byte_read, 0);
    CHECK_EQ_I64(r.last_byte_written, 0);
    CHECK_EQ_I64(r.last_io, TBIO_IO_NONE);
    CHECK_EQ_I64(r.access.n, 0);
    CHECK_EQ_I64(r.stride.n, 0);
    CHECK(r.last_read_end == 0 && r.last_write_end == 0 && r.last_meta_end == 0);

    tbio_stdio_rec s;
    memset(&s, 0xAB, sizeof(s));
    tbio_stdio_rec_init(&s);
    int nz = 0;
    for (int i = 0; i < STDIO_NUM_INDICES; i++) nz += s.counters[i] != 0;
    for (int i = 0; i < STDIO_F_NUM_INDICES; i++) nz += s.fcounters[i] != 0;
    CHECK_EQ_I64(nz, 0);
    CHECK_EQ_I64(s.offset, 0);
}

/* open, then 4 reads of 4 KiB at the tracked offset, back to back in time */
static void test_sequential_reads(void)
{
    tbio_posix_rec r;
    tbio_posix_rec_init(&r, 4096);
    tbio_posix_on_open(&r, 0644, 1.0, 1.5);
    tbio_posix_on_read(&r, -1, 4096, 1, 2.0, 3.0); /* o=0, lbr=0: neither seq nor consec, stride 0; lbr=4095 */
    tbio_posix_on_read(&r, -1, 4096, 1, 3.0, 4.0); /* o=4096 > 4095 seq, == 4095+1 consec, stride 0; lbr=8191 */
    tbio_posix_on_read(&r, -1, 4096, 1, 4.0, 5.0); /* o=8192: seq, consec; lbr=12287 */
    tbio_posix_on_read(&r, -1, 4096, 1, 5.0, 6.0); /* o=12288: seq, consec; lbr=16383 */

    CHECK_EQ_I64(PC(r, OPENS), 1);
    CHECK_EQ_I64(PC(r, MODE), 0644);
    CHECK_EQ_I64(PC(r, READS), 4);
    CHECK_EQ_I64(PC(r, SEQ_READS), 3);            /* the first read is neither */
    CHECK_EQ_I64(PC(r, CONSEC_READS), 3);
    CHECK_EQ_I64(PC(r, BYTES_READ), 16384);
    CHECK_EQ_I64(PC(r, MAX_BYTE_READ), 16383);    /* 12288 + 4096 - 1 */
    CHECK_EQ_I64(r.offset, 16384);
    CHECK_EQ_I64(r.last_byte_read, 16383);
    CHECK_EQ_I64(PC(r, SIZE_READ_1K_10K), 4);     /* 1024 < 4096 <= 10240 */
    CHECK_EQ_I64(PC(r, SIZE_READ_0_100), 0);
    CHECK_EQ_I64(PC(r, ACCESS1_ACCESS), 4096);
    CHECK_EQ_I64(PC(r, ACCESS1_COUNT), 4);
    CHECK_EQ_I64(PC(r, ACCESS2_ACCESS), 0);
    CHECK_EQ_I64(PC(r, ACCESS2_COUNT), 0);
    CHECK_EQ_I64(PC(r, STRIDE1_STRIDE), 0);       /* all strides 0: not tracked */
    CHECK_EQ_I64(PC(r, STRIDE1_COUNT), 0);
    CHECK_EQ_I64(PC(r, FILE_NOT_ALIGNED), 0);     /* 0, 4096, 8192, 12288 all % 4096 == 0 */
    CHECK_EQ_I64(PC(r, MEM_NOT_ALIGNED), 0);
    CHECK_EQ_I64(PC(r, RW_SWITCHES), 0);
    CHECK_EQ_I64(PC(r, WRITES), 0);
    CHECK_NEAR(PF(r, F_OPEN_START_TIMESTAMP), 1.0, EPS);
    CHECK_NEAR(PF(r, F_OPEN_END_TIMESTAMP), 1.5, EPS);
    CHECK_NEAR(PF(r, F_META_TIME), 0.5, EPS);       /* open 1.0..1.5 */
    CHECK_NEAR(PF(r, F_READ_START_TIMESTAMP), 2.0, EPS);
    CHECK_NEAR(PF(r, F_READ_END_TIMESTAMP), 6.0, EPS);
    CHECK_NEAR(PF(r, F_READ_TIME), 4.0, EPS);       /* 4 abutting 1 s reads */
    CHECK_NEAR(PF(r, F_MAX_READ_TIME), 1.0, EPS);
    CHECK_EQ_I64(PC(r, MAX_READ_TIME_SIZE), 4096);
    CHECK_NEAR(PF(r, F_WRITE_TIME), 0.0, EPS);
}

/* pread 100 bytes at 0, 1000, 2000, 3000 */
static void test_strided_reads(void)
{
    tbio_posix_rec r;
    tbio_posix_rec_init(&r, 4096);
    tbio_posix_on_open(&r, 0, 0.5, 1.0);
    tbio_posix_on_read(&r, 0, 100, 1, 1, 2);    /* o=0: nothing; lbr=99 */
    tbio_posix_on_read(&r, 1000, 100, 1, 2, 3); /* 1000 > 99 seq; not 100 so not consec; stride 1000-99-1=900; lbr=1099 */
    tbio_posix_on_read(&r, 2000, 100, 1, 3, 4); /* seq; stride 2000-1099-1=900; lbr=2099 */
    tbio_posix_on_read(&r, 3000, 100, 1, 4, 5); /* seq; stride 3000-2099-1=900; lbr=3099 */
    CHECK_EQ_I64(PC(r, MODE), 0);                /* mode 0 is never stored */
    CHECK_EQ_I64(PC(r, SEQ_READS), 3);
    CHECK_EQ_I64(PC(r, CONSEC_READS), 0);
    CHECK_EQ_I64(PC(r, STRIDE1_STRIDE), 900);
    CHECK_EQ_I64(PC(r, STRIDE1_COUNT), 3);
    CHECK_EQ_I64(PC(r, STRIDE2_COUNT), 0);
    CHECK_EQ_I64(PC(r, ACCESS1_ACCESS), 100);
    CHECK_EQ_I64(PC(r, ACCESS1_COUNT), 4);
    CHECK_EQ_I64(PC(r, MAX_BYTE_READ), 3099);
    CHECK_EQ_I64(PC(r, BYTES_READ), 400);
    CHECK_EQ_I64(PC(r, SIZE_READ_0_100), 4);     /* 100 is the inclusive edge of 0_100 */
    CHECK_EQ_I64(PC(r, FILE_NOT_ALIGNED), 3);    /* 1000, 2000, 3000 are not multiples of 4096 */
    /* the tracked offset follows explicit-offset reads too (Darshan) */
    CHECK_EQ_I64(r.offset, 3100);
    tbio_posix_on_read(&r, -1, 100, 1, 5, 6);    /* o=3100 == 3099+1: seq and consec, stride 0 */
    CHECK_EQ_I64(PC(r, SEQ_READS), 4);
    CHECK_EQ_I64(PC(r, CONSEC_READS), 1);
    CHECK_EQ_I64(PC(r, STRIDE1_COUNT), 3);
    CHECK_EQ_I64(PC(r, FILE_NOT_ALIGNED), 4);    /* 3100 % 4096 != 0 */
    CHECK_EQ_I64(PC(r, MAX_BYTE_READ), 3199);
}

/* pread 100 bytes at 3000, 2000, 1000, 0 */
static void test_backwards_reads(void)
{
    tbio_posix_rec r;
    tbio_posix_rec_init(&r, 0);
    tbio_posix_on_open(&r, 0, 0, 0);
    tbio_posix_on_read(&r, 3000, 100, 1, 1, 2); /* 3000 > lbr 0: seq; stride needs lbr != 0: 0; lbr=3099 */
    tbio_posix_on_read(&r, 2000, 100, 1, 2, 3); /* 2000 <= 3099: neither; stride 0; lbr=2099 */
    tbio_posix_on_read(&r, 1000, 100, 1, 3, 4); /* neither; lbr=1099 */
    tbio_posix_on_read(&r, 0, 100, 1, 4, 5);    /* neither; lbr=99 */
    CHECK_EQ_I64(PC(r, SEQ_READS), 1);
    CHECK_EQ_I64(PC(r, CONSEC_READS), 0);
    CHECK_EQ_I64(PC(r, STRIDE1_COUNT), 0);
    CHECK_EQ_I64(PC(r, MAX_BYTE_READ), 3099);    /* the highest byte, not the last */
    CHECK_EQ_I64(r.last_byte_read, 99);
    CHECK_EQ_I64(r.offset, 100);
    CHECK_EQ_I64(PC(r, FILE_NOT_ALIGNED), 0);    /* alignment 0: never counted */
    CHECK_EQ_I64(PC(r, FILE_ALIGNMENT), 0);
}

/* read(10), pread(10 @100), read(10): the tracked offset follows the pread */
static void test_pread_vs_read(void)
{
    tbio_posix_rec r;
    tbio_posix_rec_init(&r, 0);
    tbio_posix_on_open(&r, 0, 0, 0);
    tbio_posix_on_read(&r, -1, 10, 1, 1, 2);   /* o=0: nothing; lbr=9; offset=10 */
    tbio_posix_on_read(&r, 100, 10, 1, 2, 3);  /* 100 > 9 seq; 100 != 10; stride 100-9-1=90; lbr=109; offset=110 */
    tbio_posix_on_read(&r, -1, 10, 1, 3, 4);   /* o=110 == 109+1: seq, consec, stride 0; lbr=119 */
    CHECK_EQ_I64(PC(r, SEQ_READS), 2);
    CHECK_EQ_I64(PC(r, CONSEC_READS), 1);
    CHECK_EQ_I64(PC(r, STRIDE1_STRIDE), 90);
    CHECK_EQ_I64(PC(r, STRIDE1_COUNT), 1);
    CHECK_EQ_I64(PC(r, MAX_BYTE_READ), 119);
    CHECK_EQ_I64(PC(r, BYTES_READ), 30);
    CHECK_EQ_I64(PC(r, ACCESS1_ACCESS), 10);
    CHECK_EQ_I64(PC(r, ACCESS1_COUNT), 3);
    CHECK_EQ_I64(r.offset, 120);
}

/* read(50), seek(1000), read(50), seek(0), read(50) */
static void test_seek_then_read(void)
{
    tbio_posix_rec r;
    tbio_posix_rec_init(&r, 0);
    tbio_posix_on_open(&r, 0, 0.0, 0.25);       /* meta 0.25 */
    tbio_posix_on_read(&r, -1, 50, 1, 1, 2);    /* o=0; lbr=49 */
    tbio_posix_on_seek(&r, 1000, 2.0, 2.5);     /* meta +0.5 */
    CHECK_EQ_I64(r.offset, 1000);
    tbio_posix_on_read(&r, -1, 50, 1, 3, 4);    /* o=1000 > 49 seq; not consec; stride 1000-49-1=950; lbr=1049 */
    tbio_posix_on_seek(&r, 0, 4.0, 4.125);      /* meta +0.125 */
    tbio_posix_on_read(&r, -1, 50, 1, 5, 6);    /* o=0 <= 1049: neither, stride 0; lbr=49 */
    CHECK_EQ_I64(PC(r, SEEKS), 2);
    CHECK_EQ_I64(PC(r, SEQ_READS), 1);
    CHECK_EQ_I64(PC(r, CONSEC_READS), 0);
    CHECK_EQ_I64(PC(r, STRIDE1_STRIDE), 950);
    CHECK_EQ_I64(PC(r, STRIDE1_COUNT), 1);
    CHECK_EQ_I64(PC(r, MAX_BYTE_READ), 1049);
    CHECK_EQ_I64(r.last_byte_read, 49);
    CHECK_EQ_I64(r.offset, 50);
    CHECK_NEAR(PF(r, F_META_TIME), 0.875, EPS); /* 0.25 + 0.5 + 0.125 */
    CHECK_NEAR(PF(r, F_READ_TIME), 3.0, EPS);
}

static void test_open_close_reset(void)
{
    tbio_posix_rec r;
    /* open, read 100, close, open again, read 100 at the tracked offset */
    tbio_posix_rec_init(&r, 0);
    tbio_posix_on_open(&r, 0600, 1, 2);
    tbio_posix_on_read(&r, -1, 100, 1, 2, 3);   /* o=0; lbr=99; offset=100 */
    tbio_posix_on_close(&r, 3, 4);               /* lbr=lbw=0, offset stays 100 */
    CHECK_EQ_I64(r.last_byte_read, 0);
    CHECK_EQ_I64(r.offset, 100);
    tbio_posix_on_open(&r, 0, 5, 6);             /* offset=0; MODE keeps 0600 (mode 0 not stored) */
    CHECK_EQ_I64(r.offset, 0);
    tbio_posix_on_read(&r, -1, 100, 1, 6, 7);   /* o=0, lbr=0: neither */
    CHECK_EQ_I64(PC(r, OPENS), 2);
    CHECK_EQ_I64(PC(r, MODE), 0600);
    CHECK_EQ_I64(PC(r, SEQ_READS), 0);
    CHECK_EQ_I64(PC(r, CONSEC_READS), 0);
    CHECK_EQ_I64(PC(r, MAX_BYTE_READ), 99);
    CHECK_EQ_I64(PC(r, BYTES_READ), 200);
    CHECK_EQ_I64(PC(r, ACCESS1_COUNT), 2);
    CHECK_NEAR(PF(r, F_OPEN_START_TIMESTAMP), 1, EPS);  /* first start */
    CHECK_NEAR(PF(r, F_OPEN_END_TIMESTAMP), 6, EPS);    /* last end */
    CHECK_NEAR(PF(r, F_CLOSE_START_TIMESTAMP), 3, EPS);
    CHECK_NEAR(PF(r, F_CLOSE_END_TIMESTAMP), 4, EPS);
    CHECK_NEAR(PF(r, F_META_TIME), 3, EPS);              /* 1 + 1 + 1 */

    /* a second open without close also resets (another fd on the same file) */
    tbio_posix_rec_init(&r, 0);
    tbio_posix_on_open(&r, 0, 0, 0);
    tbio_posix_on_read(&r, -1, 100, 1, 1, 2);   /* o=0; lbr=99 */
    tbio_posix_on_open(&r, 0, 2, 3);             /* offset=0, lbr=0 */
    tbio_posix_on_read(&r, -1, 100, 1, 3, 4);   /* o=0, lbr=0: neither (without the reset: o=100, seq+consec) */
    tbio_posix_on_read(&r, 300, 100, 1, 4, 5);  /* lbr=99: 300 > 99 seq; stride 300-99-1=200 */
    CHECK_EQ_I64(PC(r, SEQ_READS), 1);
    CHECK_EQ_I64(PC(r, CONSEC_READS), 0);
    CHECK_EQ_I64(PC(r, STRIDE1_STRIDE), 200);

    /* close resets lbr but not the offset: the read after it is seq but not consec */
    tbio_posix_rec_init(&r, 0);
    tbio_posix_on_open(&r, 0, 0, 0);
    tbio_posix_on_read(&r, 0, 100, 1, 1, 2);    /* lbr=99, offset=100 */
    tbio_posix_on_close(&r, 2, 3);               /* lbr=0 */
    tbio_posix_on_read(&r, -1, 100, 1, 3, 4);   /* o=100 > 0 seq; 100 != 1 not consec; lbr==0 so stride 0 */
    CHECK_EQ_I64(PC(r, SEQ_READS), 1);
    CHECK_EQ_I64(PC(r, CONSEC_READS), 0);
    CHECK_EQ_I64(PC(r, STRIDE1_COUNT), 0);
    CHECK_EQ_I64(PC(r, MAX_BYTE_READ), 199);
}

/* pwrite 10@0, pread 10@0, pread 10@10, pwrite 10@10, pread 10@20 */
static void test_rw_switches(void)
{
    tbio_posix_rec r;
    tbio_posix_rec_init(&r, 0);
    tbio_posix_on_open(&r, 0, 0, 0);
    tbio_posix_on_write(&r, 0, 10, 1, 1, 2);  /* W: no previous op; lbw 0: neither; lbw=9 */
    tbio_posix_on_read(&r, 0, 10, 1, 2, 3);   /* R after W: switch 1; lbr 0: neither; lbr=9 */
    tbio_posix_on_read(&r, 10, 10, 1, 3, 4);  /* R after R; 10 == 9+1 seq+consec; lbr=19 */
    tbio_posix_on_write(&r, 10, 10, 1, 4, 5); /* W after R: switch 2; lbw 9: seq+consec; lbw=19 */
    tbio_posix_on_read(&r, 20, 10, 1, 5, 6);  /* R after W: switch 3; 20 == 19+1 seq+consec */
    CHECK_EQ_I64(PC(r, RW_SWITCHES), 3);
    CHECK_EQ_I64(PC(r, READS), 3);
    CHECK_EQ_I64(PC(r, WRITES), 2);
    CHECK_EQ_I64(PC(r, SEQ_READS), 2);
    CHECK_EQ_I64(PC(r, CONSEC_READS), 2);
    CHECK_EQ_I64(PC(r, SEQ_WRITES), 1);
    CHECK_EQ_I64(PC(r, CONSEC_WRITES), 1);
    CHECK_EQ_I64(PC(r, BYTES_READ), 30);
    CHECK_EQ_I64(PC(r, BYTES_WRITTEN), 20);
    CHECK_EQ_I64(PC(r, MAX_BYTE_READ), 29);
    CHECK_EQ_I64(PC(r, MAX_BYTE_WRITTEN), 19);
    CHECK_EQ_I64(PC(r, SIZE_READ_0_100), 3);
    CHECK_EQ_I64(PC(r, SIZE_WRITE_0_100), 2);
    /* reads and writes share the access-size table: 10 seen 5 times */
    CHECK_EQ_I64(PC(r, ACCESS1_ACCESS), 10);
    CHECK_EQ_I64(PC(r, ACCESS1_COUNT), 5);
    CHECK_EQ_I64(r.last_io, TBIO_IO_READ);
    CHECK_NEAR(PF(r, F_WRITE_START_TIMESTAMP), 1, EPS);
    CHECK_NEAR(PF(r, F_WRITE_END_TIMESTAMP), 5, EPS);
    CHECK_NEAR(PF(r, F_WRITE_TIME), 2, EPS);
    CHECK_NEAR(PF(r, F_READ_TIME), 3, EPS);
    CHECK_NEAR(PF(r, F_MAX_WRITE_TIME), 1, EPS);
    CHECK_EQ_I64(PC(r, MAX_WRITE_TIME_SIZE), 10);

    /* write strides use last_byte_written and land in the shared stride table */
    tbio_posix_on_write(&r, 100, 10, 1, 6, 7); /* lbw=19: seq; stride 100-19-1=80; lbw=109 */
    tbio_posix_on_read(&r, 200, 10, 1, 7, 8);  /* lbr=29: seq; stride 200-29-1=170 */
    tbio_posix_on_write(&r, 190, 10, 1, 8, 9); /* lbw=109: seq; stride 190-109-1=80 */
    CHECK_EQ_I64(PC(r, STRIDE1_STRIDE), 80);
    CHECK_EQ_I64(PC(r, STRIDE1_COUNT), 2);
    CHECK_EQ_I64(PC(r, STRIDE2_STRIDE), 170);
    CHECK_EQ_I64(PC(r, STRIDE2_COUNT), 1);
    CHECK_EQ_I64(PC(r, RW_SWITCHES), 6);      /* R->W, W->R, R->W */
}

static void test_size_bins(void)
{
    static const struct { int64_t n; int bin; } t[] = {
        {0, 0}, {1, 0}, {100, 0}, {101, 1},
        {1024, 1}, {1025, 2},
        {10240, 2}, {10241, 3},
        {102400, 3}, {102401, 4},
        {1048576, 4}, {1048577, 5},
        {4194304, 5}, {4194305, 6},
        {10485760, 6}, {10485761, 7},
        {104857600, 7}, {104857601, 8},
        {1073741824, 8}, {1073741825, 9},
        {INT64_C(1) << 40, 9},
    };
    const int nt = (int)(sizeof(t) / sizeof(t[0]));
    for (int i = 0; i < nt; i++)
        CHECK_EQ_I64(tbio_size_bin(t[i].n), t[i].bin);

    /* through the records: each access lands in exactly its bin */
    tbio_posix_rec r;
    tbio_posix_rec_init(&r, 0);
    int wrong = 0;
    for (int i = 0; i < nt; i++) {
        int64_t before_r[10], before_w[10];
        for (int b = 0; b < 10; b++) {
            before_r[b] = r.counters[POSIX_SIZE_READ_0_100 + b];
            before_w[b] = r.counters[POSIX_SIZE_WRITE_0_100 + b];
        }
        tbio_posix_on_read(&r, 0, t[i].n, 1, 0, 0);
        tbio_posix_on_write(&r, 0, t[i].n, 1, 0, 0);
        for (int b = 0; b < 10; b++) {
            int64_t want = b == t[i].bin ? 1 : 0;
            if (r.counters[POSIX_SIZE_READ_0_100 + b] - before_r[b] != want) wrong++;
            if (r.counters[POSIX_SIZE_WRITE_0_100 + b] - before_w[b] != want) wrong++;
        }
    }
    CHECK_EQ_I64(wrong, 0);
    /* bins 0..9 got 3,2,2,2,2,2,2,2,2,2 reads (bin 0: sizes 0, 1, 100) */
    CHECK_EQ_I64(PC(r, SIZE_READ_0_100), 3);
    CHECK_EQ_I64(PC(r, SIZE_READ_100M_1G), 2);
    CHECK_EQ_I64(PC(r, SIZE_READ_1G_PLUS), 2);
    CHECK_EQ_I64(PC(r, SIZE_WRITE_0_100), 3);
    CHECK_EQ_I64(PC(r, SIZE_WRITE_1G_PLUS), 2);
    CHECK_EQ_I64(PC(r, READS), nt);
    /* 21 accesses per direction, 20 of them non-zero and all distinct: counts 2 each
     * (read + write), ties ordered by value descending: 2^40, 1073741825, 1073741824, 104857601 */
    CHECK_EQ_I64(PC(r, ACCESS1_ACCESS), INT64_C(1) << 40);
    CHECK_EQ_I64(PC(r, ACCESS1_COUNT), 2);
    CHECK_EQ_I64(PC(r, ACCESS2_ACCESS), 1073741825);
    CHECK_EQ_I64(PC(r, ACCESS3_ACCESS), 1073741824);
    CHECK_EQ_I64(PC(r, ACCESS4_ACCESS), 104857601);
    CHECK_EQ_I64(PC(r, ACCESS4_COUNT), 2);
    CHECK_EQ_I64(r.access.n, 20);               /* size 0 is not tracked */

    /* a zero-length read still counts as a read, in 0_100, moves nothing */
    tbio_posix_rec_init(&r, 0);
    tbio_posix_on_open(&r, 0, 0, 0);
    tbio_posix_on_read(&r, -1, 0, 1, 1, 2);     /* o=0, n=0: lbr=-1, max(0, -1)=0, offset 0 */
    CHECK_EQ_I64(PC(r, READS), 1);
    CHECK_EQ_I64(PC(r, BYTES_READ), 0);
    CHECK_EQ_I64(PC(r, SIZE_READ_0_100), 1);
    CHECK_EQ_I64(PC(r, MAX_BYTE_READ), 0);
    CHECK_EQ_I64(PC(r, ACCESS1_COUNT), 0);
    CHECK_EQ_I64(r.last_byte_read, -1);
    CHECK_EQ_I64(r.offset, 0);
    tbio_posix_on_read(&r, -1, 10, 1, 2, 3);    /* o=0 > -1 seq, == -1+1 consec; lbr=-1 != 0 but o=0 so stride 0 */
    CHECK_EQ_I64(PC(r, SEQ_READS), 1);
    CHECK_EQ_I64(PC(r, CONSEC_READS), 1);
    CHECK_EQ_I64(PC(r, STRIDE1_COUNT), 0);
}

/* top-4 slots after each step; helper to compare all 8 access counters */
static void check_access(const tbio_posix_rec *r, const int64_t v[4], const int64_t c[4], int line)
{
    int bad = 0;
    for (int i = 0; i < 4; i++)
        if (r->counters[POSIX_ACCESS1_ACCESS + i] != v[i] || r->counters[POSIX_ACCESS1_COUNT + i] != c[i])
            bad = 1;
    check_count++;
    if (bad) {
        check_failures++;
        fprintf(stderr, "%s:%d: access slots", __FILE__, line);
        for (int i = 0; i < 4; i++)
            fprintf(stderr, " %" PRId64 "/%" PRId64, r->counters[POSIX_ACCESS1_ACCESS + i],
                    r->counters[POSIX_ACCESS1_COUNT + i]);
        fprintf(stderr, ", expected");
        for (int i = 0; i < 4; i++) fprintf(stderr, " %" PRId64 "/%" PRId64, v[i], c[i]);
        fprintf(stderr, "\n");
    }
}
#define CHECK_ACCESS(r, v0, c0, v1, c1, v2, c2, v3, c3) do { \
    const int64_t _v[4] = {v0, v1, v2, v3}, _c[4] = {c0, c1, c2, c3}; \
    check_access(&(r), _v, _c, __LINE__); } while (0)

/* reads of the given size at the tracked offset: contiguous, so every stride is 0 */
static void rd(tbio_posix_rec *r, int64_t n) { tbio_posix_on_read(r, -1, n, 1, 0, 0); }

static void test_common_values(void)
{
    tbio_posix_rec r;

    /* ties at equal count order by value, descending */
    tbio_posix_rec_init(&r, 0);
    rd(&r, 7);
    CHECK_ACCESS(r, 7, 1, 0, 0, 0, 0, 0, 0);                 /* unused slots 0/0 */
    rd(&r, 7); rd(&r, 9); rd(&r, 9); rd(&r, 3); rd(&r, 3); rd(&r, 100);
    CHECK_ACCESS(r, 9, 2, 7, 2, 3, 2, 100, 1);               /* counts 7:2 9:2 3:2 100:1 */
    rd(&r, 100);
    CHECK_ACCESS(r, 100, 2, 9, 2, 7, 2, 3, 2);               /* 100 now 2, largest value */
    rd(&r, 200); rd(&r, 200);
    CHECK_ACCESS(r, 200, 2, 100, 2, 9, 2, 7, 2);             /* 200:2 pushes 3 out */
    rd(&r, 200);
    CHECK_ACCESS(r, 200, 3, 100, 2, 9, 2, 7, 2);
    rd(&r, 3);                                               /* 3:3, ties 200:3, smaller value */
    CHECK_ACCESS(r, 200, 3, 3, 3, 100, 2, 9, 2);
    rd(&r, 7);                                               /* 7 was out of the slots with 2: now 3 */
    CHECK_ACCESS(r, 200, 3, 7, 3, 3, 3, 100, 2);
    rd(&r, 9); rd(&r, 9);                                    /* 9:4 goes to the top */
    CHECK_ACCESS(r, 9, 4, 200, 3, 7, 3, 3, 3);
    CHECK_EQ_I64(PC(r, STRIDE1_COUNT), 0);                   /* contiguous: no strides */

    /* the first 32 distinct values are tracked, the 33rd is ignored */
    tbio_posix_rec_init(&r, 0);
    for (int64_t v = 1; v <= 32; v++) rd(&r, v);
    CHECK_EQ_I64(r.access.n, 32);
    CHECK_ACCESS(r, 32, 1, 31, 1, 30, 1, 29, 1);             /* all count 1: by value */
    rd(&r, 33); rd(&r, 33); rd(&r, 33);                      /* 33rd distinct: never counted */
    CHECK_EQ_I64(r.access.n, 32);
    CHECK_ACCESS(r, 32, 1, 31, 1, 30, 1, 29, 1);
    rd(&r, 5); rd(&r, 5);                                    /* 5:3 */
    CHECK_ACCESS(r, 5, 3, 32, 1, 31, 1, 30, 1);
    rd(&r, 1); rd(&r, 1); rd(&r, 1);                         /* 1:4 */
    CHECK_ACCESS(r, 1, 4, 5, 3, 32, 1, 31, 1);
    CHECK_EQ_I64(PC(r, READS), 32 + 3 + 2 + 3);              /* ignored values still count as reads */
    CHECK_EQ_I64(PC(r, BYTES_READ), 528 + 99 + 10 + 3);      /* sum 1..32 = 528, 3*33, 2*5, 3*1 */

    /* strides: pread 10 @0, @20, @40, @100 */
    tbio_posix_rec_init(&r, 0);
    tbio_posix_on_read(&r, 0, 10, 1, 0, 0);                  /* lbr=9 */
    tbio_posix_on_read(&r, 20, 10, 1, 0, 0);                 /* stride 20-9-1=10; lbr=29 */
    tbio_posix_on_read(&r, 40, 10, 1, 0, 0);                 /* stride 40-29-1=10; lbr=49 */
    tbio_posix_on_read(&r, 100, 10, 1, 0, 0);                /* stride 100-49-1=50 */
    CHECK_EQ_I64(PC(r, STRIDE1_STRIDE), 10);
    CHECK_EQ_I64(PC(r, STRIDE1_COUNT), 2);
    CHECK_EQ_I64(PC(r, STRIDE2_STRIDE), 50);
    CHECK_EQ_I64(PC(r, STRIDE2_COUNT), 1);
    CHECK_EQ_I64(PC(r, STRIDE3_STRIDE), 0);
    CHECK_EQ_I64(PC(r, STRIDE3_COUNT), 0);
    CHECK_EQ_I64(r.stride.n, 2);
}

/* Property check: after every call the slots equal the top 4 of a brute-force
 * count of the first 32 distinct non-zero values. */
static void test_common_values_random(void)
{
    tbio_posix_rec r;
    int64_t seen[64], cnt[64];
    int nseen = 0, bad = 0;
    uint32_t x = 12345;
    tbio_posix_rec_init(&r, 0);
    for (int step = 0; step < 20000; step++) {
        x = x * 1664525u + 1013904223u;
        int64_t v = (int64_t)((x >> 16) % 48);     /* 0..47: zeros and > 32 distinct */
        if ((x >> 8) & 1)
            tbio_posix_on_read(&r, -1, v, 1, 0, 0);
        else
            tbio_posix_on_write(&r, -1, v, 1, 0, 0);
        if (v != 0) {
            int i;
            for (i = 0; i < nseen; i++) if (seen[i] == v) break;
            if (i == nseen && nseen < 32) { seen[nseen] = v; cnt[nseen] = 0; nseen++; }
            if (i < nseen) cnt[i]++;
        }
        /* brute force top 4 */
        int used[64] = {0};
        for (int k = 0; k < 4; k++) {
            int best = -1;
            for (int i = 0; i < nseen; i++) {
                if (used[i]) continue;
                if (best < 0 || cnt[i] > cnt[best] || (cnt[i] == cnt[best] && seen[i] > seen[best]))
                    best = i;
            }
            int64_t ev = best < 0 ? 0 : seen[best], ec = best < 0 ? 0 : cnt[best];
            if (best >= 0) used[best] = 1;
            if (r.counters[POSIX_ACCESS1_ACCESS + k] != ev || r.counters[POSIX_ACCESS1_COUNT + k] != ec)
                bad++;
        }
    }
    CHECK_EQ_I64(bad, 0);
    CHECK_EQ_I64(nseen, 32);
    CHECK_EQ_I64(r.access.n, 32);
}

static void test_timers(void)
{
    tbio_posix_rec r;
    tbio_posix_rec_init(&r, 0);
    tbio_posix_on_read(&r, 0, 10, 1, 1.0, 3.0);   /* 1 > last 0: +2, last=3 (T=2) */
    tbio_posix_on_read(&r, 0, 20, 1, 2.0, 4.0);   /* 2 <= 3: +(4-3)=1, last=4 (T=3) */
    tbio_posix_on_read(&r, 0, 30, 1, 5.0, 6.0);   /* disjoint: +1, last=6 (T=4) */
    tbio_posix_on_read(&r, 0, 40, 1, 5.5, 5.75);  /* inside: 5.75 <= 6: +0 (T=4) */
    tbio_posix_on_read(&r, 0, 50, 1, 0.5, 1.0);   /* earlier: +0, last stays 6 */
    CHECK_NEAR(PF(r, F_READ_TIME), 4.0, EPS);
    CHECK_NEAR(r.last_read_end, 6.0, EPS);
    CHECK_NEAR(PF(r, F_READ_START_TIMESTAMP), 0.5, EPS); /* min start */
    CHECK_NEAR(PF(r, F_READ_END_TIMESTAMP), 1.0, EPS);   /* end of the LAST read, not the max */
    CHECK_NEAR(PF(r, F_MAX_READ_TIME), 2.0, EPS);        /* 2, 2, 1, 0.25, 0.5 */
    CHECK_EQ_I64(PC(r, MAX_READ_TIME_SIZE), 10);         /* the first 2 s read; an equal one does not replace it */
    tbio_posix_on_read(&r, 0, 60, 1, 10.0, 12.5);        /* longer: 2.5 s, size 60; +2.5 */
    CHECK_NEAR(PF(r, F_MAX_READ_TIME), 2.5, EPS);
    CHECK_EQ_I64(PC(r, MAX_READ_TIME_SIZE), 60);
    CHECK_NEAR(PF(r, F_READ_TIME), 6.5, EPS);

    /* a start of exactly 0 counts as unset: the next start replaces it */
    tbio_posix_rec_init(&r, 0);
    tbio_posix_on_read(&r, 0, 1, 1, 0.0, 0.25);
    CHECK_NEAR(PF(r, F_READ_START_TIMESTAMP), 0.0, EPS);
    tbio_posix_on_read(&r, 0, 1, 1, 1.0, 2.0);
    CHECK_NEAR(PF(r, F_READ_START_TIMESTAMP), 1.0, EPS);

    /* meta: open 1..2, stat 1.5..2.5, seek 3..3.5, close 3.25..4 */
    tbio_posix_rec_init(&r, 0);
    tbio_posix_on_open(&r, 0, 1.0, 2.0);          /* +1, last=2 */
    tbio_posix_on_stat(&r, 1.5, 2.5);             /* +(2.5-2)=0.5, last=2.5 */
    tbio_posix_on_seek(&r, 0, 3.0, 3.5);          /* +0.5, last=3.5 */
    tbio_posix_on_close(&r, 3.25, 4.0);           /* +(4-3.5)=0.5 */
    CHECK_NEAR(PF(r, F_META_TIME), 2.5, EPS);
    CHECK_EQ_I64(PC(r, STATS), 1);
    CHECK_EQ_I64(PC(r, SEEKS), 1);
    CHECK_NEAR(PF(r, F_CLOSE_START_TIMESTAMP), 3.25, EPS);
    CHECK_NEAR(PF(r, F_CLOSE_END_TIMESTAMP), 4.0, EPS);
    CHECK_NEAR(PF(r, F_READ_TIME), 0, EPS);
    CHECK_NEAR(PF(r, F_WRITE_TIME), 0, EPS);

    /* write time includes fsync and fdatasync, without overlap */
    tbio_posix_rec_init(&r, 0);
    tbio_posix_on_write(&r, 0, 8, 1, 1.0, 2.0);   /* +1, last=2 */
    tbio_posix_on_sync(&r, 0, 1.5, 3.0);          /* fsync: +(3-2)=1, last=3 */
    tbio_posix_on_sync(&r, 1, 4.0, 5.0);          /* fdatasync: +1 */
    CHECK_NEAR(PF(r, F_WRITE_TIME), 3.0, EPS);
    CHECK_EQ_I64(PC(r, FSYNCS), 1);
    CHECK_EQ_I64(PC(r, FDSYNCS), 1);
    CHECK_EQ_I64(PC(r, WRITES), 1);
    CHECK_NEAR(PF(r, F_WRITE_START_TIMESTAMP), 1.0, EPS); /* syncs do not move write timestamps */
    CHECK_NEAR(PF(r, F_WRITE_END_TIMESTAMP), 2.0, EPS);
    CHECK_NEAR(PF(r, F_MAX_WRITE_TIME), 1.0, EPS);
    CHECK_EQ_I64(PC(r, MAX_WRITE_TIME_SIZE), 8);
    CHECK_NEAR(PF(r, F_META_TIME), 0, EPS);

    /* a zero-length or backwards interval adds nothing */
    tbio_posix_rec_init(&r, 0);
    tbio_posix_on_stat(&r, 2.0, 2.0);
    tbio_posix_on_stat(&r, 3.0, 2.5);
    CHECK_NEAR(PF(r, F_META_TIME), 0, EPS);
    CHECK_EQ_I64(PC(r, STATS), 2);
}

static void test_alignment(void)
{
    tbio_posix_rec r;
    tbio_posix_rec_init(&r, 4096);
    tbio_posix_on_read(&r, 0, 4096, 1, 0, 0);     /* 0 % 4096 == 0 */
    tbio_posix_on_read(&r, 4096, 4096, 1, 0, 0);  /* aligned */
    tbio_posix_on_read(&r, 100, 4096, 0, 0, 0);   /* not aligned; memory not aligned */
    tbio_posix_on_write(&r, 8193, 10, 1, 0, 0);   /* 8193 % 4096 = 1: not aligned */
    tbio_posix_on_write(&r, 12288, 10, 0, 0, 0);  /* aligned; memory not aligned */
    CHECK_EQ_I64(PC(r, FILE_NOT_ALIGNED), 2);
    CHECK_EQ_I64(PC(r, MEM_NOT_ALIGNED), 2);
    CHECK_EQ_I64(PC(r, FILE_ALIGNMENT), 4096);
    CHECK_EQ_I64(PC(r, MEM_ALIGNMENT), 8);

    tbio_posix_rec_init(&r, 0);                   /* unknown block size: never counted */
    tbio_posix_on_read(&r, 3, 1, 1, 0, 0);
    CHECK_EQ_I64(PC(r, FILE_NOT_ALIGNED), 0);
}

static void test_dup_mmap(void)
{
    tbio_posix_rec r;
    tbio_posix_rec_init(&r, 0);
    tbio_posix_on_open(&r, 0600, 1, 2);           /* meta +1, last=2 */
    tbio_posix_on_read(&r, -1, 100, 1, 2, 3);     /* o=0; lbr=99, offset=100 */
    tbio_posix_on_dup(&r, 3, 4);                  /* an open and a dup; meta +1; offset state kept */
    CHECK_EQ_I64(PC(r, OPENS), 2);
    CHECK_EQ_I64(PC(r, DUPS), 1);
    CHECK_EQ_I64(PC(r, MODE), 0600);
    CHECK_NEAR(PF(r, F_OPEN_START_TIMESTAMP), 1, EPS);
    CHECK_NEAR(PF(r, F_OPEN_END_TIMESTAMP), 4, EPS);
    CHECK_NEAR(PF(r, F_META_TIME), 2, EPS);
    CHECK_EQ_I64(r.offset, 100);
    tbio_posix_on_read(&r, -1, 100, 1, 4, 5);     /* o=100 == 99+1: seq and consec */
    CHECK_EQ_I64(PC(r, SEQ_READS), 1);
    CHECK_EQ_I64(PC(r, CONSEC_READS), 1);

    tbio_posix_on_mmap(&r, 6, 7);
    tbio_posix_on_mmap(&r, 7, 8);
    CHECK_EQ_I64(PC(r, MMAPS), 2);
    CHECK_NEAR(PF(r, F_META_TIME), 2, EPS);       /* mmap is not timed */
}

static void test_rename(void)
{
    tbio_posix_rec a, b;
    tbio_posix_rec_init(&a, 0);
    tbio_posix_rec_init(&b, 0);
    tbio_posix_on_rename(&a, &b, 12345, 1.0, 1.5);
    CHECK_EQ_I64(a.counters[POSIX_RENAME_SOURCES], 1);
    CHECK_EQ_I64(a.counters[POSIX_RENAME_TARGETS], 0);
    CHECK_NEAR(a.fcounters[POSIX_F_META_TIME], 0.5, EPS);
    CHECK_EQ_I64(b.counters[POSIX_RENAME_TARGETS], 1);
    CHECK_EQ_I64(b.counters[POSIX_RENAMED_FROM], 12345);
    CHECK_EQ_I64(b.counters[POSIX_RENAME_SOURCES], 0);
    CHECK_NEAR(b.fcounters[POSIX_F_META_TIME], 0.0, EPS); /* only the source is timed */

    tbio_posix_rec c;
    tbio_posix_rec_init(&c, 0);
    tbio_posix_on_rename(&c, &b, 999, 2.0, 2.5);  /* second rename onto b: first RENAMED_FROM kept */
    CHECK_EQ_I64(b.counters[POSIX_RENAME_TARGETS], 2);
    CHECK_EQ_I64(b.counters[POSIX_RENAMED_FROM], 12345);
    CHECK_EQ_I64(c.counters[POSIX_RENAME_SOURCES], 1);

    tbio_posix_on_rename(NULL, &b, 777, 3, 4);    /* unknown source: nothing recorded */
    CHECK_EQ_I64(b.counters[POSIX_RENAME_TARGETS], 2);
    tbio_posix_on_rename(&a, NULL, 12345, 3, 4);  /* target not tracked: source still counts */
    CHECK_EQ_I64(a.counters[POSIX_RENAME_SOURCES], 2);
    CHECK_NEAR(a.fcounters[POSIX_F_META_TIME], 1.5, EPS);
}

static void test_stdio(void)
{
    tbio_stdio_rec s;
    tbio_stdio_rec_init(&s);
    tbio_stdio_on_open(&s, 0, 1, 2);              /* fopen: meta +1, last=2 */
    tbio_stdio_on_write(&s, 100, 3, 4);           /* o=0: offset=100, max 99 */
    CHECK_EQ_I64(SC(s, OPENS), 1);
    CHECK_EQ_I64(SC(s, FDOPENS), 0);
    CHECK_EQ_I64(SC(s, WRITES), 1);
    CHECK_EQ_I64(SC(s, BYTES_WRITTEN), 100);
    CHECK_EQ_I64(SC(s, MAX_BYTE_WRITTEN), 99);
    CHECK_EQ_I64(s.offset, 100);
    tbio_stdio_on_flush(&s, 3.5, 5);              /* write time: 3.5 <= 4: +(5-4)=1 */
    CHECK_EQ_I64(SC(s, FLUSHES), 1);
    CHECK_EQ_I64(SC(s, WRITES), 1);               /* a flush is not a write */
    CHECK_NEAR(SF(s, F_WRITE_TIME), 2, EPS);      /* 1 + 1 */
    CHECK_NEAR(SF(s, F_WRITE_START_TIMESTAMP), 3, EPS);
    CHECK_NEAR(SF(s, F_WRITE_END_TIMESTAMP), 5, EPS); /* flush moves the write end */
    CHECK_EQ_I64(SC(s, MAX_BYTE_WRITTEN), 99);    /* max(99, 100 + 0 - 1) */
    tbio_stdio_on_seek(&s, 0, 5, 5.5);            /* meta +0.5 */
    tbio_stdio_on_read(&s, 60, 6, 7);             /* o=0: offset 60, max 59 */
    tbio_stdio_on_read(&s, 0, 7, 7.5);            /* EOF read: counted; max(59, 60-1) = 59 */
    tbio_stdio_on_read(&s, 40, 7.25, 9);          /* o=60: max 99; time +(9-7.5)=1.5 */
    CHECK_EQ_I64(SC(s, SEEKS), 1);
    CHECK_EQ_I64(SC(s, READS), 3);
    CHECK_EQ_I64(SC(s, BYTES_READ), 100);
    CHECK_EQ_I64(SC(s, MAX_BYTE_READ), 99);
    CHECK_EQ_I64(s.offset, 100);
    CHECK_NEAR(SF(s, F_READ_TIME), 3.0, EPS);     /* 1 + 0.5 + 1.5 */
    CHECK_NEAR(SF(s, F_READ_START_TIMESTAMP), 6, EPS);
    CHECK_NEAR(SF(s, F_READ_END_TIMESTAMP), 9, EPS);
    tbio_stdio_on_seek(&s, 500, 9, 9.5);          /* meta +0.5 */
    tbio_stdio_on_flush(&s, 10, 10.5);            /* flush = 0-byte write at 500: max(99, 499) = 499 */
    CHECK_EQ_I64(SC(s, MAX_BYTE_WRITTEN), 499);
    CHECK_EQ_I64(SC(s, FLUSHES), 2);
    CHECK_EQ_I64(SC(s, BYTES_WRITTEN), 100);
    tbio_stdio_on_close(&s, 11, 12);              /* meta +1 */
    CHECK_NEAR(SF(s, F_META_TIME), 3.0, EPS);     /* 1 + 0.5 + 0.5 + 1 */
    CHECK_NEAR(SF(s, F_OPEN_START_TIMESTAMP), 1, EPS);
    CHECK_NEAR(SF(s, F_OPEN_END_TIMESTAMP), 2, EPS);
    CHECK_NEAR(SF(s, F_CLOSE_START_TIMESTAMP), 11, EPS);
    CHECK_NEAR(SF(s, F_CLOSE_END_TIMESTAMP), 12, EPS);
    CHECK_EQ_I64(SC(s, FASTEST_RANK), 0);
    CHECK_EQ_I64(SC(s, SLOWEST_RANK_BYTES), 0);
    CHECK_NEAR(SF(s, F_VARIANCE_RANK_TIME), 0, EPS);

    /* fopen resets the offset; fdopen counts an open and an fdopen and keeps it */
    tbio_stdio_rec_init(&s);
    tbio_stdio_on_open(&s, 0, 1, 2);
    tbio_stdio_on_read(&s, 10, 2, 3);             /* o=0, offset=10, max 9 */
    tbio_stdio_on_open(&s, 1, 3, 4);              /* fdopen: offset stays 10 */
    CHECK_EQ_I64(SC(s, OPENS), 2);
    CHECK_EQ_I64(SC(s, FDOPENS), 1);
    CHECK_EQ_I64(s.offset, 10);
    tbio_stdio_on_read(&s, 10, 4, 5);             /* o=10: max 19 */
    CHECK_EQ_I64(SC(s, MAX_BYTE_READ), 19);
    tbio_stdio_on_open(&s, 0, 5, 6);              /* fopen: offset=0 */
    CHECK_EQ_I64(s.offset, 0);
    tbio_stdio_on_read(&s, 10, 6, 7);             /* o=0: max stays 19 */
    CHECK_EQ_I64(SC(s, MAX_BYTE_READ), 19);
    CHECK_EQ_I64(SC(s, OPENS), 3);
    CHECK_NEAR(SF(s, F_META_TIME), 3, EPS);       /* three 1 s opens */
    CHECK_NEAR(SF(s, F_OPEN_END_TIMESTAMP), 6, EPS);
}

int main(void)
{
    test_names();
    test_init();
    test_sequential_reads();
    test_strided_reads();
    test_backwards_reads();
    test_pread_vs_read();
    test_seek_then_read();
    test_open_close_reset();
    test_rw_switches();
    test_size_bins();
    test_common_values();
    test_common_values_random();
    test_timers();
    test_alignment();
    test_dup_mmap();
    test_rename();
    test_stdio();
    return CHECK_DONE();
}
