/* Loading wrappers: dlopen/dlclose (patch what is loaded, search like the
 * caller) and dlsym/dlvsym (hand out wrappers for functions fetched by name). */
#include "wrap.h"

/* ---------------- loading ---------------- */
void *tbio_w_dlopen(const char *file, int mode) {
    const void *caller = __builtin_return_address(0);
    void *h = tbio_dlopen_like_caller(file, mode, caller, real_dlopen);
    if (h && atomic_load(&tbio_g_enabled)) {
        int err = errno;
        tbio_patch_all();
        errno = err;
    }
    return h;
}

int tbio_w_dlclose(void *handle) {
    int ret = real_dlclose(handle);
    if (atomic_load(&tbio_g_enabled)) tbio_patch_all();   /* forget objects that went away */
    return ret;
}

/* dlsym / dlvsym: a function fetched by name (ctypes' CDLL(None).read, a
 * library's dlsym(RTLD_DEFAULT, "pread")) never goes through a GOT slot, so
 * the answer is swapped for the wrapper when it is libc's function of a
 * hooked name.  glibc answers relative to the caller (RTLD_NEXT: the objects
 * after the caller's; RTLD_DEFAULT: the global scope, then the caller's
 * local scope), found from the return address: a wrapper written in C would
 * become the caller.  So the entry is a few instructions of assembly that
 * leave the return address alone: RTLD_NEXT jumps straight to the real
 * function; any other handle first asks tbio_dlsym_swap, and unless that
 * returns a wrapper, jumps to the real function with the caller's arguments.
 *
 * The swap is exact: the shim's own lookup finding libc's function means the
 * global scope defines the name (libc is in it), and the global scope is
 * searched first from every caller, so the caller's lookup finds the same
 * function; a lookup through a handle does not depend on the caller.
 * A wrapper handed out stays safe to call after disable(): idle, it calls
 * the real function. */
TBIO_HIDDEN __attribute__((used)) void *tbio_dlsym_swap(void *handle, const char *name);
TBIO_HIDDEN __attribute__((used)) void *tbio_dlvsym_swap(void *handle, const char *name, const char *version);

static void *dl_swap(void *p, int h) { return p && p == *tbio_hooks[h].real ? tbio_hooks[h].wrapper : NULL; }

void *tbio_dlsym_swap(void *handle, const char *name) {
    if (!atomic_load_explicit(&tbio_g_enabled, memory_order_relaxed) || !name) return NULL;
    int h = tbio_hook_index(name);
    return h < 0 ? NULL : dl_swap(real_dlsym(handle, name), h);
}

void *tbio_dlvsym_swap(void *handle, const char *name, const char *version) {
    if (!atomic_load_explicit(&tbio_g_enabled, memory_order_relaxed) || !name || !version) return NULL;
    int h = tbio_hook_index(name);
    return h < 0 ? NULL : dl_swap(real_dlvsym(handle, name, version), h);
}

#if defined(__x86_64__)
#if defined(__CET__)
#define TBIO_ASM_LANDING "endbr64\n"
#else
#define TBIO_ASM_LANDING ""
#endif
/* entry: rsp = 8 mod 16; pushes keep the call below 16-byte aligned */
#define TBIO_DLSYM_ENTRY(NAME, SWAP, REAL, SAVE, RESTORE)                  \
    __asm__(".text\n"                                                     \
            ".globl " NAME "\n"                                           \
            ".hidden " NAME "\n"                                          \
            ".type " NAME ", @function\n" NAME ":\n"                      \
            ".cfi_startproc\n" TBIO_ASM_LANDING                           \
            "cmpq $-1, %rdi\n"   /* RTLD_NEXT */                          \
            "je 1f\n" SAVE                                                \
            "call " SWAP "\n" RESTORE                                     \
            "testq %rax, %rax\n"                                          \
            "jne 2f\n"                                                    \
            "1: jmp *" REAL "(%rip)\n"                                    \
            "2: ret\n"                                                    \
            ".cfi_endproc\n"                                              \
            ".size " NAME ", .-" NAME "\n");
TBIO_DLSYM_ENTRY("tbio_w_dlsym", "tbio_dlsym_swap", "real_dlsym",
                 "pushq %rdi\n.cfi_adjust_cfa_offset 8\npushq %rsi\n.cfi_adjust_cfa_offset 8\n"
                 "subq $8, %rsp\n.cfi_adjust_cfa_offset 8\n",
                 "addq $8, %rsp\n.cfi_adjust_cfa_offset -8\npopq %rsi\n.cfi_adjust_cfa_offset -8\n"
                 "popq %rdi\n.cfi_adjust_cfa_offset -8\n")
TBIO_DLSYM_ENTRY("tbio_w_dlvsym", "tbio_dlvsym_swap", "real_dlvsym",
                 "pushq %rdi\n.cfi_adjust_cfa_offset 8\npushq %rsi\n.cfi_adjust_cfa_offset 8\n"
                 "pushq %rdx\n.cfi_adjust_cfa_offset 8\n",
                 "popq %rdx\n.cfi_adjust_cfa_offset -8\npopq %rsi\n.cfi_adjust_cfa_offset -8\n"
                 "popq %rdi\n.cfi_adjust_cfa_offset -8\n")
#elif defined(__aarch64__)
#if defined(__ARM_FEATURE_BTI_DEFAULT)
#define TBIO_ASM_LANDING "hint #34\n"   /* bti c */
#else
#define TBIO_ASM_LANDING ""
#endif
/* x0..x2 saved in a frame of 48 bytes, x29/x30 at its bottom */
#define TBIO_DLSYM_ENTRY(NAME, SWAP, REAL)                                 \
    __asm__(".text\n"                                                     \
            ".globl " NAME "\n"                                           \
            ".hidden " NAME "\n"                                          \
            ".type " NAME ", %function\n" NAME ":\n"                      \
            ".cfi_startproc\n" TBIO_ASM_LANDING                           \
            "cmn x0, #1\n"   /* RTLD_NEXT */                              \
            "b.eq 1f\n"                                                   \
            "stp x29, x30, [sp, #-48]!\n"                                 \
            ".cfi_def_cfa_offset 48\n"                                    \
            ".cfi_offset 29, -48\n"                                       \
            ".cfi_offset 30, -40\n"                                       \
            "mov x29, sp\n"                                               \
            "stp x0, x1, [sp, #16]\n"                                     \
            "str x2, [sp, #32]\n"                                         \
            "bl " SWAP "\n"                                               \
            "mov x9, x0\n"                                                \
            "ldp x0, x1, [sp, #16]\n"                                     \
            "ldr x2, [sp, #32]\n"                                         \
            "ldp x29, x30, [sp], #48\n"                                   \
            ".cfi_restore 29\n"                                           \
            ".cfi_restore 30\n"                                           \
            ".cfi_def_cfa_offset 0\n"                                     \
            "cbnz x9, 2f\n"                                               \
            "1: adrp x16, " REAL "\n"                                     \
            "ldr x16, [x16, :lo12:" REAL "]\n"                            \
            "br x16\n"                                                    \
            "2: mov x0, x9\n"                                             \
            "ret\n"                                                       \
            ".cfi_endproc\n"                                              \
            ".size " NAME ", .-" NAME "\n");
TBIO_DLSYM_ENTRY("tbio_w_dlsym", "tbio_dlsym_swap", "real_dlsym")
TBIO_DLSYM_ENTRY("tbio_w_dlvsym", "tbio_dlvsym_swap", "real_dlvsym")
#else
#error "the dlsym entry is written for x86_64 and aarch64 only"
#endif
