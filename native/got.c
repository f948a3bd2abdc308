/* GOT/PLT patching.  Walks every loaded object with dl_iterate_phdr, reads
 * its dynamic section and rewrites the relocation slots (JUMP_SLOT, GLOB_DAT
 * and absolute 64-bit pointers) of the symbols we wrap.  Pages are made
 * writable only for the write and get their exact previous protection back;
 * a slot on an executable page is never touched (no W+X, ever). */
#include "shim.h"
#include "elf_dyn.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define R_SLOT R_X86_64_JUMP_SLOT
#define R_GLOB R_X86_64_GLOB_DAT
#define R_ABS R_X86_64_64
#elif defined(__aarch64__)
#define R_SLOT R_AARCH64_JUMP_SLOT
#define R_GLOB R_AARCH64_GLOB_DAT
#define R_ABS R_AARCH64_ABS64
#else
#error "tb_iotrace patches ELF relocations on x86_64 and aarch64 only"
#endif

typedef struct slot {
    uintptr_t addr, orig, wrapper, obj;
} slot;

typedef struct object {
    uintptr_t base;
    const void *phdr;
} object;

static pthread_mutex_t g_patch_mu = PTHREAD_MUTEX_INITIALIZER;
static slot *g_slots;
static size_t g_nslots, g_capslots;
static object *g_objs;
static size_t g_nobjs, g_capobjs;
static uintptr_t g_real[TBIO_OP_COUNT];

/* ---- name -> hook index, open addressing ---- */
#define HSZ 512
static int16_t g_htab[HSZ];
static int g_htab_ready;

static uint32_t name_hash(const char *s) {
    uint32_t h = 2166136261u;
    while (*s) h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

static void htab_init(void) {
    if (g_htab_ready) return;
    for (int i = 0; i < HSZ; i++) g_htab[i] = -1;
    for (int i = 0; i < TBIO_OP_COUNT; i++) {
        uint32_t h = name_hash(tbio_hooks[i].name) & (HSZ - 1);
        while (g_htab[h] >= 0) h = (h + 1) & (HSZ - 1);
        g_htab[h] = (int16_t)i;
    }
    g_htab_ready = 1;
}

static int hook_index(const char *name) {
    uint32_t h = name_hash(name) & (HSZ - 1);
    while (g_htab[h] >= 0) {
        if (strcmp(tbio_hooks[g_htab[h]].name, name) == 0) return g_htab[h];
        h = (h + 1) & (HSZ - 1);
    }
    return -1;
}

uintptr_t tbio_wrapper_address(const char *name) {
    htab_init();
    int i = hook_index(name);
    return i < 0 ? 0 : (uintptr_t)tbio_hooks[i].wrapper;
}

uintptr_t tbio_real_address(const char *name) {
    htab_init();
    int i = hook_index(name);
    return i < 0 ? 0 : (uintptr_t)*tbio_hooks[i].real;
}

/* ---- the real functions, from libc's own symbol table ---- */
int tbio_resolve_reals(void) {
    htab_init();
    static const char *const base_versions[] = {"GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.0", NULL};
    for (int i = 0; i < TBIO_OP_COUNT; i++) {
        void *p = *tbio_hooks[i].real;
        if (!p) p = dlsym(RTLD_NEXT, tbio_hooks[i].name);
        if (!p) p = dlsym(RTLD_DEFAULT, tbio_hooks[i].name);
        for (int v = 0; !p && base_versions[v]; v++)
            p = dlvsym(RTLD_DEFAULT, tbio_hooks[i].name, base_versions[v]);
        *tbio_hooks[i].real = p;
        g_real[i] = (uintptr_t)p;
    }
    return 0;
}

/* ---- /proc/self/maps: the protection of a page ---- */
typedef struct region {
    uintptr_t start, end;
    int prot;
} region;

static region *g_maps;
static size_t g_nmaps;

static void maps_load(void) {
    free(g_maps);
    g_maps = NULL;
    g_nmaps = 0;
    size_t len = 0;
    char *txt = tbio_read_file("/proc/self/maps", &len);
    if (!txt) return;
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += txt[i] == '\n';
    g_maps = calloc(lines, sizeof *g_maps);
    char *p = txt;
    while (g_maps && *p) {
        char *e;
        uintptr_t a = strtoull(p, &e, 16);
        if (*e != '-') break;
        uintptr_t b = strtoull(e + 1, &e, 16);
        while (*e == ' ') e++;
        int prot = 0;
        if (e[0] == 'r') prot |= PROT_READ;
        if (e[1] == 'w') prot |= PROT_WRITE;
        if (e[2] == 'x') prot |= PROT_EXEC;
        g_maps[g_nmaps++] = (region){a, b, prot};
        char *nl = strchr(e, '\n');
        if (!nl) break;
        p = nl + 1;
    }
    free(txt);
}

static int page_prot(uintptr_t addr) {
    size_t lo = 0, hi = g_nmaps;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (addr < g_maps[mid].start) hi = mid;
        else if (addr >= g_maps[mid].end) lo = mid + 1;
        else return g_maps[mid].prot;
    }
    return -1;
}

