/* Minimal assertion helpers for the C unit tests (no external framework). */
#ifndef TBIO_CHECK_H
#define TBIO_CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <inttypes.h>

static int check_failures = 0;
static int check_count = 0;

#define CHECK(cond) do { check_count++; if (!(cond)) { check_failures++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECK_EQ_I64(a, b) do { int64_t _a = (int64_t)(a), _b = (int64_t)(b); check_count++; \
    if (_a != _b) { check_failures++; fprintf(stderr, "%s:%d: %s == %" PRId64 ", expected %s == %" PRId64 "\n", \
    __FILE__, __LINE__, #a, _a, #b, _b); } } while (0)
#define CHECK_NEAR(a, b, eps) do { double _a = (double)(a), _b = (double)(b); check_count++; \
    if (!(_a - _b <= (eps) && _b - _a <= (eps))) { check_failures++; \
    fprintf(stderr, "%s:%d: %s == %.9g, expected %.9g\n", __FILE__, __LINE__, #a, _a, _b); } } while (0)
/* Under ThreadSanitizer its interceptors of open, socket, pipe, close, ...
 * make those calls where the shim cannot see them (they call libc through
 * pointers of their own), so which file a number names is not the shim's
 * to know there: the sequences still run (for races), the attribution
 * checks (CHECK_ATTR) do not. */
#if defined(__SANITIZE_THREAD__)
#define ATTRIBUTION 0
#else
#define ATTRIBUTION 1
#endif
#define CHECK_ATTR(a, b) do { if (ATTRIBUTION) CHECK_EQ_I64(a, b); } while (0)
#define CHECK_DONE() (printf("%d checks, %d failed\n", check_count, check_failures), check_failures ? 1 : 0)
#endif
