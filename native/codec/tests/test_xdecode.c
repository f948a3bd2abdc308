/* native/xdecode.c: fields, event runs and event metadata of hand-written wire bytes;
 * a round trip through tbio_encode_io_events; and hostile input (every truncation, corrupt
 * varints, huge lengths, random byte flips) decoded from exact-size heap copies, so that
 * the sanitizer builds catch any read outside the buffer.  Equality with the NumPy decoder
 * on real captures is tests/unit/test_plugin_decode.py. */
#include "check.h"
#include "codec.h"

#include <string.h>

static uint8_t *copy_exact(const uint8_t *src, size_t n) {
    uint8_t *p = malloc(n ? n : 1);
    if (n)
        memcpy(p, src, n);
    return p;
}

static void test_fields(void) {
    static const uint8_t msg[] = {
        0x08, 0x96, 0x01,                          /* 1: varint 150 */
        0x12, 0x03, 'a', 'b', 'c',                 /* 2: "abc" */
        0x19, 1, 2, 3, 4, 5, 6, 7, 8,              /* 3: fixed64 */
        0x25, 1, 2, 3, 4,                          /* 4: fixed32 */
        0x80, 0x01, 0x00,                          /* 16: varint 0 (two-byte tag) */
    };
    uint8_t *buf = copy_exact(msg, sizeof msg);
    int64_t num[8], wt[8], at[8], a[8], b[8];
    CHECK_EQ_I64(tbio_xd_fields(buf, 0, sizeof msg, 0, NULL, NULL, NULL, NULL, NULL), 5);
    for (int i = 0; i < 8; i++)
        num[i] = -99;
    CHECK_EQ_I64(tbio_xd_fields(buf, 0, sizeof msg, 2, num, wt, at, a, b), 5);
    CHECK_EQ_I64(num[2], -99); /* only cap written */
    CHECK_EQ_I64(tbio_xd_fields(buf, 0, sizeof msg, 8, num, wt, at, a, b), 5);
    static const int64_t want[5][5] = {
        {1, 0, 0, 1, 3}, {2, 2, 3, 5, 8}, {3, 1, 8, 9, 17}, {4, 5, 17, 18, 22}, {16, 0, 22, 24, 25}};
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_I64(num[i], want[i][0]);
        CHECK_EQ_I64(wt[i], want[i][1]);
        CHECK_EQ_I64(at[i], want[i][2]);
        CHECK_EQ_I64(a[i], want[i][3]);
        CHECK_EQ_I64(b[i], want[i][4]);
    }
    /* a sub-range is a message of its own */
    CHECK_EQ_I64(tbio_xd_fields(buf, 3, 17, 8, num, wt, at, a, b), 2);
    CHECK_EQ_I64(tbio_xd_fields(buf, 5, 5, 8, num, wt, at, a, b), 0);
    CHECK_EQ_I64(tbio_xd_fields(NULL, 0, 1, 0, NULL, NULL, NULL, NULL, NULL), TBIO_XD_ARGS);
    CHECK_EQ_I64(tbio_xd_fields(buf, 4, 3, 0, NULL, NULL, NULL, NULL, NULL), TBIO_XD_ARGS);
    free(buf);
}

static int64_t fields_of(const uint8_t *bytes, size_t n) {
    uint8_t *buf = copy_exact(bytes, n);
    int64_t r = tbio_xd_fields(buf, 0, (int64_t)n, 0, NULL, NULL, NULL, NULL, NULL);
    free(buf);
    return r;
}

