/* TensorFlow pluggable profiler (tensorflow/c/experimental/pluggable_profiler).
 *
 * Exporting TF_InitProfiler makes TensorFlow itself ask us for planes at
 * every capture, local or remote (profiler server), so no Python wrapper
 * around start/stop is needed.  The work is done by Python callbacks
 * (cffi extern "Python+C", declared weak here so the standalone CMake
 * library links without them); this file only adapts the C ABI.
 *
 * The structs below restate the layout of TF's public header (version
 * 0.0.1): struct_size first, then ext, then the members. */
#include "tbio.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

typedef struct TF_Status TF_Status;

typedef struct TP_Profiler {
    size_t struct_size;
    void *ext;
    const char *device_type;
} TP_Profiler;

typedef struct TP_ProfilerFns {
    size_t struct_size;
    void *ext;
    void (*start)(const TP_Profiler *profiler, TF_Status *status);
    void (*stop)(const TP_Profiler *profiler, TF_Status *status);
    void (*collect_data_xspace)(const TP_Profiler *profiler, uint8_t *buffer, size_t *size_in_bytes,
                                TF_Status *status);
} TP_ProfilerFns;

typedef struct TF_ProfilerRegistrationParams {
    size_t struct_size;
    void *ext;
    int32_t major_version;
    int32_t minor_version;
    int32_t patch_version;
    TP_Profiler *profiler;
    TP_ProfilerFns *profiler_fns;
    void (*destroy_profiler)(TP_Profiler *profiler);
    void (*destroy_profiler_fns)(TP_ProfilerFns *profiler_fns);
} TF_ProfilerRegistrationParams;

#define END_OF(type, member) (offsetof(type, member) + sizeof(((type *)0)->member))

/* Python side (tb_iotrace/recording/tensorflow.py); weak so the C-only build links. */
__attribute__((weak, visibility("hidden"))) int tbio_py_prof_start(void);
__attribute__((weak, visibility("hidden"))) int tbio_py_prof_stop(void);
__attribute__((weak, visibility("hidden"))) int64_t tbio_py_prof_collect(uint8_t *buffer, size_t size);

static _Atomic int g_registered;
static _Atomic int g_py_ready;

TBIO_API int tbio_tf_registered(void) { return atomic_load(&g_registered); }
TBIO_API void tbio_tf_set_python_ready(int ready) { atomic_store(&g_py_ready, ready); }

enum { TF_INTERNAL = 13 };

static void set_status(TF_Status *status, const char *msg) {
    /* TF_SetStatus lives in TensorFlow's own library, already loaded when TF calls us */
    void (*set)(TF_Status *, int, const char *) =
        (void (*)(TF_Status *, int, const char *))dlsym(RTLD_DEFAULT, "TF_SetStatus");
    if (set && status) set(status, TF_INTERNAL, msg);
}

static int python_ready(void) {
    return atomic_load(&g_py_ready) && tbio_py_prof_start && tbio_py_prof_stop && tbio_py_prof_collect;
}

static void prof_start(const TP_Profiler *p, TF_Status *status) {
    (void)p;
    (void)status;
    /* A failure to start must never fail the user's capture: the Python side
     * logs why and the capture goes on without I/O. */
    if (python_ready()) tbio_py_prof_start();
}

static void prof_stop(const TP_Profiler *p, TF_Status *status) {
    (void)p;
    (void)status;
    if (python_ready()) tbio_py_prof_stop();
}

static void prof_collect(const TP_Profiler *p, uint8_t *buffer, size_t *size, TF_Status *status) {
    (void)p;
    if (!size) return;
    if (!python_ready()) {
        *size = 0;
        return;
    }
    int64_t n = tbio_py_prof_collect(buffer, buffer ? *size : 0);
    if (n < 0) {
        *size = 0;
        if (buffer) set_status(status, "tb_iotrace: could not serialize the I/O plane");
        return;
    }
    *size = (size_t)n;
}

static void destroy_profiler(TP_Profiler *p) { (void)p; }
static void destroy_fns(TP_ProfilerFns *f) { (void)f; }

TBIO_API void TF_InitProfiler(TF_ProfilerRegistrationParams *params, TF_Status *status) {
    (void)status;
    params->struct_size = END_OF(TF_ProfilerRegistrationParams, destroy_profiler_fns);
    params->major_version = 0;
    params->minor_version = 0;
    params->patch_version = 1;
    params->profiler->struct_size = END_OF(TP_Profiler, device_type);
    params->profiler->device_type = "IOTRACE";
    params->profiler_fns->struct_size = END_OF(TP_ProfilerFns, collect_data_xspace);
    params->profiler_fns->start = prof_start;
    params->profiler_fns->stop = prof_stop;
    params->profiler_fns->collect_data_xspace = prof_collect;
    params->destroy_profiler = destroy_profiler;
    params->destroy_profiler_fns = destroy_fns;
    atomic_store(&g_registered, 1);
}
