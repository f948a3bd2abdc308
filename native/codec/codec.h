/* The XPlane codecs: what tb_iotrace._codec (cffi) and the C tests call.
 * A module of their own, apart from the interposer (tb_iotrace._native), so
 * TensorBoard and the readers never load the shim to decode or encode.  Pure
 * functions of their arguments: no locks, no state.  This file is also the
 * cffi cdef: build_codec.py strips the preprocessor lines and the
 * TBIO_CODEC_API markers, so keep declarations plain.
 */
#ifndef TBIO_CODEC_H
#define TBIO_CODEC_H
#include <stdint.h>
#include <stddef.h>
#define TBIO_CODEC_API __attribute__((visibility("default")))

/* XLine.events entries (protobuf wire format) for n I/O events: the bytes
 * tb_iotrace.store.xplane.encode writes (layout in encode.c).  Columns in event
 * order; stat_ids holds the XStatMetadata ids of path, offset,
 * bytes_requested, bytes_returned, fd, errno; path_ref, offset, fd and err may
 * be NULL (absent on every event).  kind_requested/kind_returned (nkinds
 * entries, for metadata ids kind_base...) are the values events of a kind
 * leave out; NULL: none.  Returns the encoded size; the bytes are written
 * only when out is not NULL and cap >= that size. */
enum { TBIO_ENC_NSTATS = 6 };
TBIO_CODEC_API uint64_t tbio_encode_io_events(uint64_t n, const int64_t *metadata_id, const int64_t *offset_ps,
                                        const int64_t *duration_ps, const int64_t *path_ref,
                                        const int64_t *offset, const int64_t *requested,
                                        const int64_t *returned, const int64_t *fd, const int64_t *err,
                                        int64_t kind_base, uint64_t nkinds, const int64_t *kind_requested,
                                        const int64_t *kind_returned, const int64_t *stat_ids, uint8_t *out,
                                        uint64_t cap);

/* Protobuf wire scanning for the columnar XSpace reader (tb_iotrace.model.columnar) (xdecode.c); every
 * position is an offset into buf, every read bounds-checked against end
 * (which must not exceed buf's size: the caller's one promise).  Errors are
 * these negative codes. */
enum {
    TBIO_XD_TRUNCATED = -1,      /* a varint runs past the end of its message */
    TBIO_XD_BAD_VARINT = -2,     /* a varint longer than 10 bytes */
    TBIO_XD_OVERRUN = -3,        /* a length or fixed-size value runs past its message */
    TBIO_XD_BAD_WIRE_TYPE = -4,  /* wire type 3, 4, 6 or 7 */
    TBIO_XD_FIELD_ZERO = -5,     /* field number 0 */
    TBIO_XD_TOO_BIG = -6,        /* an event of 2 GiB or more */
    TBIO_XD_NOT_EVENT = -7,      /* fewer events at pos than n */
    TBIO_XD_ARGS = -8            /* NULL or inconsistent arguments */
};
/* Top-level fields of the message buf[start:end): returns how many, and
 * writes the first cap of them (number, wire type, where the tag starts, the
 * value's range: a varint's bytes, a length-delimited field's payload). */
TBIO_CODEC_API int64_t tbio_xd_fields(const uint8_t *buf, int64_t start, int64_t end, int64_t cap, int64_t *number,
                                int64_t *wire_type, int64_t *tag_at, int64_t *val_start, int64_t *val_end);
/* Number of XLine.events entries in a row from buf[pos] (tag byte 0x22),
 * none past end; *stop = where the run ends. */
TBIO_CODEC_API int64_t tbio_xd_count_events(const uint8_t *buf, int64_t pos, int64_t end, int64_t *stop);
/* Columns of the n events from buf[pos] (n from tbio_xd_count_events): the
 * payload's range in buf, metadata_id, offset_ps, duration_ps.  With nkeys >
 * 0, the integer value of each stat whose metadata id is keys[k] goes to
 * cols[key_col[k]][i] (ncols columns of n entries; entries of events without
 * such a stat are left as they are).  Returns n. */
TBIO_CODEC_API int64_t tbio_xd_events(const uint8_t *buf, int64_t pos, int64_t end, int64_t n, int64_t *ev_pos,
                                int32_t *ev_len, int64_t *metadata_id, int64_t *offset_ps, int64_t *duration_ps,
                                int64_t nkeys, const int64_t *keys, const int64_t *key_col, int64_t ncols,
                                int64_t *const *cols);
/* XPlane.event_metadata map entries, the payloads [starts[i], ends[i]) of
 * buf (size bytes): each entry's key and the ranges of its XEventMetadata's
 * name and display_name (0, 0 when absent; the last one when repeated).
 * Returns n. */
TBIO_CODEC_API int64_t tbio_xd_event_metadata(const uint8_t *buf, int64_t size, int64_t n, const int64_t *starts,
                                        const int64_t *ends, int64_t *key, int64_t *name_at, int64_t *name_end,
                                        int64_t *disp_at, int64_t *disp_end);

#endif
