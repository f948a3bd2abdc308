/* tbio_encode_io_events: exact bytes of small cases, size pass == write pass, no
 * write past cap or when cap is short (run under ASan/UBSan with the sanitizer builds).
 * Byte-for-byte equality with the NumPy encoder is tests/unit/test_event_rows.py. */
#include "check.h"
#include "codec.h"

#include <string.h>

static const int64_t SIDS[TBIO_ENC_NSTATS] = {1, 2, 3, 4, 5, 6};

static uint64_t enc(uint64_t n, const int64_t *md, const int64_t *off_ps, const int64_t *dur_ps,
                    const int64_t *path, const int64_t *off, const int64_t *req, const int64_t *ret,
                    const int64_t *fd, const int64_t *err, int64_t kbase, uint64_t nk, const int64_t *kreq,
                    const int64_t *kret, uint8_t *out, uint64_t cap) {
    return tbio_encode_io_events(n, md, off_ps, dur_ps, path, off, req, ret, fd, err, kbase, nk, kreq, kret,
                                 SIDS, out, cap);
}

static void test_one_event_all_stats(void) {
    int64_t md = 7, off_ps = 300, dur_ps = 5, path = 9, off = 128, req = 64, ret = 10, fd = 3, err = 5;
    uint8_t out[128];
    memset(out, 0xAB, sizeof out);
    uint64_t size = enc(1, &md, &off_ps, &dur_ps, &path, &off, &req, &ret, &fd, &err, 0, 0, NULL, NULL, NULL, 0);
    static const uint8_t want[] = {
        0x22, 44,                               /* XLine.events, 44 bytes */
        0x08, 7, 0x10, 0xAC, 0x02, 0x18, 5,     /* metadata_id 7, offset_ps 300, duration_ps 5 */
        0x22, 4, 0x08, 1, 0x38, 9,              /* path: ref_value 9 */
        0x22, 5, 0x08, 2, 0x20, 0x80, 0x01,     /* offset 128 */
        0x22, 4, 0x08, 3, 0x20, 64,             /* bytes_requested 64 (!= returned) */
        0x22, 4, 0x08, 4, 0x20, 10,             /* bytes_returned 10 */
        0x22, 4, 0x08, 5, 0x20, 3,              /* fd 3 */
        0x22, 4, 0x08, 6, 0x20, 5,              /* errno 5 */
    };
    CHECK_EQ_I64(size, sizeof want);
    CHECK_EQ_I64(enc(1, &md, &off_ps, &dur_ps, &path, &off, &req, &ret, &fd, &err, 0, 0, NULL, NULL, out,
                     size), size);
    CHECK(memcmp(out, want, sizeof want) == 0);
    CHECK(out[size] == 0xAB);   /* nothing past the encoded size */
}

static void test_absent_and_negative(void) {
    /* NULL columns: absent everywhere; requested == returned: left out; -1 is 10 bytes */
    int64_t md = 1, off_ps = 0, dur_ps = 0, ret = -1, req = -1;
    uint8_t out[64];
    uint64_t size = enc(1, &md, &off_ps, &dur_ps, NULL, NULL, &req, &ret, NULL, NULL, 0, 0, NULL, NULL, NULL, 0);
    CHECK_EQ_I64(size, 2 + 6 + 2 + 13);
    CHECK_EQ_I64(enc(1, &md, &off_ps, &dur_ps, NULL, NULL, &req, &ret, NULL, NULL, 0, 0, NULL, NULL, out, size),
                 size);
    CHECK(out[0] == 0x22 && out[1] == 6 + 15);
    CHECK(out[8] == 0x22 && out[9] == 13 && out[12] == 0x20);
    for (int i = 13; i < 22; i++) CHECK(out[i] == 0xFF);
    CHECK(out[22] == 0x01);
}

static void test_kind_values(void) {
    /* kinds 10 and 11: requested/returned equal to the kind's are left out; md 12 has no kind */
    int64_t md[3] = {10, 11, 12}, z[3] = {0, 0, 0};
    int64_t req[3] = {64, 64, 64}, ret[3] = {64, 8, 64};
    int64_t kreq[2] = {64, 64}, kret[2] = {64, 64};
    uint8_t out[128];
    uint64_t size = enc(3, md, z, z, NULL, NULL, req, ret, NULL, NULL, 10, 2, kreq, kret, NULL, 0);
    /* event 0: no stats (8); event 1: returned 8 (8 + 6); event 2: returned always (8 + 6) */
    CHECK_EQ_I64(size, 8 + 14 + 14);
    CHECK_EQ_I64(enc(3, md, z, z, NULL, NULL, req, ret, NULL, NULL, 10, 2, kreq, kret, out, size), size);
    CHECK(out[1] == 6 && out[8] == 0x22 && out[9] == 12);
    CHECK(out[16] == 0x22 && out[20] == 0x20 && out[21] == 8);
    /* NULL tables: the rule without kinds (returned always, requested where it differs) */
    CHECK_EQ_I64(enc(3, md, z, z, NULL, NULL, req, ret, NULL, NULL, 10, 2, NULL, kret, NULL, 0), 14 + 20 + 14);
}

static void test_short_cap_writes_nothing(void) {
    int64_t v[4] = {1, 2, 3, 4}, big[4] = {INT64_MIN, INT64_MAX, -1, 1};
    uint8_t out[512];
    memset(out, 0x5A, sizeof out);
    uint64_t size = enc(4, v, v, v, big, big, big, v, big, big, 0, 0, NULL, NULL, NULL, 0);
    CHECK(size > 0 && size < sizeof out);
    CHECK_EQ_I64(enc(4, v, v, v, big, big, big, v, big, big, 0, 0, NULL, NULL, out, size - 1), size);
    int untouched = 1;
    for (size_t i = 0; i < sizeof out; i++) untouched &= out[i] == 0x5A;
    CHECK(untouched);
    CHECK_EQ_I64(enc(4, v, v, v, big, big, big, v, big, big, 0, 0, NULL, NULL, out, size), size);
    CHECK(out[size] == 0x5A);
    CHECK_EQ_I64(enc(0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, NULL, NULL, out, 0), 0);
}

int main(void) {
    test_one_event_all_stats();
    test_absent_and_negative();
    test_kind_values();
    test_short_cap_writes_nothing();
    return CHECK_DONE();
}
