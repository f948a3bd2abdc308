/* Public API of the native shim: what tb_iotrace._native (cffi) and the C
 * tests call.  This file is also the cffi cdef: build_ffi.py strips the
 * preprocessor lines and the TBIO_API markers, so keep declarations plain.
 * The XPlane codecs are a module of their own (native/codec/codec.h).
 */
#ifndef TBIO_H
#define TBIO_H
#include <stdint.h>
#include <stddef.h>
#define TBIO_API __attribute__((visibility("default")))

/* One traced call.  Times are CLOCK_REALTIME nanoseconds once copied out by
 * tbio_session_copy_events (in the live buffers they are clock ticks). */
typedef struct tbio_event {
    uint64_t start_ns;
    uint64_t end_ns;
    int64_t offset;      /* explicit or tracked file offset, -1 when none */
    int64_t requested;   /* bytes asked for, -1 when not a data call */
    int64_t returned;    /* bytes (or the call's result); -1 on failure */
    uint32_t file;       /* file id (tbio_session_file), 0xffffffff = none */
    int32_t fd;
    int32_t err;         /* errno of a failed call, else 0 */
    uint16_t op;         /* index into tbio_op_name() */
    uint16_t thread;     /* index into tbio_session_thread() */
} tbio_event;

typedef struct tbio_file_info {
    uint32_t id;
    int module;                 /* 0 = POSIX, 1 = STDIO */
    const char *path;           /* bytes, not NUL-terminated necessarily UTF-8 */
    size_t path_len;
    uint64_t record_id;         /* Darshan's record id of the path (tbio_record_id) */
    int has_record;             /* counters below valid (file touched in the session) */
    const int64_t *counters;
    const double *fcounters;
} tbio_file_info;

/* What a session saw but could not track: files past the file-table bound
 * (their opens, then every call and byte on them) and calls a signal
 * handler made while its thread was inside the shim (passed through). */
typedef struct tbio_untracked_info {
    uint64_t files;             /* opens of files that did not fit (successful ones; a file opened
                                 * twice counts 2), and first uses of descriptors to such files
                                 * opened before the capture or by calls not hooked; a stat or
                                 * rename of one is a call, not an open */
    uint64_t calls;             /* calls on such files */
    uint64_t bytes_read;
    uint64_t bytes_written;
    uint64_t reentrant_calls;   /* calls from a signal handler inside the shim: not traced */
    uint32_t nexamples;         /* paths kept as examples (tbio_session_untracked_path) */
} tbio_untracked_info;

typedef struct tbio_thread_info {
    int64_t tid;                /* OS thread id */
    uint64_t pthread_self;      /* pthread_t value (TF hashes it for line ids) */
    char comm[16];              /* thread name, NUL-terminated */
    uint64_t nevents;
    uint64_t dropped;
} tbio_thread_info;

/* A session's time series (native/timeseries.h): nbins bins of bin_ns from
 * start_ns, covering the session from its start to its end, in fixed memory
 * (at most 256 bins: they widen as the session grows). */
typedef struct tbio_timeseries_info {
    uint64_t start_ns;          /* CLOCK_REALTIME ns of the session's start */
    double bin_ns;              /* width of a bin */
    uint32_t nbins;
} tbio_timeseries_info;

typedef struct tbio_session tbio_session;

/* Patch every loaded object (and later dlopen'ed ones); idempotent. 0 or -1. */
TBIO_API int tbio_enable(void);
/* Restore every patched slot; idempotent; stops an active session first. */
TBIO_API int tbio_disable(void);
TBIO_API int tbio_is_enabled(void);
TBIO_API const char *tbio_last_error(void);

/* A job's own TCP traffic that is not storage (torch.distributed's store and
 * gloo's pairs, TensorFlow's workers): local, never an endpoint.
 * tbio_local_begin/end: connections any thread makes while a window is open
 * (nested windows count) are local.  tbio_local_peer: connections to this
 * numeric address (IPv4 or IPv6 text) and port are local (a fixed table of
 * 64; -1 when full or not numeric).  tbio_fd_set_local: the socket fd is
 * local from now on (one made before the shim was enabled). */
