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

/* A relocation slot the walker rewrote: restored by tbio_unpatch_all while
 * it still holds the wrapper. */
typedef struct slot {
    uintptr_t addr, orig, wrapper;
} slot;

/* A loaded object the walker has met.  (base, phdr, name) names it; `done`:
 * every slot it imports a hooked symbol through held the wrapper (or a
 * function that is not ours to replace) at the last walk.  An object not
 * done is walked again every time (mapped but not yet relocated by another
 * thread's dlopen, or its RELRO not yet applied); a done one only has its
 * slots checked (a lazy-binding fixup may have written the real function
 * over the wrapper, or another library now sits at the same address). */
typedef struct object {
    uintptr_t base;
    const void *phdr;
    char *name;
    slot *slots;
    size_t nslots, capslots;
    int done;
    uint64_t seen;      /* the walk that last met it */
} object;

static pthread_mutex_t g_patch_mu = PTHREAD_MUTEX_INITIALIZER;
static object *g_objs;
static size_t g_nobjs, g_capobjs;
static uint64_t g_walk;
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
    if (__atomic_load_n(&g_htab_ready, __ATOMIC_ACQUIRE)) return;
    for (int i = 0; i < HSZ; i++) g_htab[i] = -1;
    for (int i = 0; i < TBIO_OP_COUNT; i++) {
        uint32_t h = name_hash(tbio_hooks[i].name) & (HSZ - 1);
        while (g_htab[h] >= 0) h = (h + 1) & (HSZ - 1);
        g_htab[h] = (int16_t)i;
    }
    __atomic_store_n(&g_htab_ready, 1, __ATOMIC_RELEASE);
}

static int hook_index(const char *name) {
    uint32_t h = name_hash(name) & (HSZ - 1);
    while (g_htab[h] >= 0) {
        if (strcmp(tbio_hooks[g_htab[h]].name, name) == 0) return g_htab[h];
        h = (h + 1) & (HSZ - 1);
    }
    return -1;
}

