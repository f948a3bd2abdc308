/* JAX profiler glue: a profiler-only PJRT "plugin".
 *
 * jaxlib builds each profiler session from the factories in its own private
 * copy of the profiler library; TensorFlow's pluggable profiler never reaches
 * it.  The one runtime door is jaxlib's register_plugin_profiler(capsule):
 * it walks the extension chain of the PJRT_Api in the capsule, and for a
 * profiler extension registers a factory that drives the table below at
 * every session (start_trace/stop_trace, trace(), profiler-server captures).
 * Nothing else in the PJRT_Api is read, so ours is zero but for its head.
 *
 * The layouts are restated from what jaxlib does with them (read from its
 * machine code, 0.10.2; docs/jax.md) and from the public C API headers:
 * every struct starts with struct_size; jaxlib leaves the args' struct_size
 * unset, so none is checked here.  jaxlib up to 0.10 compares the table's
 * struct_size with its own exactly (80) and crashes the capture on a mismatch;
 * 0.11 takes a table of at least a size.  Python reads which check the loaded
 * jaxlib makes (tb_iotrace/recording/jaxlib_check.py) and asks for a table it
 * passes; tbio_jax_api() serves the two sizes implemented here, 80 bytes (10
 * members) and 104 (13: upstream's consume, consume_result_destroy and
 * serialize added), and refuses any other.
 *
 * As in tfprof.c, the work is done by Python callbacks (cffi extern
 * "Python+C", weak here so the standalone CMake library links without them). */
#include "tbio.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* --- the PJRT side: just enough of PJRT_Api to carry one extension */
enum { PJRT_EXTENSION_PROFILER = 1 };

typedef struct pjrt_ext_head {
    size_t struct_size;
    int type;                       /* an enum in the C API: int-sized */
    struct pjrt_ext_head *next;
} pjrt_ext_head;

typedef struct profiler_table profiler_table;

typedef struct pjrt_profiler_ext {
    pjrt_ext_head head;
    const profiler_table *table;
    int64_t traceme_context_id;     /* newer headers; never read by the registration */
} pjrt_profiler_ext;

typedef struct pjrt_api_head {
    size_t struct_size;
    pjrt_ext_head *extension_start;
    /* The rest of a PJRT_Api (version, function pointers) is never touched on
     * the registration path; zeros keep any stray read harmless. */
    uint8_t zeros[240];
} pjrt_api_head;

/* --- the profiler table and its argument structs */
typedef struct profiler_error profiler_error;
typedef struct jax_profiler jax_profiler;

typedef struct {
    size_t struct_size;
    void *priv;
    profiler_error *error;
} error_destroy_args;

typedef struct {
    size_t struct_size;
    void *priv;
    const profiler_error *error;
    const char *message;            /* out */
    size_t message_size;            /* out */
} error_message_args;

typedef struct {
    size_t struct_size;
    void *priv;
    const profiler_error *error;
    int code;                       /* out */
} error_code_args;

typedef struct {
    size_t struct_size;
    const char *options;            /* serialized tensorflow.ProfileOptions (unused) */
    size_t options_size;
    jax_profiler *profiler;         /* out */
} create_args;

typedef struct {
    size_t struct_size;
    jax_profiler *profiler;
} profiler_args;                    /* destroy, start, stop */

typedef struct {
    size_t struct_size;
    jax_profiler *profiler;
    uint8_t *buffer;                /* in: NULL (jaxlib) or caller memory; out: ours */
    size_t buffer_size_in_bytes;
} collect_args;

/* The three members upstream added (a 104-byte table): consume hands back an
 * opaque result that serialize turns into XSpace bytes, and
 * consume_result_destroy frees.  Here the result is the session itself (its
 * bytes live until destroy), so serialize finds the session whichever of its
 * two pointer fields it reads, and destroying a result frees nothing, whether
 * the caller passes the result or an args struct holding it. */
typedef struct {
    size_t struct_size;
    jax_profiler *profiler;
    void *result;                   /* out */
} consume_args;

