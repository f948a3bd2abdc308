/* Widening and merging of time-series bins (timeseries.h): the rare paths. */
#include "timeseries.h"

#include <string.h>

void tbio_ts_rebin(tbio_tsbins *b, uint32_t lg) {
    if (lg <= b->lg) return;
    uint32_t k = lg - b->lg;
    if (k >= 64) k = 63;
    /* in place, ascending: new bin j takes old bins [j << k, (j + 1) << k),
     * and old bin j (j < j << k for j >= 1) has already moved out */
    for (uint32_t i = 1; i < TBIO_TS_BINS; i++) {
        uint32_t j = i >> k;
        tbio_tsbin *from = &b->bin[i], *to = &b->bin[j];
        if (j == i) continue;
        for (int m = 0; m < TBIO_TS_MODS; m++) {
            to->io[m].read += from->io[m].read;
            to->io[m].written += from->io[m].written;
        }
        to->calls += from->calls;
        to->ticks += from->ticks;
        memset(from, 0, sizeof *from);
    }
    b->lg = lg;
}

uint32_t tbio_ts_lg_for(const tbio_tsbins *b, uint64_t d) {
    uint32_t lg = b->lg;
    while (lg < 63 && (d >> lg) >= TBIO_TS_BINS) lg++;
    return lg;
}

void tbio_ts_merge(tbio_tsbins *dst, tbio_tsbins *src) {
    uint32_t lg = dst->lg > src->lg ? dst->lg : src->lg;
    tbio_ts_rebin(dst, lg);
    tbio_ts_rebin(src, lg);
    for (uint32_t i = 0; i < TBIO_TS_BINS; i++) {
        for (int m = 0; m < TBIO_TS_MODS; m++) {
            dst->bin[i].io[m].read += src->bin[i].io[m].read;
            dst->bin[i].io[m].written += src->bin[i].io[m].written;
        }
        dst->bin[i].calls += src->bin[i].calls;
        dst->bin[i].ticks += src->bin[i].ticks;
    }
}

uint32_t tbio_ts_base_lg(double ns_per_tick) {
    uint32_t lg = 0;
    while (lg < 40 && (double)((uint64_t)1 << lg) * ns_per_tick < 1e6) lg++;
    return lg;
}
