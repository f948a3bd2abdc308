/* Protobuf wire scanning for the TensorBoard plugin's XSpace decoder
 * (tb_iotrace/model/columnar/), which otherwise tokenizes the events with
 * NumPy: ~0.5 s of CPU for a million I/O events, this loop ~20 ms.
 *
 * Two jobs, both on a read-only buffer (the memory-mapped file) with every
 * position and length checked against the bounds the caller gives:
 *
 *   tbio_xd_fields        the top-level fields of one message (an XPlane:
 *                         its lines, and the metadata maps handed to protobuf)
 *   tbio_xd_count_events  the run of XLine.events entries at a position
 *   tbio_xd_events        the columns of such a run:
 *
 *   XLine.events (4, len) XEvent {
 *     metadata_id (1) offset_ps (2) duration_ps (3)   varints, as int64
 *     stats (4, len) XStat { metadata_id (1), uint64 (3) | int64 (4) | ref (7) }
 *     anything else                                   skipped
 *   }
 *
 * Values are those of the NumPy path: absent fields are 0 (proto3), a
 * repeated field keeps its last value, stats are only looked at when the
 * caller asks for some (nkeys > 0), and then a stat's value is stored when it
 * is an integer one.  Errors are stricter than the NumPy path's (which skips
 * some damage inside an event), like protobuf's own parser: a varint longer
 * than 10 bytes, a field or length running past its message, a wire type
 * protobuf no longer writes (groups) and field number 0 are errors (negative
 * TBIO_XD_* codes), never a read outside [0, end).  Pure functions: no state,
 * no allocation.
 */
#include "codec.h"

#include <string.h>

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

