/* strbuf.h - the one growable buffer (text or bytes, always NUL-terminated) whose allocation failure
 * is checked once, at the end */
#ifndef JUDGERL_STRBUF_H
#define JUDGERL_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

/* Zero-initialise (`jr_strbuf b = {0};`), append, then take or free. After an allocation failure
 * appends do nothing and `oom` stays set, so callers check once when they finish. */
typedef struct jr_strbuf {
    char *p;      /* NUL-terminated contents (NULL while empty) */
    size_t n;     /* length, without the NUL */
    size_t cap;
    int oom;      /* an allocation failed */
} jr_strbuf;

/* Appends n bytes (any bytes, NULs included); s may point into b's own contents. */
void jr_strbuf_addn(jr_strbuf *b, const char *s, size_t n);
void jr_strbuf_add(jr_strbuf *b, const char *s);
void jr_strbuf_addc(jr_strbuf *b, char c);
void jr_strbuf_addf(jr_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void jr_strbuf_vaddf(jr_strbuf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Empties the buffer and keeps its allocation (an oom stays set). */
void jr_strbuf_reset(jr_strbuf *b);
/* Returns the string (owned by the caller; "" when nothing was added), or NULL after an
 * allocation failure. Either way the buffer is left empty (oom cleared), as jr_strbuf_free leaves it. */
char *jr_strbuf_take(jr_strbuf *b);
void jr_strbuf_free(jr_strbuf *b);

/* A new string formatted like printf (caller frees); NULL when out of memory. */
char *jr_strfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
