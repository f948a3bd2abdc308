/* Protobuf wire encoding of I/O events as XLine.events entries.
 *
 * tb_iotrace.store.xplane.encode builds the XPlane lines of a profile window's I/O
 * trace; encoding a million events column-wise in NumPy takes over a second,
 * this loop ~20 ms.  The bytes are exactly those of the NumPy path
 * (tb_iotrace.store.xplane.encode.encode_events_numpy), which tests/unit/test_event_rows.py checks:
 *
 *   XLine.events (4, len) {
 *     metadata_id (1) offset_ps (2) duration_ps (3)         always, as varints
 *     stats (4, len) XStat { metadata_id (1), value }        in this order, each when present:
 *       path            ref_value (7)    when path_ref != 0
 *       offset          int64_value (4)  when offset != -1
 *       bytes_requested int64_value (4)  when it differs from the kind's (*)
 *       bytes_returned  int64_value (4)  when it differs from the kind's (*)
 *       fd              int64_value (4)  when fd != -1
 *       errno           int64_value (4)  when err != 0
 *   }
 *
 * (*) With kind tables (kind_requested/kind_returned, nkinds > 0), the event's
 * kind is metadata_id - kind_base and its stats are left out where they equal
 * the kind's values (the writer puts those on the XEventMetadata).  Events
 * outside the tables, or without tables: bytes_requested when it differs from
 * bytes_returned, bytes_returned always.
 *
 * int64 values are varints of their two's complement (negative: 10 bytes), as
 * protobuf encodes int64.  path_ref, offset, fd and err may be NULL: absent on
 * every event.  Pure function of its arguments: no locks, no state.
 */
#include "codec.h"

enum { WT_VARINT = 0, WT_LEN = 2 };
#define TAG(field, wt) ((uint8_t)(((field) << 3) | (wt)))

static inline unsigned vlen(uint64_t v) {
    unsigned n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static inline uint8_t *vput(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* One event's stats: which are present, and their values. */
typedef struct {
    int n;
    int which[TBIO_ENC_NSTATS];   /* index into the stat id table */
    uint64_t value[TBIO_ENC_NSTATS];
} stats_t;

typedef struct {
    const int64_t *path_ref, *offset, *requested, *returned, *fd, *err, *metadata_id;
    int64_t kind_base;
    uint64_t nkinds;
    const int64_t *kind_requested, *kind_returned;
} cols_t;

static inline void collect(stats_t *st, uint64_t i, const cols_t *c) {
    st->n = 0;
#define PUT(k, v) do { st->which[st->n] = (k); st->value[st->n] = (uint64_t)(v); st->n++; } while (0)
    int64_t req = c->requested[i], ret = c->returned[i];
    uint64_t kind = (uint64_t)c->metadata_id[i] - (uint64_t)c->kind_base;
    int has_kind = c->nkinds > 0 && kind < c->nkinds;
    const int64_t *path_ref = c->path_ref, *offset = c->offset, *fd = c->fd, *err = c->err;
    if (path_ref && path_ref[i] != 0) PUT(0, path_ref[i]);
    if (offset && offset[i] != -1) PUT(1, offset[i]);
    if (has_kind ? req != c->kind_requested[kind] : req != ret) PUT(2, req);
    if (!has_kind || ret != c->kind_returned[kind]) PUT(3, ret);
    if (fd && fd[i] != -1) PUT(4, fd[i]);
    if (err && err[i] != 0) PUT(5, err[i]);
#undef PUT
}

/* Size of XStat {metadata_id: sid, <field>: value} without its own tag/length. */
static inline unsigned stat_body(uint64_t sid, uint64_t value) {
    return 1 + vlen(sid) + 1 + vlen(value);
}

/* Payload size of one XEvent: metadata id, offset and duration (a tag each) and its stats. */
static inline uint64_t event_len(const stats_t *st, const uint64_t *sid, int64_t metadata_id, int64_t offset_ps,
                                 int64_t duration_ps) {
    uint64_t len = 3 + vlen((uint64_t)metadata_id) + vlen((uint64_t)offset_ps) + vlen((uint64_t)duration_ps);
    for (int s = 0; s < st->n; s++) {
        unsigned body = stat_body(sid[st->which[s]], st->value[s]);
        len += 1 + vlen(body) + body;
    }
    return len;
}

uint64_t tbio_encode_io_events(uint64_t n, const int64_t *metadata_id, const int64_t *offset_ps,
                               const int64_t *duration_ps, const int64_t *path_ref, const int64_t *offset,
                               const int64_t *requested, const int64_t *returned, const int64_t *fd,
                               const int64_t *err, int64_t kind_base, uint64_t nkinds,
                               const int64_t *kind_requested, const int64_t *kind_returned,
                               const int64_t *stat_ids, uint8_t *out, uint64_t cap) {
    uint64_t sid[TBIO_ENC_NSTATS];
    for (int k = 0; k < TBIO_ENC_NSTATS; k++) sid[k] = (uint64_t)stat_ids[k];
    if (kind_requested == NULL || kind_returned == NULL) nkinds = 0;
    const cols_t c = {path_ref, offset, requested, returned, fd, err, metadata_id,
                      kind_base, nkinds, kind_requested, kind_returned};
    stats_t st;

    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        collect(&st, i, &c);
        uint64_t len = event_len(&st, sid, metadata_id[i], offset_ps[i], duration_ps[i]);
        total += 1 + vlen(len) + len;
    }
    if (out == NULL || cap < total) return total;

    uint8_t *p = out;
    for (uint64_t i = 0; i < n; i++) {
        collect(&st, i, &c);
        uint64_t len = event_len(&st, sid, metadata_id[i], offset_ps[i], duration_ps[i]);
        *p++ = TAG(4, WT_LEN);
        p = vput(p, len);
        *p++ = TAG(1, WT_VARINT);
        p = vput(p, (uint64_t)metadata_id[i]);
        *p++ = TAG(2, WT_VARINT);
        p = vput(p, (uint64_t)offset_ps[i]);
        *p++ = TAG(3, WT_VARINT);
        p = vput(p, (uint64_t)duration_ps[i]);
        for (int s = 0; s < st.n; s++) {
            uint64_t id = sid[st.which[s]];
            *p++ = TAG(4, WT_LEN);
            p = vput(p, stat_body(id, st.value[s]));
            *p++ = TAG(1, WT_VARINT);
            p = vput(p, id);
            *p++ = st.which[s] == 0 ? TAG(7, WT_VARINT) : TAG(4, WT_VARINT);
            p = vput(p, st.value[s]);
        }
    }
    return total;
}
