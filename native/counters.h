/* Darshan-style per-file counter records and the rules that update them.
 *
 * The enums and name tables are generated from counters.def.  The update
 * functions (counters.c) are pure: no locking, no clocks, no I/O.  Callers
 * hold the record's lock, pass times in seconds relative to the capture
 * start, and only call them for calls that succeeded (Darshan does not count
 * failed calls).
 */
#ifndef TBIO_COUNTERS_H
#define TBIO_COUNTERS_H

#include <stdint.h>

#define TBIO_C_POSIX(n) POSIX_##n,
#define TBIO_C_STDIO(n)
#define C(m, n) TBIO_C_##m(n)
#define F(m, n)
enum tbio_posix_counter {
#include "counters.def"
    POSIX_NUM_INDICES
};
#undef TBIO_C_POSIX
#undef TBIO_C_STDIO
#define TBIO_C_POSIX(n)
#define TBIO_C_STDIO(n) STDIO_##n,
enum tbio_stdio_counter {
#include "counters.def"
    STDIO_NUM_INDICES
};
#undef C
#undef F
#undef TBIO_C_POSIX
#undef TBIO_C_STDIO

#define TBIO_F_POSIX(n) POSIX_##n,
#define TBIO_F_STDIO(n)
#define C(m, n)
#define F(m, n) TBIO_F_##m(n)
enum tbio_posix_fcounter {
#include "counters.def"
    POSIX_F_NUM_INDICES
};
#undef TBIO_F_POSIX
#undef TBIO_F_STDIO
#define TBIO_F_POSIX(n)
#define TBIO_F_STDIO(n) STDIO_##n,
enum tbio_stdio_fcounter {
#include "counters.def"
    STDIO_F_NUM_INDICES
};
#undef C
#undef F
#undef TBIO_F_POSIX
#undef TBIO_F_STDIO

/* Darshan keeps at most this many distinct access sizes / strides per file. */
#define TBIO_COMMON_MAX 32
/* Darshan's default memory alignment (bytes) for POSIX_MEM_ALIGNMENT. */
#define TBIO_MEM_ALIGNMENT 8

typedef struct tbio_common_vals {
    int n;                           /* distinct values tracked so far (<= 32) */
    struct {
        int64_t val, cnt;            /* side by side: one cache line for a repeated value */
    } e[TBIO_COMMON_MAX];            /* in first-seen order */
} tbio_common_vals;

enum { TBIO_IO_NONE = 0, TBIO_IO_READ = 1, TBIO_IO_WRITE = 2 };

/* Field order is for the cache: what every read updates (offset .. the first
 * access-size entry) comes first, so that in the shim's 64-byte aligned record
 * it shares one line with the record's lock; the shim checks this. */
typedef struct tbio_posix_rec {
    /* runtime state, Darshan's rec_ref: not reported */
    int64_t offset;             /* tracked file offset for read/write without explicit offset */
    int64_t last_byte_read;
    double last_read_end;
    int last_io;                /* TBIO_IO_* */
    tbio_common_vals access;
    tbio_common_vals stride;
    int64_t last_byte_written;
    double last_write_end, last_meta_end;
    int64_t counters[POSIX_NUM_INDICES];
    double fcounters[POSIX_F_NUM_INDICES];
} tbio_posix_rec;

typedef struct tbio_stdio_rec {
    int64_t counters[STDIO_NUM_INDICES];
    double fcounters[STDIO_F_NUM_INDICES];
    int64_t offset;
    double last_read_end, last_write_end, last_meta_end;
} tbio_stdio_rec;

/* Name tables, index = enum value; strings are the Darshan names. */
extern const char *const tbio_posix_counter_names[POSIX_NUM_INDICES];
extern const char *const tbio_posix_fcounter_names[POSIX_F_NUM_INDICES];
extern const char *const tbio_stdio_counter_names[STDIO_NUM_INDICES];
extern const char *const tbio_stdio_fcounter_names[STDIO_F_NUM_INDICES];

/* ---- POSIX ---- */
/* file_alignment: the file system block size (0 = unknown: FILE_NOT_ALIGNED never counts). */
void tbio_posix_rec_init(tbio_posix_rec *r, int64_t file_alignment);
/* open/creat/openat (mode = the open's mode argument, as Darshan stores it). Resets offset state. */
void tbio_posix_on_open(tbio_posix_rec *r, int64_t mode, double t0, double t1);
/* dup/dup2/dup3/fcntl(F_DUPFD*): counted as an open and a dup. */
void tbio_posix_on_dup(tbio_posix_rec *r, double t0, double t1);
/* offset < 0: use (and advance) the tracked offset; else explicit (pread). nbytes >= 0 returned. */
void tbio_posix_on_read(tbio_posix_rec *r, int64_t offset, int64_t nbytes, int mem_aligned,
                        double t0, double t1);
void tbio_posix_on_write(tbio_posix_rec *r, int64_t offset, int64_t nbytes, int mem_aligned,
                         double t0, double t1);
void tbio_posix_on_seek(tbio_posix_rec *r, int64_t new_offset, double t0, double t1);
void tbio_posix_on_stat(tbio_posix_rec *r, double t0, double t1);
void tbio_posix_on_mmap(tbio_posix_rec *r, double t0, double t1);
/* datasync: 0 = fsync (FSYNCS), 1 = fdatasync (FDSYNCS); time goes to F_WRITE_TIME. */
void tbio_posix_on_sync(tbio_posix_rec *r, int datasync, double t0, double t1);
void tbio_posix_on_close(tbio_posix_rec *r, double t0, double t1);
/* rename(src, dst): src gets RENAME_SOURCES, dst RENAME_TARGETS and RENAMED_FROM = src_id. */
void tbio_posix_on_rename(tbio_posix_rec *src, tbio_posix_rec *dst, int64_t src_id,
                          double t0, double t1);

/* ---- STDIO ---- */
void tbio_stdio_rec_init(tbio_stdio_rec *r);
/* fopen/fopen64/freopen (fdopen = 0) or fdopen (fdopen = 1). */
void tbio_stdio_on_open(tbio_stdio_rec *r, int fdopen, double t0, double t1);
/* bytes transferred (0 allowed, e.g. fread at EOF, which Darshan still counts as a read). */
void tbio_stdio_on_read(tbio_stdio_rec *r, int64_t nbytes, double t0, double t1);
void tbio_stdio_on_write(tbio_stdio_rec *r, int64_t nbytes, double t0, double t1);
/* fseek/fseeko/fsetpos/rewind: new_offset is the stream position after the call. */
void tbio_stdio_on_seek(tbio_stdio_rec *r, int64_t new_offset, double t0, double t1);
void tbio_stdio_on_flush(tbio_stdio_rec *r, double t0, double t1);
void tbio_stdio_on_close(tbio_stdio_rec *r, double t0, double t1);

/* Index of the Darshan size bin (0..9) for an access of n bytes. */
int tbio_size_bin(int64_t n);

#endif