TBIO_API void tbio_local_begin(void);
TBIO_API void tbio_local_end(void);
TBIO_API int tbio_local_peer(const char *numeric_host, unsigned port);
TBIO_API int tbio_fd_set_local(int fd);
TBIO_API int tbio_fd_is_local(int fd);

/* Newline-separated path prefixes.  NULL keeps the current list.  A path is
 * traced unless it matches an exclude prefix and no longer include prefix. */
TBIO_API int tbio_set_filters(const char *include_prefixes, const char *exclude_prefixes);
TBIO_API const char *tbio_get_excludes(void);
/* Most distinct files (path, module) the recordings running at once can
 * track; a file past it is counted, not tracked (tbio_session_untracked).
 * Applies from the next time recording starts with none running.  Default
 * 4194304, at most 16777216. */
TBIO_API void tbio_set_max_files(uint64_t n);
TBIO_API uint64_t tbio_get_max_files(void);
/* Maximum trace events kept per session (counters stay exact beyond it). */
TBIO_API void tbio_set_trace_cap(uint64_t max_events);
TBIO_API uint64_t tbio_get_trace_cap(void);
/* Darshan's record id of a path (lookup8 hash, level 0): what Darshan stores for the file. */
TBIO_API uint64_t tbio_record_id(const char *path, size_t len);

/* Start a recording session (independent of any other running one: each has
 * its own exact counters and trace).  NULL (and tbio_last_error) when
 * TBIO_MAX_SESSIONS (4) already record. */
TBIO_API tbio_session *tbio_begin(void);
/* Stop recording into s; returns s, now owned by the caller (free it with
 * tbio_session_free), or NULL if s is not recording. */
TBIO_API tbio_session *tbio_end(tbio_session *s);
/* Number of sessions recording now. */
TBIO_API int tbio_active(void);
TBIO_API void tbio_session_free(tbio_session *s);

TBIO_API uint64_t tbio_session_start_ns(const tbio_session *s);
TBIO_API uint64_t tbio_session_end_ns(const tbio_session *s);
/* The files the session touched (a record) or named in its trace: index i
 * in 0 .. nfiles-1; out->id is the id its events carry. */
TBIO_API uint32_t tbio_session_nfiles(const tbio_session *s);
TBIO_API int tbio_session_file(const tbio_session *s, uint32_t i, tbio_file_info *out);
/* The file of an event's id (0 or -1). */
TBIO_API int tbio_session_file_by_id(const tbio_session *s, uint32_t id, tbio_file_info *out);
/* The session's files of one module in bulk, for columnar readers: those with
 * a record (has_record 1, counters valid) or only named by the trace (0), in
 * tbio_session_file order.  tbio_session_files_size gives their number and the
 * bytes of their paths; tbio_session_files_used marks (1) each counter that is
 * not 0 in some file with a record (used: tbio_counter_count(module, 0)
 * bytes, fused: tbio_counter_count(module, 1), either may be NULL).
 * tbio_session_copy_files fills, for up to max rows, each array that is not
 * NULL: id, record_id, path_end (end of row i's path in path_data, which holds
 * the paths back to back, path_cap bytes at most), and the counters listed in
 * cols (ncols indexes into the module's counters) into the column-major
 * matrix counters: counter cols[k] of row i at counters[cols[k] * max + i]
 * (likewise fcols, fcounters); other columns are not written.  Returns the
 * rows copied. */
TBIO_API int tbio_session_files_size(const tbio_session *s, int module, int has_record, uint64_t *nrows,
                                     uint64_t *path_bytes);
TBIO_API int tbio_session_files_used(const tbio_session *s, int module, uint8_t *used, uint8_t *fused);
TBIO_API uint64_t tbio_session_copy_files(const tbio_session *s, int module, int has_record, uint64_t max,
                                          uint32_t *id, uint64_t *record_id, const int32_t *cols, uint32_t ncols,
                                          int64_t *counters, const int32_t *fcols, uint32_t nfcols,
                                          double *fcounters, uint64_t *path_end, char *path_data,
                                          uint64_t path_cap);