typedef struct {
    size_t struct_size;
    jax_profiler *profiler;
    void *consume_result;
    const uint8_t *serialized_bytes; /* out: ours, until destroy */
    size_t serialized_size;          /* out */
} serialize_args;

struct profiler_table {
    size_t struct_size;
    void *priv;
    void (*error_destroy)(error_destroy_args *);
    void (*error_message)(error_message_args *);
    profiler_error *(*error_get_code)(error_code_args *);
    profiler_error *(*create)(create_args *);
    profiler_error *(*destroy)(profiler_args *);
    profiler_error *(*start)(profiler_args *);
    profiler_error *(*stop)(profiler_args *);
    profiler_error *(*collect_data)(collect_args *);
    /* 104-byte tables only (struct_size says which) */
    profiler_error *(*consume)(consume_args *);
    void (*consume_result_destroy)(void *);
    profiler_error *(*serialize)(serialize_args *);
};
/* 10 members are 80 bytes on LP64: the size jaxlib 0.4.19-0.10.x checks for exactly;
 * with the three newer ones, 104. */
enum { TABLE_SIZE_10 = offsetof(profiler_table, consume), TABLE_SIZE_13 = sizeof(profiler_table) };
_Static_assert(TABLE_SIZE_10 == 80, "profiler table layout");
_Static_assert(TABLE_SIZE_13 == 104, "profiler table layout");
_Static_assert(sizeof(serialize_args) == 40, "serialize args layout");
_Static_assert(sizeof(collect_args) == 32, "collect args layout");
_Static_assert(sizeof(pjrt_profiler_ext) == 40, "profiler extension layout");

/* One per session; owns the serialized XSpace handed to jaxlib. */
struct jax_profiler {
    uint8_t *buf;
    size_t len;
};

/* Python side (tb_iotrace/recording/jax.py); weak so the C-only build links. */
__attribute__((weak, visibility("hidden"))) int tbio_py_jax_start(void);
__attribute__((weak, visibility("hidden"))) int tbio_py_jax_stop(void);
__attribute__((weak, visibility("hidden"))) int64_t tbio_py_jax_collect(uint8_t *buffer, size_t size);

static _Atomic int g_py_ready;
static _Atomic int g_registered;
static _Atomic uint64_t g_sessions;     /* sessions created, for tests */

TBIO_API void tbio_jax_set_python_ready(int ready) { atomic_store(&g_py_ready, ready); }
TBIO_API void tbio_jax_set_registered(void) { atomic_store(&g_registered, 1); }
TBIO_API int tbio_jax_registered(void) { return atomic_load(&g_registered); }
TBIO_API uint64_t tbio_jax_sessions(void) { return atomic_load(&g_sessions); }

static int python_ready(void) {
    return atomic_load(&g_py_ready) && tbio_py_jax_start && tbio_py_jax_stop && tbio_py_jax_collect;
}

/* No call below ever returns an error: a failure to record I/O must not fail
 * the user's capture (the Python side logs why, once).  The error functions
 * exist because the table must be complete. */
static void err_destroy(error_destroy_args *a) { (void)a; }

static void err_message(error_message_args *a) {
    static const char msg[] = "tb_iotrace I/O profiler error";
    a->message = msg;
    a->message_size = sizeof msg - 1;
}

static profiler_error *err_code(error_code_args *a) {
    a->code = 13; /* internal */
    return NULL;
}

static profiler_error *p_create(create_args *a) {
    a->profiler = calloc(1, sizeof(jax_profiler)); /* NULL is handled by every call below */
    atomic_fetch_add(&g_sessions, 1);
    return NULL;
}

static profiler_error *p_destroy(profiler_args *a) {
    if (a->profiler) {
        free(a->profiler->buf);
        free(a->profiler);
        a->profiler = NULL;
    }
    return NULL;
}

static profiler_error *p_start(profiler_args *a) {
    if (a->profiler && python_ready()) tbio_py_jax_start();
    return NULL;
}

