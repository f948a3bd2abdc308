/* A session's time series in fixed memory (as Darshan's HEATMAP module):
 * TBIO_TS_BINS bins of 2^lg clock ticks from the session's start; when a
 * call falls past the last bin, the bins widen (the width doubles, pairs of
 * bins merge, as often as needed), so any session length fits.
 *
 * Every thread keeps its own bins per session (tbio_tslot.ts, mmap'ed when
 * the thread first records into the session): only that thread writes them,
 * with plain stores, so a traced call adds four numbers to one cache line of
 * its own (no atomic, no lock, no allocation; a signal handler's call finds
 * the thread `in` and is not counted).  The slot keeps the bin of the
 * thread's last call and its tick range, so a call that falls in the same
 * bin (nearly all: a bin is >= 1 ms) costs one compare and the four adds.  Each thread widens its own bins when
 * one of its calls needs it; tbio_end, once no thread can still write them
 * (hot.h), merges every thread's bins into the session's at the widest
 * width any thread needed or the session's length needs.  Widths are powers
 * of two of one base, so merging is exact: a call counts in the bin of its
 * start tick at the final width, whatever thread and width it was added
 * with (no error from concurrent widening).
 *
 * Per bin: bytes read and written per module (exactly the bytes the
 * session's POSIX and STDIO file records count; they do not overlap, since a
 * libc stream's own read(2) never goes through a patched slot), kept apart as
 * Darshan's HEATMAP keeps one record per module; calls (trace rows, kept or
 * dropped: the bins do not depend on the trace cap) and the summed duration
 * of those calls in ticks.  The module is a constant at every call site, so
 * keeping them apart costs an index, no branch. */
#ifndef TBIO_TIMESERIES_H
#define TBIO_TIMESERIES_H

#include <stdint.h>
#include "hot.h"

#define TBIO_TS_BINS 256u

/* Hidden in the Python module; exported by the CMake library for the C tests. */
#ifndef TBIO_INTERNAL_API
#define TBIO_INTERNAL_API __attribute__((visibility("default")))
#endif

/* modules of the bins: as tbio_file_info.module */
enum { TBIO_TS_POSIX = 0, TBIO_TS_STDIO = 1, TBIO_TS_MODS = 2 };

typedef struct tbio_tsio {
    uint64_t read, written;
} tbio_tsio;

typedef struct tbio_tsbin {     /* 48 bytes */
    tbio_tsio io[TBIO_TS_MODS]; /* bytes by module */
    uint64_t calls, ticks;
} tbio_tsbin;

typedef struct tbio_tsbins {
    uint64_t origin;            /* the session's start tick */
    uint32_t lg;                /* a bin is 2^lg ticks wide */
    tbio_tsbin bin[TBIO_TS_BINS];
} tbio_tsbins;

/* Widen b (bins of 2^b->lg ticks) to bins of 2^lg ticks (lg >= b->lg): bin i
 * goes into bin i >> (lg - b->lg). */
TBIO_INTERNAL_API void tbio_ts_rebin(tbio_tsbins *b, uint32_t lg);
/* The smallest lg >= b->lg whose bins reach tick offset d (d >> lg < TBIO_TS_BINS). */
TBIO_INTERNAL_API uint32_t tbio_ts_lg_for(const tbio_tsbins *b, uint64_t d);
/* Add src into dst, both widened to the wider of the two first (src is changed). */
TBIO_INTERNAL_API void tbio_ts_merge(tbio_tsbins *dst, tbio_tsbins *src);
/* Base width: the smallest power of two ticks >= 1 ms. */
TBIO_INTERNAL_API uint32_t tbio_ts_base_lg(double ns_per_tick);

/* Count one call (began at t0, ended at t1) in bin x, its bytes under module
 * mod (TBIO_TS_POSIX or TBIO_TS_STDIO). */
static inline void tbio_tsbin_add(tbio_tsbin *x, int mod, uint64_t t0, uint64_t t1, int64_t rd, int64_t wr) {
    x->io[mod].read += (uint64_t)(rd > 0 ? rd : 0);
    x->io[mod].written += (uint64_t)(wr > 0 ? wr : 0);
    x->calls += 1;
    x->ticks += t1 > t0 ? t1 - t0 : 0;
}

/* The bin of tick t0 (widening the bins first when it lies past the last). */
static inline tbio_tsbin *tbio_ts_bin(tbio_tsbins *b, uint64_t t0) {
    uint64_t d = t0 > b->origin ? t0 - b->origin : 0;
    uint64_t i = d >> b->lg;
    if (UNLIKELY(i >= TBIO_TS_BINS)) {
        tbio_ts_rebin(b, tbio_ts_lg_for(b, d));
        i = d >> b->lg;
    }
    return &b->bin[i];
}

static inline void tbio_ts_add(tbio_tsbins *b, int mod, uint64_t t0, uint64_t t1, int64_t rd, int64_t wr) {
    tbio_tsbin_add(tbio_ts_bin(b, t0), mod, t0, t1, rd, wr);
}

#endif
