/* Darshan's record id of a path: Bob Jenkins' 64-bit hash ("lookup8", 1997)
 * of the path's bytes with level (initial value) 0, which is what Darshan's
 * darshan_core_gen_record_id stores for a file.  Written here from the
 * algorithm's description: three 64-bit lanes a, b, c (a = b = level,
 * c = the golden ratio constant), every 24-byte block added little-endian
 * into a, b, c and mixed; then the length into c, the last 0..23 bytes into
 * a, b and the upper seven bytes of c, and a final mix; the id is c.
 * Verified against the id/name pairs of Darshan's own logs
 * (tests/unit/test_recordid.py). */
#include "shim.h"

#include <stdint.h>

static uint64_t load_le(const unsigned char *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* One mix: four rounds, each round subtracts the two other lanes from every
 * lane in turn and xors in a shifted neighbour (right, left, right). */
static void mix(uint64_t *a, uint64_t *b, uint64_t *c) {
    static const unsigned char sh[4][3] = {{43, 9, 8}, {38, 23, 5}, {35, 49, 11}, {12, 18, 22}};
    for (int r = 0; r < 4; r++) {
        *a -= *b; *a -= *c; *a ^= *c >> sh[r][0];
        *b -= *c; *b -= *a; *b ^= *a << sh[r][1];
        *c -= *a; *c -= *b; *c ^= *b >> sh[r][2];
    }
}

uint64_t tbio_record_id(const char *path, size_t len) {
    const unsigned char *p = (const unsigned char *)path;
    uint64_t a = 0, b = 0, c = 0x9e3779b97f4a7c13ull;
    size_t left = len;
    for (; left >= 24; left -= 24, p += 24) {
        a += load_le(p, 8);
        b += load_le(p + 8, 8);
        c += load_le(p + 16, 8);
        mix(&a, &b, &c);
    }
    c += (uint64_t)len;
    a += load_le(p, left < 8 ? left : 8);
    if (left > 8) b += load_le(p + 8, left < 16 ? left - 8 : 8);
    if (left > 16) c += load_le(p + 16, left - 16) << 8;   /* c's low byte holds the length */
    mix(&a, &b, &c);
    return c;
}