/* -1 when name is not hooked, or before the first enable() built the table */
int tbio_hook_index(const char *name) {
    return __atomic_load_n(&g_htab_ready, __ATOMIC_ACQUIRE) ? hook_index(name) : -1;
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
static uint64_t g_maps_reads;       /* snapshots taken (tbio_maps_reads) */

/* Read under g_patch_mu only when a slot is to be written: a torch process has
 * thousands of mappings (~1 ms to read), and most walks (a dlopen of a library
 * with no hooked import, a library already patched) write nothing. */
static void maps_load(void) {
    g_maps_reads++;
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

/* ---- writing a slot ---- */
enum { WR_DONE, WR_LATER, WR_NEVER };

typedef struct walk {
    int restore;                    /* 0 patch, 1 put every recorded slot back */
    uintptr_t self, ldso, vdso;
    int maps_loaded;                /* maps read during this walk (on the first slot to write) */
    int maps_fresh;                 /* maps reloaded during this walk already */
    int err;
} walk;

typedef struct objinfo {            /* what patch_rela needs of the object being walked */
    const struct dl_phdr_info *info;
    uintptr_t relro_lo, relro_hi;   /* the pages the loader makes read-only after relocating */
    object *o;
    size_t pending;                 /* candidate slots to try again at the next walk */
} objinfo;

static uintptr_t page_size(void) {
    static uintptr_t pg;
    if (!pg) pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    return pg;
}

/* WR_LATER: not now (the page is not in the maps snapshot, or it is a RELRO
 * page the loader has not yet made read-only: it is relocating the object on
 * another thread and will mprotect the page under a direct store).
 * WR_NEVER: an executable or unreadable page (no W+X, ever). */
static int write_slot(walk *w, const objinfo *oi, uintptr_t addr, uintptr_t value) {
    if (!w->maps_loaded) {
        maps_load();
        w->maps_loaded = 1;
    }
    int prot = page_prot(addr);
    if (prot < 0 && !w->maps_fresh) {   /* mapped after the snapshot */
        maps_load();
        w->maps_fresh = 1;
        prot = page_prot(addr);
    }
    if (prot < 0) return WR_LATER;
    if ((prot & PROT_EXEC) || !(prot & PROT_READ)) return WR_NEVER;
    if (prot & PROT_WRITE) {
        if (oi && addr >= oi->relro_lo && addr < oi->relro_hi) return WR_LATER;
        __atomic_store_n((uintptr_t *)addr, value, __ATOMIC_RELEASE);
        return WR_DONE;
    }
    uintptr_t pg = page_size();
    uintptr_t page = addr & ~(pg - 1);
    if (mprotect((void *)page, pg, PROT_READ | PROT_WRITE) != 0) return WR_NEVER;
    __atomic_store_n((uintptr_t *)addr, value, __ATOMIC_RELEASE);
    mprotect((void *)page, pg, prot);
    return WR_DONE;
}

/* ---- the objects and their slots ---- */
static int record_slot(object *o, slot s) {
    for (size_t i = 0; i < o->nslots; i++) {
        if (o->slots[i].addr == s.addr) {   /* patched again: keep the first original */
            o->slots[i].wrapper = s.wrapper;
            return 0;
        }
    }
    if (o->nslots == o->capslots) {
        size_t nc = o->capslots ? o->capslots * 2 : 16;
        slot *ns = realloc(o->slots, nc * sizeof *ns);
        if (!ns) return -1;
        o->slots = ns;
        o->capslots = nc;
    }
    o->slots[o->nslots++] = s;
    return 0;
}

static const char *obj_name(const struct dl_phdr_info *info) {
    return info->dlpi_name ? info->dlpi_name : "";
}

static object *find_obj(const struct dl_phdr_info *info) {
    const char *name = obj_name(info);
    for (size_t i = 0; i < g_nobjs; i++) {
        object *o = &g_objs[i];
        if (o->base == info->dlpi_addr && o->phdr == info->dlpi_phdr && strcmp(o->name, name) == 0) return o;
    }
    return NULL;
}

static object *add_obj(const struct dl_phdr_info *info) {
    if (g_nobjs == g_capobjs) {
        size_t nc = g_capobjs ? g_capobjs * 2 : 64;
        object *na = realloc(g_objs, nc * sizeof *na);
        if (!na) return NULL;
        g_objs = na;
        g_capobjs = nc;
    }
    char *name = strdup(obj_name(info));
    if (!name) return NULL;
    object *o = &g_objs[g_nobjs++];
    memset(o, 0, sizeof *o);
    o->base = info->dlpi_addr;
    o->phdr = info->dlpi_phdr;
    o->name = name;
    return o;
}

static void drop_obj(size_t i) {
    free(g_objs[i].name);
    free(g_objs[i].slots);
    g_objs[i] = g_objs[--g_nobjs];
}

/* Forget objects the last walk did not meet (unloaded), with their slots. */
static void prune(void) {
    for (size_t i = 0; i < g_nobjs;) {
        if (g_objs[i].seen != g_walk) drop_obj(i);
        else i++;
    }
}

static int slots_hold_wrappers(const object *o) {
    for (size_t i = 0; i < o->nslots; i++)
        if (__atomic_load_n((uintptr_t *)o->slots[i].addr, __ATOMIC_ACQUIRE) != o->slots[i].wrapper) return 0;
    return 1;
}

/* ---- per-object relocation walk ---- */
static int in_object(const struct dl_phdr_info *info, uintptr_t a) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t s = info->dlpi_addr + ph->p_vaddr;
        if (a >= s && a < s + ph->p_memsz) return 1;
    }
    return 0;
}

static void patch_rela(walk *w, objinfo *oi, const ElfW(Rela) *rel, size_t n, const ElfW(Sym) *symtab,
                       const char *strtab, size_t strsz) {
    const struct dl_phdr_info *info = oi->info;
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
        uintptr_t wr = (uintptr_t)tbio_hooks[h].wrapper;
        if (cur == wr) continue;
        /* relocated to libc's function, or a lazy slot still on its PLT stub */
        int ours = cur == g_real[h] || (type == R_SLOT && in_object(info, cur));
        if (!ours) {
            /* not yet relocated (a loader on another thread is at work):
             * zero, or a lazy slot's stub address not yet moved by the base */
            if (cur == 0 || (info->dlpi_addr && in_object(info, cur + info->dlpi_addr))) oi->pending++;
            continue;   /* else someone else's function (an interposer): not ours */
        }
        int r = write_slot(w, oi, addr, wr);
        if (r == WR_DONE) {
            if (record_slot(oi->o, (slot){addr, cur, wr}) != 0) w->err = 1;
        } else if (r == WR_LATER) {
            oi->pending++;
        }
    }
}