TBIO_API int tbio_session_untracked(const tbio_session *s, tbio_untracked_info *out);
/* Example path i of the untracked files (bytes, *len of them; at most 512), NULL past the end. */
TBIO_API const char *tbio_session_untracked_path(const tbio_session *s, uint32_t i, size_t *len);
TBIO_API uint32_t tbio_session_nthreads(const tbio_session *s);
TBIO_API int tbio_session_thread(const tbio_session *s, uint32_t i, tbio_thread_info *out);
TBIO_API uint64_t tbio_session_nevents(const tbio_session *s);
TBIO_API uint64_t tbio_session_dropped(const tbio_session *s);
/* The time series of an ended session: info, then up to max bins into each
 * array that is not NULL.  Per bin: bytes read and written as the files'
 * records count them (POSIX + STDIO), traced calls (trace rows kept or
 * dropped) and their summed duration; a call counts in the bin it began in. */
TBIO_API int tbio_session_timeseries(const tbio_session *s, tbio_timeseries_info *info, uint64_t *bytes_read,
                                     uint64_t *bytes_written, uint64_t *calls, double *io_time_s, uint32_t max);
/* The same bins' bytes of one module (0 = POSIX, 1 = STDIO, as
 * tbio_file_info.module): the two modules' bins sum to the totals above. */
TBIO_API int tbio_session_timeseries_module(const tbio_session *s, int module, uint64_t *bytes_read,
                                            uint64_t *bytes_written, uint32_t max);
/* Copy up to max events (thread by thread, each in call order); returns the number copied. */
TBIO_API uint64_t tbio_session_copy_events(const tbio_session *s, tbio_event *out, uint64_t max);

/* The op names (hooks.def order) and counter names (counters.def order). */
TBIO_API int tbio_op_count(void);
TBIO_API const char *tbio_op_name(int op);
TBIO_API int tbio_counter_count(int module, int is_float);
TBIO_API const char *tbio_counter_name(int module, int is_float, int i);

/* Patched relocation slots, for tests and diagnostics. */
TBIO_API uint64_t tbio_patch_count(void);
TBIO_API int tbio_patch_get(uint64_t i, uintptr_t *slot, uintptr_t *original, uintptr_t *wrapper);
TBIO_API uint64_t tbio_patched_objects(void);
/* Snapshots of /proc/self/maps the patcher has read (only a walk that writes a slot reads one). */
TBIO_API uint64_t tbio_maps_reads(void);
/* Address of the wrapper installed for a hooked symbol name, 0 if none. */
TBIO_API uintptr_t tbio_wrapper_address(const char *name);
TBIO_API uintptr_t tbio_real_address(const char *name);
/* Threads the shim keeps state for (those that made a recorded call and
 * have not been found exited by a tbio_end since), for tests and diagnostics. */
TBIO_API uint32_t tbio_threads_held(void);
/* Bytes held by the trace buffers of the active session (0 if none). */
TBIO_API uint64_t tbio_trace_bytes(void);

/* TensorFlow pluggable profiler glue (tfprof.c). */
TBIO_API int tbio_tf_registered(void);
TBIO_API void tbio_tf_set_python_ready(int ready);

/* JAX profiler glue (pjrt.c): the PJRT_Api to wrap in a capsule named
 * tbio_jax_capsule_name() for jaxlib's register_plugin_profiler, or NULL when
 * jaxlib expects a profiler table of another size than this build's. */
TBIO_API void *tbio_jax_api(uint64_t table_size);
TBIO_API const char *tbio_jax_capsule_name(void);
TBIO_API void tbio_jax_set_python_ready(int ready);
TBIO_API void tbio_jax_set_registered(void);
TBIO_API int tbio_jax_registered(void);
TBIO_API uint64_t tbio_jax_sessions(void);

#endif
