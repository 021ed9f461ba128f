/* status.h - status codes and the per-thread error message set by every failing library call */
#ifndef JUDGERL_STATUS_H
#define JUDGERL_STATUS_H

#include <stdarg.h>
#include <stddef.h>

/* Every library function that can fail returns a jr_status: 0 is success. On failure it also
 * sets a one-line message (per thread) naming the file, field or request and what to do. Only
 * src/cli/ prints the message and turns the status into an exit code. */
typedef enum {
    JR_OK = 0,
    JR_EINVAL,       /* bad argument or value supplied by the user */
    JR_EIO,          /* a file or socket operation failed */
    JR_ENOMEM,       /* allocation failed */
    JR_EFORMAT,      /* a file or message is malformed */
    JR_ENOTFOUND,    /* a file, key or tensor is missing */
    JR_EUNSUPPORTED, /* valid input that judgerl does not support */
    JR_ENET,         /* network failure */
    JR_ECANCELED,    /* stopped on request (signal, limit) */
    JR_EINTERNAL     /* a bug: an invariant did not hold */
} jr_status;

/* Sets the thread's message from a printf format and returns st (so `return jr_fail(...)`). */
jr_status jr_fail(jr_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prepends "context: " to the current message (e.g. the file name) and returns st. */
jr_status jr_fail_ctx(jr_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The current thread's last message ("" when none). Valid until the next jr_fail on this thread. */
const char *jr_errmsg(void);

/* Clears the thread's message. */
void jr_err_clear(void);

/* A short name for a status ("invalid input", "I/O error", ...). */
const char *jr_status_name(jr_status st);

/* Allocation helpers that set a message on failure; they return NULL (never abort). */
void *jr_malloc(size_t n);
void *jr_calloc(size_t count, size_t size);
void *jr_realloc(void *p, size_t n);
char *jr_strdup(const char *s);
/* n bytes 64-byte aligned, for weights a kernel streams every step: from 2 MiB on, 2 MiB aligned and
 * advised for transparent huge pages (the machine's THP setting is often "madvise": without the advice
 * every 4 KiB of a weight matrix costs a TLB miss; a 32-row bf16 prefill ran 1.15x faster with it).
 * Released with free(). NULL (with a message) when out of memory. */
void *jr_malloc_weights(size_t n);

#endif
