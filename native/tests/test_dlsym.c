/* dlsym/dlvsym from a patched object: the wrapper for a hooked name while
 * enabled, glibc's own answer otherwise, RTLD_NEXT always glibc's own (the
 * entry is assembly: this also runs it under the sanitizers). */
#include "check.h"
#include "tbio.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);

int main(void) {
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    CHECK(libc != NULL);
    void *next_off = dlsym(RTLD_NEXT, "pread");
    void *default_off = dlsym(RTLD_DEFAULT, "pread");
    void *handle_off = dlsym(libc, "pread");
    void *strlen_off = dlsym(RTLD_DEFAULT, "strlen");
    CHECK(next_off != NULL && handle_off != NULL);
    CHECK(tbio_enable() == 0);
    uintptr_t wrapper = tbio_wrapper_address("pread"), real = tbio_real_address("pread");
    CHECK(wrapper != 0 && real != 0);
    CHECK((uintptr_t)dlsym(libc, "pread") == wrapper);
    CHECK((uintptr_t)handle_off == real);
    /* swapped only when glibc's answer is libc's own (under a sanitizer
     * the global scope's first pread is its interceptor: left alone) */
    CHECK((uintptr_t)dlsym(RTLD_DEFAULT, "pread") == ((uintptr_t)default_off == real ? wrapper
                                                                                    : (uintptr_t)default_off));
    CHECK((uintptr_t)dlvsym(RTLD_DEFAULT, "pread", "GLIBC_2.2.5") == wrapper ||
          (uintptr_t)dlvsym(RTLD_DEFAULT, "pread", "GLIBC_2.17") == wrapper);
    CHECK(dlsym(RTLD_NEXT, "pread") == next_off);              /* relative to this executable */
    CHECK(dlsym(RTLD_DEFAULT, "strlen") == strlen_off);         /* not hooked: glibc's answer */
    CHECK(dlsym(RTLD_DEFAULT, "no_such_symbol_tbio") == NULL);
    CHECK(dlerror() != NULL);                                   /* the caller's error, as glibc says it */
    /* the fetched wrapper reads, recording and, after disable(), idle */
    char path[] = "/tmp/tbio-dlsym-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, "0123456789", 10) == 10);
    pread_fn f = (pread_fn)dlsym(libc, "pread");
    char buf[16];
    tbio_session *s = tbio_begin();
    CHECK(f(fd, buf, 4, 3) == 4 && memcmp(buf, "3456", 4) == 0);
    tbio_session *e = tbio_end(s);
    CHECK_EQ_I64(tbio_session_nevents(e), 1);
    tbio_session_free(e);
    CHECK(tbio_disable() == 0);
    CHECK(f(fd, buf, 2, 8) == 2 && memcmp(buf, "89", 2) == 0);
    CHECK(dlsym(RTLD_DEFAULT, "pread") == default_off);       /* off: no swap */
    close(fd);
    unlink(path);
    dlclose(libc);
    return CHECK_DONE();
}
