/* redact.c - the API key out of every text the judge client stores or prints */
#include "judge/redact.h"

#include <stdlib.h>
#include <string.h>

char *jr_redact_secret(char *s, const char *secret) {
    if (!s || !secret || strlen(secret) < 4) return s;
    size_t kl = strlen(secret);
    const char *rep = "[redacted]";
    size_t rl = strlen(rep);
    char *hit;
    size_t from = 0;
    while ((hit = strstr(s + from, secret))) {
        size_t off = (size_t)(hit - s), tail = strlen(hit + kl);
        if (rl > kl) {
            char *n = realloc(s, off + rl + tail + 1);
            if (!n) { memset(hit, '*', kl); from = off + kl; continue; }
            s = n;
            hit = s + off;
        }
        memmove(hit + rl, hit + kl, tail + 1);
        memcpy(hit, rep, rl);
        from = off + rl;
    }
    return s;
}

char *jr_redacted_copy(const char *s, const char *secret) {
    if (!s) return NULL;
    char *c = strdup(s);
    return c ? jr_redact_secret(c, secret) : NULL;
}
