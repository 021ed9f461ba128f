/* status.c - per-thread error messages and checked allocation */
#include "judgerl/status.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MSG_MAX 2048
static _Thread_local char msg[MSG_MAX];

jr_status jr_fail(jr_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return st;
}

jr_status jr_fail_ctx(jr_status st, const char *fmt, ...) {
    char prefix[MSG_MAX], old[MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, msg, sizeof old);
    if (old[0])
        snprintf(msg, sizeof msg, "%.1000s: %.1000s", prefix, old);
    else
        snprintf(msg, sizeof msg, "%s", prefix);
    return st;
}

const char *jr_errmsg(void) { return msg; }

void jr_err_clear(void) { msg[0] = 0; }

const char *jr_status_name(jr_status st) {
    switch (st) {
    case JR_OK: return "ok";
    case JR_EINVAL: return "invalid input";
    case JR_EIO: return "I/O error";
    case JR_ENOMEM: return "out of memory";
    case JR_EFORMAT: return "malformed data";
    case JR_ENOTFOUND: return "not found";
    case JR_EUNSUPPORTED: return "unsupported";
    case JR_ENET: return "network error";
    case JR_ECANCELED: return "canceled";
    case JR_EINTERNAL: return "internal error";
    }
    return "unknown status";
}

void *jr_malloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) jr_fail(JR_ENOMEM, "out of memory allocating %zu bytes", n);
    return p;
}

void *jr_calloc(size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) jr_fail(JR_ENOMEM, "out of memory allocating %zu x %zu bytes", count, size);
    return p;
}

void *jr_realloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) jr_fail(JR_ENOMEM, "out of memory reallocating %zu bytes", n);
    return q;
}

void *jr_malloc_weights(size_t n) {
    size_t huge = (size_t)2 << 20, align = n >= huge ? huge : 64;
    if (n > SIZE_MAX - huge) { jr_fail(JR_ENOMEM, "out of memory allocating %zu bytes", n); return NULL; } /* rounding up would wrap */
    size_t m = (n + align - 1) / align * align;
    void *p = aligned_alloc(align, m ? m : align);
    if (!p) { jr_fail(JR_ENOMEM, "out of memory allocating %zu bytes", n); return NULL; }
#ifdef MADV_HUGEPAGE
    if (align == huge) (void)madvise(p, m, MADV_HUGEPAGE); /* advice only: without THP the pages stay 4 KiB */
#endif
    return p;
}

char *jr_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = jr_malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}
