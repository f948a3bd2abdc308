/* The JAX profiler plugin (pjrt.c) walked the way jaxlib walks it (docs/jax.md): by byte
 * offsets read from jaxlib 0.10.2's machine code (and, for the three members of the 104-byte
 * table, upstream's header order), not through pjrt.c's own struct definitions, so a layout
 * change there fails here.  Both tables (80 and 104 bytes) are walked.  No Python in this
 * process: a table must still serve a whole session (create, start, stop, collect with a
 * NULL buffer, consume/serialize for the 104-byte one, destroy) and hand back an empty
 * space, and a NULL profiler (a failed create) must be harmless. */
#include "check.h"
#include "tbio.h"

#include <stdint.h>
#include <string.h>

typedef void *(*call_fn)(void *args);

static void *at(const void *base, size_t off) { return *(void *const *)((const char *)base + off); }

/* One session through the table at `api` (create, start, stop, collect with a NULL buffer,
 * destroy): no Python, so nothing to hand over. */
static void walk_table(const void *api, size_t want_size) {
    /* PJRT_Api: extension_start at 8; extension: type (int) at 8, next at 16, table at 24 */
    const void *ext = at(api, 8);
    CHECK(ext != NULL);
    if (!ext) return;
    CHECK_EQ_I64(*(const int *)((const char *)ext + 8), 1);
    CHECK(at(ext, 16) == NULL);
    const void *table = at(ext, 24);
    CHECK_EQ_I64(*(const size_t *)table, want_size);
    for (size_t off = 0x10; off < want_size; off += 8) CHECK(at(table, off) != NULL);
    call_fn create = (call_fn)at(table, 0x28), destroy = (call_fn)at(table, 0x30),
            start = (call_fn)at(table, 0x38), stop = (call_fn)at(table, 0x40),
            collect = (call_fn)at(table, 0x48);
    uint64_t sessions = tbio_jax_sessions();
    for (int round = 0; round < 3; round++) {
        /* create {size, options, options_size, profiler(out)}: jaxlib leaves size unset */
        struct { size_t size; const char *options; size_t options_size; void *profiler; } c;
        memset(&c, 0xab, sizeof c);
        c.options = "";
        c.options_size = 0;
        CHECK(create(&c) == NULL);
        CHECK(c.profiler != NULL && c.profiler != (void *)0xabababababababab);
        struct { size_t size; void *profiler; } p = {0, c.profiler};
        CHECK(start(&p) == NULL);
        CHECK(stop(&p) == NULL);
        /* collect {size, profiler, buffer, buffer_size}: once with a NULL buffer */
        struct { size_t size; void *profiler; uint8_t *buffer; size_t buffer_size; } d = {0, c.profiler, NULL, 99};
        CHECK(collect(&d) == NULL);
        CHECK(d.buffer == NULL && d.buffer_size == 0); /* no Python: nothing to hand over */
        if (want_size == 104) {
            /* consume {size, profiler, result(out)} at 0x50; serialize {size, profiler,
             * consume_result, bytes(out), size(out)} at 0x60; result destroy at 0x58 */
            struct { size_t size; void *profiler; void *result; } k = {0, c.profiler, NULL};
            CHECK(((call_fn)at(table, 0x50))(&k) == NULL);
            CHECK(k.result != NULL);
            struct { size_t size; void *profiler; void *result; const uint8_t *bytes; size_t n; } z;
            memset(&z, 0xab, sizeof z);
            z.profiler = c.profiler;
            z.result = k.result;
            CHECK(((call_fn)at(table, 0x60))(&z) == NULL);
            CHECK(z.bytes == NULL && z.n == 0);
            z.profiler = NULL; /* a caller that names only the result */
            CHECK(((call_fn)at(table, 0x60))(&z) == NULL);
            CHECK(z.bytes == NULL && z.n == 0);
            ((void (*)(void *))at(table, 0x58))(k.result); /* the result itself, or */
            ((void (*)(void *))at(table, 0x58))(&k);       /* an args struct holding it */
        }
        CHECK(destroy(&p) == NULL);
    }
    CHECK_EQ_I64(tbio_jax_sessions() - sessions, 3);
    /* a NULL profiler (create failed): every call returns no error and touches nothing */
    struct { size_t size; void *profiler; } none = {0, NULL};
    CHECK(start(&none) == NULL && stop(&none) == NULL && destroy(&none) == NULL);
    struct { size_t size; void *profiler; uint8_t *buffer; size_t buffer_size; } d = {0, NULL, NULL, 7};
    CHECK(collect(&d) == NULL && d.buffer == NULL && d.buffer_size == 0);
    /* error_message {size, priv, error, message(out), message_size(out)} */
    struct { size_t size; void *priv; const void *error; const char *message; size_t message_size; } m = {0};
    ((void (*)(void *))at(table, 0x18))(&m);
    CHECK(m.message != NULL && m.message_size == strlen(m.message));
}

int main(void) {
    /* the two tables implemented: 10 members (80 bytes) and 13 (104); no other size */
    CHECK(tbio_jax_api(0) == NULL);
    CHECK(tbio_jax_api(88) == NULL);
    CHECK(tbio_jax_api(112) == NULL);
    CHECK(strcmp(tbio_jax_capsule_name(), "pjrt_c_api") == 0);
    const void *api80 = tbio_jax_api(80), *api104 = tbio_jax_api(104);
    CHECK(api80 != NULL && api104 != NULL && api80 != api104);
    if (api80) walk_table(api80, 80);
    if (api104) walk_table(api104, 104);
    return CHECK_DONE();
}
