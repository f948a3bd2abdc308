/* enable/disable and the name tables: the small public surface. */
#include "shim.h"

#include <string.h>

_Atomic int tbio_g_enabled;
static pthread_mutex_t g_api_mu = PTHREAD_MUTEX_INITIALIZER;

/* Every lock the shim takes is held across fork() (lock order: api, patch,
 * session, registry), so a child never inherits one owned by a thread that
 * does not exist there.  The handlers are registered when the library is
 * loaded, before any of those locks can be taken: registered by the first
 * API call instead, a fork while that call held its lock but had not yet
 * registered (enable() calibrates the clock first, 10 ms) left the child
 * that lock, held forever (native/tests/test_fork.c). */
static void atfork_prepare(void) {
    pthread_mutex_lock(&g_api_mu);
    tbio_patch_atfork_prepare();
    tbio_session_atfork_prepare();
    tbio_registry_atfork_prepare();
}
static void atfork_parent(void) {
    tbio_registry_atfork_parent();
    tbio_session_atfork_parent();
    tbio_patch_atfork_parent();
    pthread_mutex_unlock(&g_api_mu);
}
static void atfork_child(void) {
    tbio_registry_atfork_child();
    tbio_session_atfork_child();
    tbio_patch_atfork_child();
    pthread_mutex_init(&g_api_mu, NULL);
}

__attribute__((constructor)) static void atfork_register(void) {
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

int tbio_enable(void) {
    pthread_mutex_lock(&g_api_mu);
    if (atomic_load(&tbio_g_enabled)) {
        pthread_mutex_unlock(&g_api_mu);
        return 0;
    }
    tbio_clock_init();
    tbio_resolve_reals();
    tbio_fd_scan_existing();
    tbio_fd_forget_roles();   /* sockets made or closed while unpatched */
    atomic_store(&tbio_g_enabled, 1);
    int r = tbio_patch_all();
    if (r != 0) {
        tbio_unpatch_all();
        atomic_store(&tbio_g_enabled, 0);
    }
    pthread_mutex_unlock(&g_api_mu);
    return r;
}

int tbio_disable(void) {
    pthread_mutex_lock(&g_api_mu);
    if (!atomic_load(&tbio_g_enabled)) {
        pthread_mutex_unlock(&g_api_mu);
        return 0;
    }
    atomic_store(&tbio_g_enabled, 0);
    int r = tbio_unpatch_all();
    pthread_mutex_unlock(&g_api_mu);
    return r;
}

int tbio_is_enabled(void) { return atomic_load(&tbio_g_enabled); }

int tbio_op_count(void) { return TBIO_OP_COUNT; }

const char *tbio_op_name(int op) { return op >= 0 && op < TBIO_OP_COUNT ? tbio_hooks[op].name : NULL; }

int tbio_counter_count(int module, int is_float) {
    if (module == TBIO_POSIX) return is_float ? POSIX_F_NUM_INDICES : POSIX_NUM_INDICES;
    if (module == TBIO_STDIO) return is_float ? STDIO_F_NUM_INDICES : STDIO_NUM_INDICES;
    return 0;
}

const char *tbio_counter_name(int module, int is_float, int i) {
    if (i < 0 || i >= tbio_counter_count(module, is_float)) return NULL;
    if (module == TBIO_POSIX) return is_float ? tbio_posix_fcounter_names[i] : tbio_posix_counter_names[i];
    return is_float ? tbio_stdio_fcounter_names[i] : tbio_stdio_counter_names[i];
}
