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

/* s[0..n) with every occurrence of secret replaced by rep (new, length in *out_n), or NULL when
 * there is none or on allocation failure (*oom set). */
static char *replace_n(const char *s, size_t n, const char *secret, const char *rep, size_t *out_n, int *oom) {
    size_t kl = strlen(secret), rl = strlen(rep);
    if (kl < 4 || !memmem(s, n, secret, kl)) return NULL;
    size_t cap = n + 1, hits = 0;
    for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), secret, kl)); p += kl) hits++;
    if (rl > kl) cap += hits * (rl - kl);
    char *o = malloc(cap);
    if (!o) {
        *oom = 1;
        return NULL;
    }
    size_t w = 0, i = 0;
    for (const char *p; (p = memmem(s + i, n - i, secret, kl)); i = (size_t)(p - s) + kl) {
        memcpy(o + w, s + i, (size_t)(p - s) - i);
        w += (size_t)(p - s) - i;
        memcpy(o + w, rep, rl);
        w += rl;
    }
    memcpy(o + w, s + i, n - i);
    w += n - i;
    o[w] = 0;
    *out_n = w;
    return o;
}

int jr_redact_json(json_t *v, const char *secret) {
    if (!v || !secret || strlen(secret) < 4) return 0;
    int changed = 0, oom = 0;
    if (json_is_string(v)) {
        size_t n = 0;
        char *r = replace_n(json_string_value(v), json_string_length(v), secret, "[redacted]", &n, &oom);
        int hit = r || oom;
        if (r && json_string_setn_nocheck(v, r, n)) oom = 1;
        if (oom) json_string_set(v, "");
        free(r);
        return hit;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) changed += jr_redact_json(e, secret);
        return changed;
    }
    if (!json_is_object(v)) return 0;
    const char *k;
    json_t *e;
    void *tmp;
    json_t *renamed = NULL; /* {new key: value} of the keys quoting the secret */
    json_object_foreach_safe(v, tmp, k, e) {
        changed += jr_redact_json(e, secret);
        if (!strstr(k, secret)) continue;
        char *nk = jr_redacted_copy(k, secret);
        if (!renamed) renamed = json_object();
        if (nk && renamed) json_object_set(renamed, nk, e);
        free(nk);
        json_object_del(v, k);
        changed++;
    }
    if (renamed) json_object_update(v, renamed);
    json_decref(renamed);
    return changed;
}

typedef struct {
    size_t s, e;
} span;

/* Token i's text [a, b) of the concatenation cat with every key occurrence in occ rewritten: the
 * token holding an occurrence's first byte gets "[redacted]", its other bytes are dropped. */
static char *rewrite_token(const char *cat, size_t a, size_t b, const span *occ, size_t n_occ, size_t *out_n) {
    size_t cap = b - a + 1, w = 0, pos = a;
    for (size_t k = 0; k < n_occ; k++) cap += 10;
    char *o = malloc(cap);
    if (!o) return NULL;
    for (size_t k = 0; k < n_occ; k++) {
        if (occ[k].s >= b || occ[k].e <= a) continue;
        size_t upto = occ[k].s > a ? occ[k].s : a;
        if (upto > pos) {
            memcpy(o + w, cat + pos, upto - pos);
            w += upto - pos;
        }
        if (occ[k].s >= a) {
            memcpy(o + w, "[redacted]", 10);
            w += 10;
        }
        pos = occ[k].e < b ? occ[k].e : b;
    }
    if (b > pos) {
        memcpy(o + w, cat + pos, b - pos);
        w += b - pos;
    }
    o[w] = 0;
    *out_n = w;
    return o;
}

void jr_redact_logprobs(json_t *lps, const char *secret) {
    if (!json_is_array(lps) || !secret || strlen(secret) < 4) return;
    size_t n = json_array_size(lps), kl = strlen(secret), len = 0;
    size_t *at = calloc(n + 1, sizeof *at);
    char *cat = NULL;
    span *occ = NULL;
    size_t n_occ = 0;
    if (!at) goto rest;
    for (size_t i = 0; i < n; i++) {
        at[i] = len;
        len += json_string_length(json_object_get(json_array_get(lps, i), "token"));
    }
    at[n] = len;
    if (!(cat = malloc(len + 1))) goto rest;
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_object_get(json_array_get(lps, i), "token");
        memcpy(cat + at[i], json_string_value(t) ? json_string_value(t) : "", at[i + 1] - at[i]);
    }
    cat[len] = 0;
    for (const char *p = cat; (p = memmem(p, len - (size_t)(p - cat), secret, kl)); p += kl) n_occ++;
    if (!n_occ || !(occ = malloc(n_occ * sizeof *occ))) goto rest;
    n_occ = 0;
    for (const char *p = cat; (p = memmem(p, len - (size_t)(p - cat), secret, kl)); p += kl)
        occ[n_occ++] = (span){(size_t)(p - cat), (size_t)(p - cat) + kl};
    for (size_t i = 0, k = 0; i < n; i++) {
        while (k < n_occ && occ[k].e <= at[i]) k++;
        if (k == n_occ || occ[k].s >= at[i + 1]) continue; /* no occurrence covers token i */
        json_t *e = json_array_get(lps, i), *t = json_object_get(e, "token");
        size_t nl = 0;
        char *nt = rewrite_token(cat, at[i], at[i + 1], occ + k, n_occ - k, &nl);
        size_t j;
        json_t *alt;
        json_array_foreach(json_object_get(e, "top_logprobs"), j, alt) {
            json_t *at_tok = json_object_get(alt, "token");
            if (json_is_string(at_tok) && json_equal(at_tok, t))
                json_string_setn_nocheck(at_tok, nt ? nt : "", nt ? nl : 0);
        }
        if (json_is_string(t)) json_string_setn_nocheck(t, nt ? nt : "", nt ? nl : 0);
        free(nt);
    }
rest:
    free(at);
    free(cat);
    free(occ);
    jr_redact_json(lps, secret);
}

char *jr_redacted_body(const char *body, size_t len, const char *secret, size_t *out_len) {
    *out_len = 0;
    if (secret && strlen(secret) >= 4) {
        json_t *o = json_loadb(body, len, 0, NULL);
        if (json_is_object(o) && jr_redact_json(o, secret)) {
            char *d = json_dumps(o, JSON_COMPACT);
            json_decref(o);
            if (d) *out_len = strlen(d);
            return d;
        }
        json_decref(o);
    }
    char *c = malloc(len + 1);
    if (!c) return NULL;
    memcpy(c, body, len);
    c[len] = 0;
    *out_len = len;
    if (secret && strlen(secret) >= 4)
        for (char *p = c; (p = memmem(p, len - (size_t)(p - c), secret, strlen(secret))); p += strlen(secret))
            memset(p, '*', strlen(secret));
    return c;
}