static int write_slot(uintptr_t addr, uintptr_t value) {
    int prot = page_prot(addr);
    if (prot < 0 || (prot & PROT_EXEC) || !(prot & PROT_READ)) return -1;
    if (prot & PROT_WRITE) {
        __atomic_store_n((uintptr_t *)addr, value, __ATOMIC_RELEASE);
        return 0;
    }
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t page = addr & ~(pg - 1);
    if (mprotect((void *)page, pg, PROT_READ | PROT_WRITE) != 0) return -1;
    __atomic_store_n((uintptr_t *)addr, value, __ATOMIC_RELEASE);
    mprotect((void *)page, pg, prot);
    return 0;
}

/* ---- per-object relocation walk ---- */
typedef struct walk {
    int restore;       /* 0 patch, 1 collect loaded objects for restore */
    uintptr_t self, ldso, vdso;
    object *loaded;
    size_t nloaded, caploaded;
    int err;
} walk;

static int push_slot(slot s) {
    if (g_nslots == g_capslots) {
        size_t nc = g_capslots ? g_capslots * 2 : 256;
        slot *ns = realloc(g_slots, nc * sizeof *ns);
        if (!ns) return -1;
        g_slots = ns;
        g_capslots = nc;
    }
    g_slots[g_nslots++] = s;
    return 0;
}

static int push_obj(object **arr, size_t *n, size_t *cap, object o) {
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        object *na = realloc(*arr, nc * sizeof *na);
        if (!na) return -1;
        *arr = na;
        *cap = nc;
    }
    (*arr)[(*n)++] = o;
    return 0;
}

static int known_obj(uintptr_t base, const void *phdr) {
    for (size_t i = 0; i < g_nobjs; i++)
        if (g_objs[i].base == base && g_objs[i].phdr == phdr) return 1;
    return 0;
}

static int in_object(const struct dl_phdr_info *info, uintptr_t a) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t s = info->dlpi_addr + ph->p_vaddr;
        if (a >= s && a < s + ph->p_memsz) return 1;
    }
    return 0;
}

static void patch_rela(const struct dl_phdr_info *info, const ElfW(Rela) *rel, size_t n,
                       const ElfW(Sym) *symtab, const char *strtab, size_t strsz) {
    for (size_t i = 0; i < n; i++) {
        uint32_t type = (uint32_t)ELF64_R_TYPE(rel[i].r_info);
        size_t sym = ELF64_R_SYM(rel[i].r_info);
        if (sym == 0 || (type != R_SLOT && type != R_GLOB && type != R_ABS)) continue;
        const ElfW(Sym) *s = &symtab[sym];
        if (s->st_shndx != SHN_UNDEF || s->st_name >= strsz) continue;
        int h = hook_index(strtab + s->st_name);
        if (h < 0 || !g_real[h]) continue;
        if (type == R_ABS && rel[i].r_addend != 0) continue;
        uintptr_t addr = info->dlpi_addr + rel[i].r_offset;
        uintptr_t cur = __atomic_load_n((uintptr_t *)addr, __ATOMIC_ACQUIRE);
        uintptr_t w = (uintptr_t)tbio_hooks[h].wrapper;
        if (cur == w) continue;
        int ok = cur == g_real[h] || (type == R_SLOT && in_object(info, cur));
        if (!ok) continue;
        if (write_slot(addr, w) == 0) push_slot((slot){addr, cur, w, info->dlpi_addr});
    }
}

static void patch_object(const struct dl_phdr_info *info) {
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn) return;
    uintptr_t base = info->dlpi_addr;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    size_t strsz = 0, relasz = 0, pltrelsz = 0;
    const ElfW(Rela) *rela = NULL, *jmprel = NULL;
    long pltrel = DT_RELA;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)tbio_dyn_ptr(base, d->d_un.d_ptr); break;
        case DT_STRTAB: strtab = (const char *)tbio_dyn_ptr(base, d->d_un.d_ptr); break;
        case DT_STRSZ: strsz = d->d_un.d_val; break;
        case DT_RELA: rela = (const ElfW(Rela) *)tbio_dyn_ptr(base, d->d_un.d_ptr); break;
        case DT_RELASZ: relasz = d->d_un.d_val; break;
        case DT_JMPREL: jmprel = (const ElfW(Rela) *)tbio_dyn_ptr(base, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: pltrelsz = d->d_un.d_val; break;
        case DT_PLTREL: pltrel = (long)d->d_un.d_val; break;
        default: break;
        }
    }
    if (!symtab || !strtab) return;
    if (rela) patch_rela(info, rela, relasz / sizeof *rela, symtab, strtab, strsz);
    if (jmprel && pltrel == DT_RELA) patch_rela(info, jmprel, pltrelsz / sizeof *jmprel, symtab, strtab, strsz);
}