static profiler_error *p_stop(profiler_args *a) {
    if (a->profiler && python_ready()) tbio_py_jax_stop();
    return NULL;
}

/* Fill p->buf with the window's XSpace, once per session. */
static void fetch(jax_profiler *p) {
    if (p->buf || !python_ready()) return;
    int64_t n = tbio_py_jax_collect(NULL, 0);
    if (n <= 0) return;
    uint8_t *buf = malloc((size_t)n);
    if (!buf) return;
    int64_t got = tbio_py_jax_collect(buf, (size_t)n);
    if (got != n) {
        free(buf);
        return;
    }
    p->buf = buf;
    p->len = (size_t)n;
}

static profiler_error *p_collect(collect_args *a) {
    jax_profiler *p = a->profiler;
    if (!p) {
        if (!a->buffer) a->buffer_size_in_bytes = 0;
        return NULL;
    }
    fetch(p);
    if (!a->buffer) {
        /* jaxlib calls once with NULL and parses what we point it at; the
         * bytes stay ours until destroy. */
        a->buffer = p->buf;
        a->buffer_size_in_bytes = p->buf ? p->len : 0;
    } else if (p->buf && a->buffer_size_in_bytes >= p->len) {
        /* the two-call protocol the header describes: size first, then fill */
        memcpy(a->buffer, p->buf, p->len);
        a->buffer_size_in_bytes = p->len;
    } else {
        a->buffer_size_in_bytes = p->buf ? p->len : 0;
    }
    return NULL;
}

static profiler_error *p_consume(consume_args *a) {
    if (a->profiler) fetch(a->profiler);
    a->result = a->profiler;
    return NULL;
}

static void p_consume_result_destroy(void *arg) { (void)arg; /* the session owns the bytes */ }

static profiler_error *p_serialize(serialize_args *a) {
    jax_profiler *p = a->profiler ? a->profiler : (jax_profiler *)a->consume_result;
    if (p) fetch(p);
    a->serialized_bytes = p ? p->buf : NULL;
    a->serialized_size = p && p->buf ? p->len : 0;
    return NULL;
}

#define TABLE_FUNCTIONS                                                                 \
    .priv = NULL, .error_destroy = err_destroy, .error_message = err_message,          \
    .error_get_code = err_code, .create = p_create, .destroy = p_destroy, .start = p_start, \
    .stop = p_stop, .collect_data = p_collect

/* The 80-byte table: its struct_size says the three last members are not there (they are
 * NULL all the same). */
static profiler_table g_table10 = {.struct_size = TABLE_SIZE_10, TABLE_FUNCTIONS};

static profiler_table g_table13 = {
    .struct_size = TABLE_SIZE_13, TABLE_FUNCTIONS,
    .consume = p_consume,
    .consume_result_destroy = p_consume_result_destroy,
    .serialize = p_serialize,
};

#define EXTENSION(tbl)                                                                        \
    {.head = {.struct_size = sizeof(pjrt_profiler_ext), .type = PJRT_EXTENSION_PROFILER, .next = NULL}, \
     .table = &(tbl), .traceme_context_id = 0}

static pjrt_profiler_ext g_ext10 = EXTENSION(g_table10);
static pjrt_profiler_ext g_ext13 = EXTENSION(g_table13);

static pjrt_api_head g_api10 = {.struct_size = offsetof(pjrt_api_head, zeros), .extension_start = &g_ext10.head};
static pjrt_api_head g_api13 = {.struct_size = offsetof(pjrt_api_head, zeros), .extension_start = &g_ext13.head};

static const char g_capsule_name[] = "pjrt_c_api";

TBIO_API const char *tbio_jax_capsule_name(void) { return g_capsule_name; }

TBIO_API void *tbio_jax_api(uint64_t table_size) {
    if (table_size == TABLE_SIZE_10) return &g_api10;
    if (table_size == TABLE_SIZE_13) return &g_api13;
    return NULL;
}