static void test_field_errors(void) {
    static const uint8_t trunc_varint[] = {0x08, 0x96};
    static const uint8_t trunc_tag[] = {0x80};
    static const uint8_t long_varint[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    static const uint8_t long_len[] = {0x12, 0x05, 'a'};
    static const uint8_t huge_len[] = {0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 'a'};
    static const uint8_t short_fixed64[] = {0x19, 1, 2, 3};
    static const uint8_t short_fixed32[] = {0x25, 1, 2, 3};
    static const uint8_t group[] = {0x0b, 0x0c};
    static const uint8_t wt7[] = {0x0f, 0x00};
    static const uint8_t field0[] = {0x00, 0x01};
    static const uint8_t ten_bytes[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    CHECK_EQ_I64(fields_of(trunc_varint, sizeof trunc_varint), TBIO_XD_TRUNCATED);
    CHECK_EQ_I64(fields_of(trunc_tag, sizeof trunc_tag), TBIO_XD_TRUNCATED);
    CHECK_EQ_I64(fields_of(long_varint, sizeof long_varint), TBIO_XD_BAD_VARINT);
    CHECK_EQ_I64(fields_of(long_len, sizeof long_len), TBIO_XD_OVERRUN);
    CHECK_EQ_I64(fields_of(huge_len, sizeof huge_len), TBIO_XD_OVERRUN);
    CHECK_EQ_I64(fields_of(short_fixed64, sizeof short_fixed64), TBIO_XD_OVERRUN);
    CHECK_EQ_I64(fields_of(short_fixed32, sizeof short_fixed32), TBIO_XD_OVERRUN);
    CHECK_EQ_I64(fields_of(group, sizeof group), TBIO_XD_BAD_WIRE_TYPE);
    CHECK_EQ_I64(fields_of(wt7, sizeof wt7), TBIO_XD_BAD_WIRE_TYPE);
    CHECK_EQ_I64(fields_of(field0, sizeof field0), TBIO_XD_FIELD_ZERO);
    CHECK_EQ_I64(fields_of(ten_bytes, sizeof ten_bytes), 1); /* 10 bytes: the longest allowed */
}

/* Two events then a line field (display_name): the run is the two events. */
static const uint8_t RUN[] = {
    0x22, 0x13,                                     /* event at 2, 19 bytes */
    0x08, 0x07, 0x10, 0xac, 0x02, 0x18, 0x05,       /* metadata_id 7, offset_ps 300, duration_ps 5 */
    0x22, 0x04, 0x08, 0x02, 0x20, 0x7f,             /* stat 2: int64 127 */
    0x22, 0x04, 0x08, 0x09, 0x38, 0x03,             /* stat 9: ref 3 */
    0x22, 0x1e,                                     /* event at 23, 30 bytes */
    0x08, 0x08,                                     /* metadata_id 8 */
    0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, /* duration_ps -1 */
    0x2a, 0x02, 'x', 'y',                           /* field 5 (len): skipped */
    0x22, 0x0b, 0x08, 0x02, 0x11, 1, 2, 3, 4, 5, 6, 7, 8, /* stat 2 with a double value */
    0x5a, 0x00,                                     /* line display_name "" */
};

static void test_events(void) {
    size_t n = sizeof RUN;
    const uint8_t *bytes = RUN;
    uint8_t *buf = copy_exact(bytes, n);
    int64_t stop = -1;
    CHECK_EQ_I64(tbio_xd_count_events(buf, 0, (int64_t)n, &stop), 2);
    CHECK_EQ_I64(stop, (int64_t)n - 2);
    CHECK_EQ_I64(tbio_xd_count_events(buf, 21, (int64_t)n, &stop), 1);
    CHECK_EQ_I64(tbio_xd_count_events(buf, (int64_t)n - 2, (int64_t)n, &stop), 0);
    CHECK_EQ_I64(stop, (int64_t)n - 2);

    int64_t pos[2], mid[2], off[2], dur[2], c0[2] = {-5, -5}, c1[2] = {-6, -6};
    int32_t len[2];
    int64_t keys[2] = {2, 9}, kcol[2] = {0, 1};
    int64_t *cols[2] = {c0, c1};
    CHECK_EQ_I64(tbio_xd_events(buf, 0, (int64_t)n, 2, pos, len, mid, off, dur, 2, keys, kcol, 2, cols), 2);
    CHECK_EQ_I64(pos[0], 2);
    CHECK_EQ_I64(len[0], 19);
    CHECK_EQ_I64(pos[1], 23);
    CHECK_EQ_I64(len[1], 30);
    CHECK_EQ_I64(mid[0], 7);
    CHECK_EQ_I64(off[0], 300);
    CHECK_EQ_I64(dur[0], 5);
    CHECK_EQ_I64(mid[1], 8);
    CHECK_EQ_I64(off[1], 0); /* absent: 0 */
    CHECK_EQ_I64(dur[1], -1);
    CHECK_EQ_I64(c0[0], 127);
    CHECK_EQ_I64(c1[0], 3);
    CHECK_EQ_I64(c0[1], -5); /* a double value is not an integer stat: untouched */
    CHECK_EQ_I64(c1[1], -6);

    /* no keys: stats not looked at, columns untouched */
    c0[0] = -5;
    CHECK_EQ_I64(tbio_xd_events(buf, 0, (int64_t)n, 2, pos, len, mid, off, dur, 0, NULL, NULL, 0, NULL), 2);
    CHECK_EQ_I64(c0[0], -5);
    /* asking for more events than there are */
    CHECK_EQ_I64(tbio_xd_events(buf, 0, (int64_t)n, 3, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL, 0, NULL),
                 TBIO_XD_ARGS);
    {
        int64_t p3[3], m3[3], o3[3], d3[3];
        int32_t l3[3];
        CHECK_EQ_I64(tbio_xd_events(buf, 0, (int64_t)n, 3, p3, l3, m3, o3, d3, 0, NULL, NULL, 0, NULL),
                     TBIO_XD_NOT_EVENT);
    }
    /* a key mapped to a column that does not exist */
    int64_t bad_col[2] = {0, 2};
    CHECK_EQ_I64(tbio_xd_events(buf, 0, (int64_t)n, 2, pos, len, mid, off, dur, 2, keys, bad_col, 2, cols),
                 TBIO_XD_ARGS);
    free(buf);
}

static void test_event_errors(void) {
    static const uint8_t past_end[] = {0x22, 0x05, 0x08, 0x01};
    static const uint8_t huge[] = {0x22, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x08};
    static const uint8_t field_past_event[] = {0x22, 0x02, 0x08, 0x96, 0x01};
    static const uint8_t stat_past_event[] = {0x22, 0x04, 0x22, 0x05, 0x08, 0x01, 0x20, 0x01};
    static const uint8_t bad_stat[] = {0x22, 0x04, 0x22, 0x02, 0x00, 0x01};
    int64_t stop, pos[1], mid[1], off[1], dur[1], c[1];
    int32_t len[1];
    int64_t key = 1, kcol = 0;
    int64_t *cols[1] = {c};
    uint8_t *b = copy_exact(past_end, sizeof past_end);
    CHECK_EQ_I64(tbio_xd_count_events(b, 0, sizeof past_end, &stop), TBIO_XD_OVERRUN);
    CHECK_EQ_I64(tbio_xd_events(b, 0, sizeof past_end, 1, pos, len, mid, off, dur, 0, NULL, NULL, 0, NULL),
                 TBIO_XD_OVERRUN);
    free(b);
    b = copy_exact(huge, sizeof huge);
    CHECK_EQ_I64(tbio_xd_count_events(b, 0, sizeof huge, &stop), TBIO_XD_OVERRUN);
    free(b);
    b = copy_exact(field_past_event, sizeof field_past_event);
    CHECK_EQ_I64(tbio_xd_count_events(b, 0, sizeof field_past_event, &stop), 1);
    CHECK_EQ_I64(tbio_xd_events(b, 0, sizeof field_past_event, 1, pos, len, mid, off, dur, 0, NULL, NULL, 0,
                                NULL), TBIO_XD_TRUNCATED);
    free(b);
    b = copy_exact(stat_past_event, sizeof stat_past_event);
    CHECK(tbio_xd_events(b, 0, sizeof stat_past_event, 1, pos, len, mid, off, dur, 1, &key, &kcol, 1, cols) < 0);
    free(b);
    b = copy_exact(bad_stat, sizeof bad_stat);
    CHECK_EQ_I64(tbio_xd_events(b, 0, sizeof bad_stat, 1, pos, len, mid, off, dur, 1, &key, &kcol, 1, cols),
                 TBIO_XD_FIELD_ZERO);
    /* without keys the stat's inside is not read */
    CHECK_EQ_I64(tbio_xd_events(b, 0, sizeof bad_stat, 1, pos, len, mid, off, dur, 0, NULL, NULL, 0, NULL), 1);
    free(b);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

enum { N = 300 };

/* Encoded by encode.c, decoded back: every column, stats where written. */
static void test_round_trip(uint8_t **out, size_t *out_len) {
    static int64_t md[N], op[N], dp[N], path[N], off[N], req[N], ret[N], fd[N], err[N];
    for (int i = 0; i < N; i++) {
        int shift = (int)(rnd() % 64);
        md[i] = (int64_t)(rnd() % 100000);
        op[i] = (int64_t)(rnd() >> shift) * (i % 3 == 0 ? -1 : 1);
        dp[i] = (int64_t)(rnd() >> (rnd() % 64));
        path[i] = i % 4 ? (int64_t)(rnd() % 5000) : 0;
        off[i] = i % 5 ? (int64_t)(rnd() >> 1) : -1;
        ret[i] = i % 7 ? (int64_t)(rnd() % 70000) : -1;
        req[i] = i % 2 ? ret[i] : (int64_t)(rnd() % 70000);
        fd[i] = i % 6 ? (int64_t)(rnd() % 1000) : -1;
        err[i] = i % 9 ? 0 : 5;
    }
    static const int64_t sids[TBIO_ENC_NSTATS] = {11, 12, 13, 14, 15, 16};
    uint64_t size = tbio_encode_io_events(N, md, op, dp, path, off, req, ret, fd, err, 0, 0, NULL, NULL, sids,
                                          NULL, 0);
    uint8_t *buf = malloc(size);
    CHECK_EQ_I64(tbio_encode_io_events(N, md, op, dp, path, off, req, ret, fd, err, 0, 0, NULL, NULL, sids, buf,
                                       size), size);
    int64_t stop;
    CHECK_EQ_I64(tbio_xd_count_events(buf, 0, (int64_t)size, &stop), N);
    CHECK_EQ_I64(stop, (int64_t)size);
    static int64_t pos[N], gm[N], go[N], gd[N], cols_mem[6][N];
    static int32_t len[N];
    int64_t *cols[6];
    for (int c = 0; c < 6; c++) {
        cols[c] = cols_mem[c];
        for (int i = 0; i < N; i++)
            cols_mem[c][i] = INT64_MIN;
    }
    int64_t keys[6] = {11, 12, 13, 14, 15, 16}, kcol[6] = {0, 1, 2, 3, 4, 5};
    CHECK_EQ_I64(tbio_xd_events(buf, 0, (int64_t)size, N, pos, len, gm, go, gd, 6, keys, kcol, 6, cols), N);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        bad += gm[i] != md[i] || go[i] != op[i] || gd[i] != dp[i];
        bad += cols_mem[0][i] != (path[i] ? path[i] : INT64_MIN);
        bad += cols_mem[1][i] != (off[i] != -1 ? off[i] : INT64_MIN);
        bad += cols_mem[2][i] != (req[i] != ret[i] ? req[i] : INT64_MIN);
        bad += cols_mem[3][i] != ret[i];
        bad += cols_mem[4][i] != (fd[i] != -1 ? fd[i] : INT64_MIN);
        bad += cols_mem[5][i] != (err[i] ? err[i] : INT64_MIN);
        /* events tile the buffer: a tag byte and a 1-2 byte length before each payload */
        int64_t gap = i + 1 < N ? pos[i + 1] - (pos[i] + len[i]) : 0;
        bad += i + 1 < N ? (gap != 2 && gap != 3) : pos[i] + len[i] != (int64_t)size;
    }
    CHECK_EQ_I64(bad, 0);
    *out = buf;
    *out_len = size;
}

/* Decode everything a buffer holds, as tb_iotrace/model/columnar/ does: count, then decode the run. */
static int decode_all(const uint8_t *src, size_t n) {
    uint8_t *buf = copy_exact(src, n);
    int64_t stop;
    int64_t k = tbio_xd_count_events(buf, 0, (int64_t)n, &stop);
    int rc = 0;
    if (k < 0) {
        rc = (int)k;
    } else if (k > 0) {
        int64_t *pos = malloc(sizeof(int64_t) * (size_t)k * 10);
        int32_t *len = malloc(sizeof(int32_t) * (size_t)k);
        int64_t *cols[6];
        for (int c = 0; c < 6; c++)
            cols[c] = pos + (size_t)k * (4 + (size_t)c);
        int64_t keys[6] = {11, 12, 13, 14, 15, 16}, kcol[6] = {0, 1, 2, 3, 4, 5};
        int64_t r = tbio_xd_events(buf, 0, (int64_t)n, k, pos, len, pos + k, pos + 2 * k, pos + 3 * k, 6, keys,
                                   kcol, 6, cols);
        rc = r < 0 ? (int)r : 0;
        if (r >= 0 && r != k)
            rc = 1;
        free(pos);
        free(len);
    }
    int64_t f = tbio_xd_fields(buf, 0, (int64_t)n, 0, NULL, NULL, NULL, NULL, NULL);
    (void)f;
    free(buf);
    return rc;
}

static void test_hostile(const uint8_t *good, size_t n) {
    CHECK_EQ_I64(decode_all(good, n), 0);
    /* every truncation: an error, or whole events only (a cut at an event boundary) */
    int odd = 0, whole = 0;
    for (size_t cut = 0; cut < n; cut++) {
        int rc = decode_all(good, cut);
        odd += rc > 0 || rc <= TBIO_XD_NOT_EVENT;
        whole += rc == 0;
    }
    CHECK_EQ_I64(odd, 0);
    CHECK_EQ_I64(whole, N); /* the cuts at 0 and after each of the first N-1 events */
    /* byte flips, corrupt varints, huge lengths at random places */
    uint8_t *m = malloc(n);
    int errors = 0, oks = 0;
    for (int round = 0; round < 3000; round++) {
        memcpy(m, good, n);
        size_t at = (size_t)(rnd() % n);
        switch (round % 4) {
        case 0:
            m[at] ^= (uint8_t)(1u << (rnd() % 8));
            break;
        case 1: /* an over-long varint */
            for (size_t j = at; j < n && j < at + 11; j++)
                m[j] = 0xff;
            break;
        case 2: /* a huge length after a length-delimited tag */
            for (size_t j = at; j + 10 < n; j++) {
                if (m[j] == 0x22) {
                    static const uint8_t big[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
                    memcpy(m + j + 1, big, sizeof big);
                    break;
                }
            }
            break;
        default:
            m[at] = (uint8_t)rnd();
            break;
        }
        int rc = decode_all(m, n);
        if (rc < 0)
            errors++;
        else if (rc == 0)
            oks++;
        odd += rc > 0 || rc <= TBIO_XD_NOT_EVENT;
    }
    CHECK_EQ_I64(odd, 0);
    CHECK(errors > 100); /* corruption is seen, not decoded as something else every time */
    CHECK(oks > 100);    /* and a flipped value byte still decodes */
    free(m);
}

static void test_event_metadata(void) {
    static const uint8_t entries[] = {
        /* entry {key 5, value {id 5, name "read /a", display_name "read"}} */
        0x08, 0x05, 0x12, 0x11, 0x08, 0x05, 0x12, 0x07, 'r', 'e', 'a', 'd', ' ', '/', 'a',
        0x22, 0x04, 'r', 'e', 'a', 'd',
        /* entry {key 300, value {name "x", name "yz"}}: the last name wins */
        0x08, 0xac, 0x02, 0x12, 0x07, 0x12, 0x01, 'x', 0x12, 0x02, 'y', 'z',
        /* entry {key 9}: no value */
        0x08, 0x09,
        /* a corrupt entry */
        0x12, 0x05, 0x08,
    };
    uint8_t *buf = copy_exact(entries, sizeof entries);
    int64_t starts[4] = {0, 21, 33, 35}, ends[4] = {21, 33, 35, 38};
    int64_t key[4], na[4], nb[4], da[4], db[4];
    CHECK_EQ_I64(tbio_xd_event_metadata(buf, sizeof entries, 3, starts, ends, key, na, nb, da, db), 3);
    CHECK_EQ_I64(key[0], 5);
    CHECK(nb[0] - na[0] == 7 && memcmp(buf + na[0], "read /a", 7) == 0);
    CHECK(db[0] - da[0] == 4 && memcmp(buf + da[0], "read", 4) == 0);
    CHECK_EQ_I64(key[1], 300);
    CHECK(nb[1] - na[1] == 2 && memcmp(buf + na[1], "yz", 2) == 0);
    CHECK_EQ_I64(db[1] - da[1], 0);
    CHECK_EQ_I64(key[2], 9);
    CHECK_EQ_I64(nb[2] - na[2], 0);
    CHECK(tbio_xd_event_metadata(buf, sizeof entries, 4, starts, ends, key, na, nb, da, db) < 0);
    int64_t past[1] = {39};
    CHECK_EQ_I64(tbio_xd_event_metadata(buf, sizeof entries, 1, starts, past, key, na, nb, da, db), TBIO_XD_ARGS);
    free(buf);
}

/* The stats (XStat) and packed child ids inside an entry are checked as protobuf parses
 * them: the NumPy path hands the whole plane to protobuf and must reject the same files. */
static void test_event_metadata_nested(void) {
    static const uint8_t entries[] = {
        /* entry {key 7, value {name "s", stats {metadata_id 1, int64 2}, child_id [1, 2]}} */
        0x08, 0x07, 0x12, 0x0d, 0x12, 0x01, 's', 0x2a, 0x04, 0x08, 0x01, 0x20, 0x02, 0x32, 0x02, 0x01, 0x02,
        /* entry {key 8, value {stats {a field numbered 0}}} */
        0x08, 0x08, 0x12, 0x04, 0x2a, 0x02, 0x00, 0x01,
        /* entry {key 9, value {child_id [a varint cut short]}} */
        0x08, 0x09, 0x12, 0x03, 0x32, 0x01, 0x80,
    };
    uint8_t *buf = copy_exact(entries, sizeof entries);
    int64_t starts[3] = {0, 17, 25}, ends[3] = {17, 25, 32};
    int64_t key[3], na[3], nb[3], da[3], db[3];
    CHECK_EQ_I64(tbio_xd_event_metadata(buf, sizeof entries, 1, starts, ends, key, na, nb, da, db), 1);
    CHECK_EQ_I64(key[0], 7);
    CHECK(nb[0] - na[0] == 1 && buf[na[0]] == 's');
    CHECK_EQ_I64(tbio_xd_event_metadata(buf, sizeof entries, 1, starts + 1, ends + 1, key, na, nb, da, db),
                 TBIO_XD_FIELD_ZERO);
    CHECK_EQ_I64(tbio_xd_event_metadata(buf, sizeof entries, 1, starts + 2, ends + 2, key, na, nb, da, db),
                 TBIO_XD_TRUNCATED);
    free(buf);
}

int main(void) {
    test_fields();
    test_field_errors();
    test_events();
    test_event_errors();
    uint8_t *run;
    size_t n;
    test_round_trip(&run, &n);
    test_hostile(run, n);
    free(run);
    test_event_metadata();
    test_event_metadata_nested();
    return CHECK_DONE();
}