static int skip_object(const struct dl_phdr_info *info, const walk *w) {
    uintptr_t ph = (uintptr_t)info->dlpi_phdr;
    if (w->vdso && ph >= w->vdso && ph < w->vdso + 65536) return 1;
    if (w->ldso && info->dlpi_addr == w->ldso) return 1;
    if (w->self && info->dlpi_addr == w->self) return 1;
    return 0;
}

static int walk_cb(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    walk *w = data;
    if (w->restore) {
        if (push_obj(&w->loaded, &w->nloaded, &w->caploaded,
                     (object){info->dlpi_addr, info->dlpi_phdr}) != 0) w->err = 1;
        return 0;
    }
    if (skip_object(info, w) || known_obj(info->dlpi_addr, info->dlpi_phdr)) return 0;
    patch_object(info);
    if (push_obj(&g_objs, &g_nobjs, &g_capobjs, (object){info->dlpi_addr, info->dlpi_phdr}) != 0)
        w->err = 1;
    return 0;
}

static void walk_init(walk *w) {
    memset(w, 0, sizeof *w);
    Dl_info di;
    if (dladdr((void *)&tbio_patch_all, &di)) w->self = (uintptr_t)di.dli_fbase;
    w->ldso = (uintptr_t)getauxval(AT_BASE);
    w->vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
}

/* Drop objects (and their slots) that are no longer loaded. */
static void prune(walk *w) {
    size_t k = 0;
    for (size_t i = 0; i < g_nobjs; i++) {
        int live = 0;
        for (size_t j = 0; j < w->nloaded && !live; j++)
            live = w->loaded[j].base == g_objs[i].base && w->loaded[j].phdr == g_objs[i].phdr;
        if (live) g_objs[k++] = g_objs[i];
        else {
            size_t m = 0;
            for (size_t s = 0; s < g_nslots; s++)
                if (g_slots[s].obj != g_objs[i].base) g_slots[m++] = g_slots[s];
            g_nslots = m;
        }
    }
    g_nobjs = k;
}

int tbio_patch_all(void) {
    walk w;
    walk_init(&w);
    pthread_mutex_lock(&g_patch_mu);
    /* forget unloaded objects first so a new object at the same address is patched */
    w.restore = 1;
    dl_iterate_phdr(walk_cb, &w);
    prune(&w);
    w.restore = 0;
    maps_load();
    dl_iterate_phdr(walk_cb, &w);
    pthread_mutex_unlock(&g_patch_mu);
    free(w.loaded);
    if (w.err) {
        tbio_set_error("out of memory while patching");
        return -1;
    }
    return 0;
}

int tbio_unpatch_all(void) {
    walk w;
    walk_init(&w);
    w.restore = 1;
    pthread_mutex_lock(&g_patch_mu);
    dl_iterate_phdr(walk_cb, &w);
    prune(&w);
    maps_load();
    for (size_t i = 0; i < g_nslots; i++) {
        uintptr_t cur = __atomic_load_n((uintptr_t *)g_slots[i].addr, __ATOMIC_ACQUIRE);
        if (cur == g_slots[i].wrapper) write_slot(g_slots[i].addr, g_slots[i].orig);
    }
    g_nslots = 0;
    g_nobjs = 0;
    pthread_mutex_unlock(&g_patch_mu);
    free(w.loaded);
    return 0;
}

uint64_t tbio_patch_count(void) {
    pthread_mutex_lock(&g_patch_mu);
    uint64_t n = g_nslots;
    pthread_mutex_unlock(&g_patch_mu);
    return n;
}

uint64_t tbio_patched_objects(void) {
    pthread_mutex_lock(&g_patch_mu);
    uint64_t n = g_nobjs;
    pthread_mutex_unlock(&g_patch_mu);
    return n;
}

int tbio_patch_get(uint64_t i, uintptr_t *slot_addr, uintptr_t *original, uintptr_t *wrapper) {
    pthread_mutex_lock(&g_patch_mu);
    int ok = i < g_nslots;
    if (ok) {
        *slot_addr = g_slots[i].addr;
        *original = g_slots[i].orig;
        *wrapper = g_slots[i].wrapper;
    }
    pthread_mutex_unlock(&g_patch_mu);
    return ok ? 0 : -1;
}

/* fork: a child must never inherit the patch lock (or dlsearch.c's alias
 * lock) held by a thread that does not exist there (its first dlopen would
 * hang in tbio_patch_all).  Taken before fork, so the tables are consistent too. */
void tbio_patch_atfork_prepare(void) {
    pthread_mutex_lock(&g_patch_mu);
    tbio_dlsearch_atfork_prepare();
}

void tbio_patch_atfork_parent(void) {
    tbio_dlsearch_atfork_parent();
    pthread_mutex_unlock(&g_patch_mu);
}

void tbio_patch_atfork_child(void) {
    tbio_dlsearch_atfork_child();
    pthread_mutex_init(&g_patch_mu, NULL);
}