/* Reads the varint at *p (below end); advances *p.  0 or an error code. */
static inline int rd_varint(const uint8_t *b, int64_t *p, int64_t end, uint64_t *out) {
    int64_t i = *p;
    if (i < end && b[i] < 0x80) {  /* tags, small values */
        *out = b[i];
        *p = i + 1;
        return 0;
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (end - i >= 8) {
        /* Up to 8 bytes without a branch per byte: the first byte without its high bit
         * ends the varint; the 7-bit groups are then packed pairwise. */
        uint64_t w;
        memcpy(&w, b + i, 8);
        uint64_t last = ~w & 0x8080808080808080ULL;
        if (last) {
            unsigned nb = ((unsigned)__builtin_ctzll(last) >> 3) + 1;
            uint64_t x = nb == 8 ? w : w & ((1ULL << (8 * nb)) - 1);
            x &= 0x7f7f7f7f7f7f7f7fULL;
            x = ((x & 0x7f007f007f007f00ULL) >> 1) | (x & 0x007f007f007f007fULL);
            x = ((x & 0x3fff00003fff0000ULL) >> 2) | (x & 0x00003fff00003fffULL);
            x = ((x & 0x0fffffff00000000ULL) >> 4) | (x & 0x000000000fffffffULL);
            *out = x;
            *p = i + nb;
            return 0;
        }
    }
#endif
    uint64_t v = 0;
    for (unsigned k = 0; k < 10; k++) {
        if (i >= end)
            return TBIO_XD_TRUNCATED;
        uint8_t c = b[i++];
        v |= (uint64_t)(c & 0x7F) << (7 * k);
        if (c < 0x80) {
            *p = i;
            *out = v;
            return 0;
        }
    }
    return TBIO_XD_BAD_VARINT;
}

/* One field at *p (below end): its number, wire type and value range; *p
 * moves past it.  For varints [*a, *b) is the value's bytes and *v its value;
 * for length-delimited fields the payload and its length. */
static inline int rd_field(const uint8_t *buf, int64_t *p, int64_t end, uint64_t *number, int *wt,
                           int64_t *a, int64_t *b, uint64_t *v) {
    uint64_t tag;
    int rc = rd_varint(buf, p, end, &tag);
    if (rc)
        return rc;
    *number = tag >> 3;
    *wt = (int)(tag & 7);
    if (*number == 0)
        return TBIO_XD_FIELD_ZERO;
    *a = *p;
    switch (*wt) {
    case WT_VARINT:
        rc = rd_varint(buf, p, end, v);
        if (rc)
            return rc;
        break;
    case WT_LEN:
        rc = rd_varint(buf, p, end, v);
        if (rc)
            return rc;
        if (*v > (uint64_t)(end - *p))
            return TBIO_XD_OVERRUN;
        *a = *p;
        *p += (int64_t)*v;
        break;
    case WT_I64:
        if (end - *p < 8)
            return TBIO_XD_OVERRUN;
        *p += 8;
        break;
    case WT_I32:
        if (end - *p < 4)
            return TBIO_XD_OVERRUN;
        *p += 4;
        break;
    default:
        return TBIO_XD_BAD_WIRE_TYPE;
    }
    *b = *p;
    return 0;
}

static inline int bad_range(const uint8_t *buf, int64_t start, int64_t end) {
    return buf == NULL || start < 0 || end < start;
}

TBIO_CODEC_API int64_t tbio_xd_fields(const uint8_t *buf, int64_t start, int64_t end, int64_t cap, int64_t *number,
                                int64_t *wire_type, int64_t *tag_at, int64_t *val_start, int64_t *val_end) {
    if (bad_range(buf, start, end))
        return TBIO_XD_ARGS;
    int64_t p = start, n = 0;
    while (p < end) {
        int64_t at = p, a, b;
        uint64_t num, v;
        int wt;
        int rc = rd_field(buf, &p, end, &num, &wt, &a, &b, &v);
        if (rc)
            return rc;
        if (n < cap) {
            number[n] = num > INT64_MAX ? INT64_MAX : (int64_t)num;
            wire_type[n] = wt;
            tag_at[n] = at;
            val_start[n] = a;
            val_end[n] = b;
        }
        n++;
    }
    return n;
}

/* The tag byte of XLine.events (field 4, length-delimited): the run of events
 * is the entries in a row that start with it (TensorFlow and protobuf write a
 * repeated field's entries in a row; a line field after them ends the run). */
enum { EVENT_TAG = 0x22 };

/* The length of the XEvent whose tag was just read (at *p): it fits below end
 * and in an int32.  0 or an error code; *p moves to the payload. */
static inline int rd_event_len(const uint8_t *buf, int64_t *p, int64_t end, uint64_t *len) {
    int rc = rd_varint(buf, p, end, len);
    if (rc)
        return rc;
    if (*len > (uint64_t)(end - *p))
        return TBIO_XD_OVERRUN;
    if (*len > INT32_MAX)
        return TBIO_XD_TOO_BIG;
    return 0;
}

TBIO_CODEC_API int64_t tbio_xd_count_events(const uint8_t *buf, int64_t pos, int64_t end, int64_t *stop) {
    if (bad_range(buf, pos, end) || stop == NULL)
        return TBIO_XD_ARGS;
    int64_t p = pos, n = 0;
    while (p < end && buf[p] == EVENT_TAG) {
        uint64_t len;
        p++;
        int rc = rd_event_len(buf, &p, end, &len);
        if (rc)
            return rc;
        p += (int64_t)len;
        n++;
    }
    *stop = p;
    return n;
}

/* The stat at buf[a:b): stored into its column when its metadata id is one of
 * keys and it has an integer value. */
static inline int one_stat(const uint8_t *buf, int64_t a, int64_t b, int64_t i, int64_t nkeys, const int64_t *keys,
                           const int64_t *key_col, int64_t *const *cols) {
    uint64_t sid = 0, val = 0;
    int has = 0;
    while (a < b) {
        int64_t x, y;
        uint64_t num, v;
        int wt;
        int rc = rd_field(buf, &a, b, &num, &wt, &x, &y, &v);
        if (rc)
            return rc;
        if (wt != WT_VARINT)
            continue;
        if (num == 1) {
            sid = v;
        } else if (num == 3 || num == 4 || num == 7) {
            val = v;
            has = 1;
        }
    }
    if (!has)
        return 0;
    for (int64_t k = 0; k < nkeys; k++) {
        if (keys[k] == (int64_t)sid) {
            cols[key_col[k]][i] = (int64_t)val;
            break;
        }
    }
    return 0;
}

TBIO_CODEC_API int64_t tbio_xd_events(const uint8_t *buf, int64_t pos, int64_t end, int64_t n, int64_t *ev_pos,
                                int32_t *ev_len, int64_t *metadata_id, int64_t *offset_ps, int64_t *duration_ps,
                                int64_t nkeys, const int64_t *keys, const int64_t *key_col, int64_t ncols,
                                int64_t *const *cols) {
    if (bad_range(buf, pos, end) || n < 0 || nkeys < 0 || ncols < 0)
        return TBIO_XD_ARGS;
    if (n > 0 && (ev_pos == NULL || ev_len == NULL || metadata_id == NULL || offset_ps == NULL ||
                  duration_ps == NULL))
        return TBIO_XD_ARGS;
    if (nkeys > 0) {
        if (keys == NULL || key_col == NULL || cols == NULL)
            return TBIO_XD_ARGS;
        for (int64_t k = 0; k < nkeys; k++)
            if (key_col[k] < 0 || key_col[k] >= ncols || (n > 0 && cols[key_col[k]] == NULL))
                return TBIO_XD_ARGS;
    }
    int64_t p = pos;
    for (int64_t i = 0; i < n; i++) {
        if (p >= end || buf[p] != EVENT_TAG)
            return TBIO_XD_NOT_EVENT;
        uint64_t len;
        p++;
        int rc = rd_event_len(buf, &p, end, &len);
        if (rc)
            return rc;
        int64_t e = p + (int64_t)len;
        ev_pos[i] = p;
        ev_len[i] = (int32_t)len;
        uint64_t mid = 0, off = 0, dur = 0;
        while (p < e) {
            int64_t a, b;
            uint64_t num, v;
            int wt;
            rc = rd_field(buf, &p, e, &num, &wt, &a, &b, &v);
            if (rc)
                return rc;
            if (wt == WT_VARINT) {
                if (num == 1)
                    mid = v;
                else if (num == 2)
                    off = v;
                else if (num == 3)
                    dur = v;
            } else if (wt == WT_LEN && num == 4 && nkeys > 0) {
                rc = one_stat(buf, a, b, i, nkeys, keys, key_col, cols);
                if (rc)
                    return rc;
            }
        }
        metadata_id[i] = (int64_t)mid;
        offset_ps[i] = (int64_t)off;
        duration_ps[i] = (int64_t)dur;
    }
    return n;
}

/* The last length-delimited field number `want` of the message buf[a:b): its
 * payload range in *x, *y (left as they are when there is none). */
/* Every field of the message at buf[a:b) well formed (as protobuf checks them). */
static int check_fields(const uint8_t *buf, int64_t a, int64_t b) {
    while (a < b) {
        int64_t s, e;
        uint64_t num, v;
        int wt;
        int rc = rd_field(buf, &a, b, &num, &wt, &s, &e, &v);
        if (rc)
            return rc;
    }
    return 0;
}

/* Packed varints at buf[a:b) well formed. */
static int check_packed(const uint8_t *buf, int64_t a, int64_t b) {
    while (a < b) {
        uint64_t v;
        int rc = rd_varint(buf, &a, b, &v);
        if (rc)
            return rc;
    }
    return 0;
}

/* The XEventMetadata at buf[a:b): where its last name (2) and display name (4) lie, its
 * stats (5, XStat) and child ids (6, packed) checked as protobuf parses them, so that the
 * entries the lazy path leaves to protobuf for later are the ones it accepts now, and the
 * NumPy path (protobuf on the whole plane) rejects the same files. */
static int event_md_fields(const uint8_t *buf, int64_t a, int64_t b, int64_t *na, int64_t *nb, int64_t *da,
                           int64_t *db) {
    while (a < b) {
        int64_t s, e;
        uint64_t num, v;
        int wt;
        int rc = rd_field(buf, &a, b, &num, &wt, &s, &e, &v);
        if (rc)
            return rc;
        if (wt != WT_LEN)
            continue;
        if (num == 2) {
            *na = s;
            *nb = e;
        } else if (num == 4) {
            *da = s;
            *db = e;
        } else if (num == 5) {
            rc = check_fields(buf, s, e);
        } else if (num == 6) {
            rc = check_packed(buf, s, e);
        }
        if (rc)
            return rc;
    }
    return 0;
}

TBIO_CODEC_API int64_t tbio_xd_event_metadata(const uint8_t *buf, int64_t size, int64_t n, const int64_t *starts,
                                        const int64_t *ends, int64_t *key, int64_t *name_at, int64_t *name_end,
                                        int64_t *disp_at, int64_t *disp_end) {
    if (buf == NULL || size < 0 || n < 0)
        return TBIO_XD_ARGS;
    if (n > 0 && (starts == NULL || ends == NULL || key == NULL || name_at == NULL || name_end == NULL ||
                  disp_at == NULL || disp_end == NULL))
        return TBIO_XD_ARGS;
    for (int64_t i = 0; i < n; i++) {
        int64_t p = starts[i], end = ends[i];
        if (p < 0 || end < p || end > size)
            return TBIO_XD_ARGS;
        uint64_t k = 0;
        int64_t va = 0, vb = 0, na = 0, nb = 0, da = 0, db = 0;
        while (p < end) {  /* the map entry: key (1), value (2) */
            int64_t s, e;
            uint64_t num, v;
            int wt;
            int rc = rd_field(buf, &p, end, &num, &wt, &s, &e, &v);
            if (rc)
                return rc;
            if (num == 1 && wt == WT_VARINT)
                k = v;
            else if (num == 2 && wt == WT_LEN) {
                va = s;
                vb = e;
            }
        }
        int rc = event_md_fields(buf, va, vb, &na, &nb, &da, &db);
        if (rc)
            return rc;
        key[i] = (int64_t)k;
        name_at[i] = na;
        name_end[i] = nb;
        disp_at[i] = da;
        disp_end[i] = db;
    }
    return n;
}