static void patch_object(walk *w, objinfo *oi) {
    const struct dl_phdr_info *info = oi->info;
    const ElfW(Dyn) *dyn = NULL;
    uintptr_t pg = page_size();
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_DYNAMIC) dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
        if (ph->p_type == PT_GNU_RELRO) {
            /* what glibc's _dl_protect_relro makes read-only: whole pages only */
            uintptr_t start = info->dlpi_addr + ph->p_vaddr;
            oi->relro_lo = start & ~(pg - 1);
            oi->relro_hi = (start + ph->p_memsz) & ~(pg - 1);
        }
    }
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
    if (rela) patch_rela(w, oi, rela, relasz / sizeof *rela, symtab, strtab, strsz);
    if (jmprel && pltrel == DT_RELA) patch_rela(w, oi, jmprel, pltrelsz / sizeof *jmprel, symtab, strtab, strsz);
}

static int skip_object(const struct dl_phdr_info *info, const walk *w) {
    uintptr_t ph = (uintptr_t)info->dlpi_phdr;
    if (w->vdso && ph >= w->vdso && ph < w->vdso + 65536) return 1;
    if (w->ldso && info->dlpi_addr == w->ldso) return 1;
    if (w->self && info->dlpi_addr == w->self) return 1;
    return 0;
}

/* Runs under glibc's dl_load_write_lock: an object met here cannot be
 * unmapped until the callback returns, so its slots may be read and written. */
static int walk_cb(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    walk *w = data;
    if (skip_object(info, w)) return 0;
    object *o = find_obj(info);
    if (w->restore) {
        if (!o) return 0;
        for (size_t i = 0; i < o->nslots; i++) {
            const slot *s = &o->slots[i];
            if (__atomic_load_n((uintptr_t *)s->addr, __ATOMIC_ACQUIRE) == s->wrapper)
                write_slot(w, NULL, s->addr, s->orig);
        }
        return 0;
    }
    if (!o && !(o = add_obj(info))) {
        w->err = 1;
        return 0;
    }
    o->seen = g_walk;
    if (o->done && slots_hold_wrappers(o)) return 0;
    objinfo oi = {info, 0, 0, o, 0};
    patch_object(w, &oi);
    o->done = oi.pending == 0;
    return 0;
}

static void walk_init(walk *w, int restore) {
    memset(w, 0, sizeof *w);
    w->restore = restore;
    Dl_info di;
    if (dladdr((void *)&tbio_patch_all, &di)) w->self = (uintptr_t)di.dli_fbase;
    w->ldso = (uintptr_t)getauxval(AT_BASE);
    w->vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
}

int tbio_patch_all(void) {
    walk w;
    walk_init(&w, 0);
    pthread_mutex_lock(&g_patch_mu);
    g_walk++;
    dl_iterate_phdr(walk_cb, &w);
    prune();   /* objects not met are gone (a new object at the same address is met as new) */
    pthread_mutex_unlock(&g_patch_mu);
    if (w.err) {
        tbio_set_error("out of memory while patching");
        return -1;
    }
    return 0;
}

int tbio_unpatch_all(void) {
    walk w;
    walk_init(&w, 1);
    pthread_mutex_lock(&g_patch_mu);
    dl_iterate_phdr(walk_cb, &w);   /* objects unloaded meanwhile are not touched */
    while (g_nobjs) drop_obj(g_nobjs - 1);
    pthread_mutex_unlock(&g_patch_mu);
    return 0;
}

uint64_t tbio_patch_count(void) {
    pthread_mutex_lock(&g_patch_mu);
    uint64_t n = 0;
    for (size_t i = 0; i < g_nobjs; i++) n += g_objs[i].nslots;
    pthread_mutex_unlock(&g_patch_mu);
    return n;
}

uint64_t tbio_maps_reads(void) {
    pthread_mutex_lock(&g_patch_mu);
    uint64_t n = g_maps_reads;
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
    int ok = 0;
    for (size_t k = 0; k < g_nobjs && !ok; k++) {
        if (i < g_objs[k].nslots) {
            *slot_addr = g_objs[k].slots[i].addr;
            *original = g_objs[k].slots[i].orig;
            *wrapper = g_objs[k].slots[i].wrapper;
            ok = 1;
        } else {
            i -= g_objs[k].nslots;
        }
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
