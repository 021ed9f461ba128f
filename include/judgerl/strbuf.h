/* strbuf.h - a growable NUL-terminated string whose allocation failure is checked once, at the end */
#ifndef JUDGERL_STRBUF_H
#define JUDGERL_STRBUF_H

#include <stddef.h>

/* Zero-initialise (`jr_strbuf b = {0};`), append, then take or free. After an allocation failure
 * appends do nothing and `oom` stays set, so callers check once when they finish. */
typedef struct jr_strbuf {
    char *p;      /* NUL-terminated contents (NULL while empty) */
    size_t n;     /* length, without the NUL */
    size_t cap;
    int oom;      /* an allocation failed */
} jr_strbuf;

void jr_strbuf_addn(jr_strbuf *b, const char *s, size_t n);
void jr_strbuf_add(jr_strbuf *b, const char *s);
void jr_strbuf_addc(jr_strbuf *b, char c);
void jr_strbuf_addf(jr_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Returns the string (owned by the caller; "" when nothing was added), or NULL after an
 * allocation failure (the buffer is freed either way and must not be used again). */
char *jr_strbuf_take(jr_strbuf *b);
void jr_strbuf_free(jr_strbuf *b);

/* A new string formatted like printf (caller frees); NULL when out of memory. */
char *jr_strfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
