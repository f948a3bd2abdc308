/* The JAX profiler plugin (pjrt.c) walked the way jaxlib 0.10.2 walks it (docs/jax.md): by
 * byte offsets read from its machine code, not through pjrt.c's own struct definitions, so a
 * layout change there fails here.  No Python in this process: the table must still serve a
 * whole session (create, start, stop, collect with a NULL buffer, destroy) and hand back an
 * empty space, and a NULL profiler (a failed create) must be harmless. */
#include "check.h"
#include "tbio.h"

#include <stdint.h>
#include <string.h>

typedef void *(*call_fn)(void *args);

static void *at(const void *base, size_t off) { return *(void *const *)((const char *)base + off); }

int main(void) {
    CHECK(tbio_jax_api(104) == NULL); /* only the 10-member table is implemented */
    CHECK(tbio_jax_api(0) == NULL);
    const void *api = tbio_jax_api(80);
    CHECK(api != NULL);
    CHECK(strcmp(tbio_jax_capsule_name(), "pjrt_c_api") == 0);
    if (!api) return CHECK_DONE();
    /* PJRT_Api: extension_start at 8; extension: type (int) at 8, next at 16, table at 24 */
    const void *ext = at(api, 8);
    CHECK(ext != NULL);
    CHECK_EQ_I64(*(const int *)((const char *)ext + 8), 1);
    CHECK(at(ext, 16) == NULL);
    const void *table = at(ext, 24);
    CHECK_EQ_I64(*(const size_t *)table, 80);
    for (size_t off = 0x10; off <= 0x48; off += 8) CHECK(at(table, off) != NULL);
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
    return CHECK_DONE();
}
