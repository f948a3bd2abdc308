/* dlopen of a bare library name with the search path of the object that
 * called dlopen (its RPATH/RUNPATH, $ORIGIN), as glibc would have resolved
 * it had the shim's wrapper not become the caller. */
#include "shim.h"
#include "elf_dyn.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- dlopen with the caller's search path ----
 * glibc resolves a bare library name through the RPATH/RUNPATH of the object
 * that called dlopen.  Once our wrapper is the caller that would change, so
 * we look the name up the way glibc would for the real caller:
 *   1. an object already loaded under that name: glibc matches the SONAME and
 *      the names an object was loaded under (never the file's basename: a
 *      library loaded by full path does not answer to its bare name).  The
 *      SONAME we read; names the wrapper resolved itself it remembers (it
 *      loads them by full path, step 3); other names glibc knows are found by
 *      an RTLD_NOLOAD probe;
 *   2. the caller's own search list (dlinfo RTLD_DI_SERINFO, which glibc
 *      builds with its own rules), up to the default directories;
 *   3. the cache and default directories through a plain dlopen. */
typedef struct soname_find {
    const char *want;
    const char *alias;          /* path the wrapper loaded for `want`, or NULL */
    char found[4096];
} soname_find;

/* bare names the wrapper resolved through a caller's search list -> the path it loaded */
typedef struct dl_alias {
    struct dl_alias *next;
    char *name, *path;
} dl_alias;
static pthread_mutex_t g_alias_mu = PTHREAD_MUTEX_INITIALIZER;
static dl_alias *g_aliases;

static const char *alias_path(const char *name) {
    const char *p = NULL;
    pthread_mutex_lock(&g_alias_mu);
    for (dl_alias *a = g_aliases; a && !p; a = a->next)
        if (strcmp(a->name, name) == 0) p = a->path;
    pthread_mutex_unlock(&g_alias_mu);
    return p;   /* entries are never freed */
}

/* fork: a child must never inherit the alias lock held by a thread that
 * does not exist there (taken by tbio_patch_atfork_prepare, after the patch lock). */
void tbio_dlsearch_atfork_prepare(void) { pthread_mutex_lock(&g_alias_mu); }
void tbio_dlsearch_atfork_parent(void) { pthread_mutex_unlock(&g_alias_mu); }
void tbio_dlsearch_atfork_child(void) { pthread_mutex_init(&g_alias_mu, NULL); }

static void alias_add(const char *name, const char *path) {
    if (alias_path(name)) return;
    dl_alias *a = malloc(sizeof *a);
    char *n = strdup(name), *q = strdup(path);
    if (!a || !n || !q) {
        free(a);
        free(n);
        free(q);
        return;
    }
    a->name = n;
    a->path = q;
    pthread_mutex_lock(&g_alias_mu);
    a->next = g_aliases;
    g_aliases = a;
    pthread_mutex_unlock(&g_alias_mu);
}

static int soname_cb(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    soname_find *f = data;
    if (f->found[0] || !info->dlpi_name || !info->dlpi_name[0]) return 0;
    if (f->alias && strcmp(f->alias, info->dlpi_name) == 0) {
        if (strlen(info->dlpi_name) < sizeof f->found) strcpy(f->found, info->dlpi_name);
        return 0;
    }
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn) return 0;
    const char *strtab = NULL;
    size_t soname = (size_t)-1;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_STRTAB) strtab = (const char *)tbio_dyn_ptr(info->dlpi_addr, d->d_un.d_ptr);
        if (d->d_tag == DT_SONAME) soname = d->d_un.d_val;
    }
    int match = strtab && soname != (size_t)-1 && strcmp(strtab + soname, f->want) == 0;
    if (match && strlen(info->dlpi_name) < sizeof f->found) strcpy(f->found, info->dlpi_name);
    return 0;
}

/* An object glibc already knows under `file` (a name it was loaded under):
 * RTLD_NOLOAD never loads anything.  Its path goes to out. */
static int loaded_under_name(const char *file, void *(*real)(const char *, int), char *out, size_t cap) {
    void *h = real(file, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return 0;
    struct link_map *lm = NULL;
    int ok = dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0] &&
             strlen(lm->l_name) < cap;
    if (ok) strcpy(out, lm->l_name);
    dlclose(h);   /* drop the reference the probe took (the shim is never patched: the real dlclose) */
    return ok;
}

void *tbio_dlopen_like_caller(const char *file, int mode, const void *caller,
                              void *(*real)(const char *, int)) {
    if (!file || !caller || strchr(file, '/')) return real(file, mode);
    soname_find f;
    f.want = file;
    f.alias = alias_path(file);
    f.found[0] = 0;
    dl_iterate_phdr(soname_cb, &f);
    if (f.found[0] || loaded_under_name(file, real, f.found, sizeof f.found)) {
        void *h = real(f.found, mode);
        if (h) return h;
    }
    Dl_info di;
    struct link_map *lm = NULL;
    if (dladdr1(caller, &di, (void **)&lm, RTLD_DL_LINKMAP) && lm) {
        Dl_serinfo size;
        if (dlinfo(lm, RTLD_DI_SERINFOSIZE, &size) == 0 && size.dls_size > 0) {
            Dl_serinfo *si = malloc(size.dls_size);
            if (si) {
                si->dls_size = size.dls_size;
                si->dls_cnt = size.dls_cnt;
                if (dlinfo(lm, RTLD_DI_SERINFO, si) == 0) {
                    for (unsigned i = 0; i < si->dls_cnt; i++) {
                        const Dl_serpath *sp = &si->dls_serpath[i];
                        if (sp->dls_flags & LA_SER_DEFAULT) break;  /* cache comes before these */
                        char path[4096];
                        int n = snprintf(path, sizeof path, "%s/%s", sp->dls_name, file);
                        if (n <= 0 || (size_t)n >= sizeof path) continue;
                        if (syscall(SYS_faccessat, AT_FDCWD, path, F_OK, 0) != 0) continue;
                        void *h = real(path, mode);
                        if (h) {
                            /* glibc would know it under the bare name from now on */
                            alias_add(file, path);
                            free(si);
                            return h;
                        }
                    }
                }
                free(si);
            }
        }
    }
    return real(file, mode);
}
