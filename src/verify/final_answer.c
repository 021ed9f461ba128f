/* final_answer.c - GSM8K-aware final-answer extraction and match: "#### N", \boxed{}, "the answer
 * is", else the last number of the response */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/verify.h"

/* Length of a number at s: optional '-', digits with thousands commas (1,234), optional decimals.
 * 0 when s does not start one. */
static size_t number_at(const char *s) {
    size_t i = 0;
    if (s[i] == '-') i++;
    if (!isdigit((unsigned char)s[i])) return 0;
    while (isdigit((unsigned char)s[i]) ||
           (s[i] == ',' && isdigit((unsigned char)s[i + 1]) && isdigit((unsigned char)s[i + 2]) &&
            isdigit((unsigned char)s[i + 3]) && !isdigit((unsigned char)s[i + 4])))
        i++;
    if (s[i] == '.' && isdigit((unsigned char)s[i + 1])) {
        i++;
        while (isdigit((unsigned char)s[i])) i++;
    }
    return i;
}

/* The first (last = 0) or last (last = 1) number in s, as a new string, or NULL. */
static char *find_number(const char *s, int last) {
    const char *best = NULL;
    size_t best_n = 0;
    for (const char *p = s; *p;) {
        int starts = p == s || !(isalnum((unsigned char)p[-1]) || p[-1] == '.' || p[-1] == '-');
        size_t n = starts ? number_at(p) : 0;
        if (n) {
            best = p;
            best_n = n;
            if (!last) break;
            p += n;
        } else p++;
    }
    if (!best) return NULL;
    char *r = malloc(best_n + 1);
    if (!r) return NULL;
    memcpy(r, best, best_n);
    r[best_n] = 0;
    return r;
}

/* What follows the last "#### " of s, to the end of its line (new string), or NULL. */
static char *after_hashes(const char *s) {
    const char *h = NULL;
    for (const char *p = strstr(s, "####"); p; p = strstr(p + 1, "####")) h = p;
    if (!h) return NULL;
    h += 4;
    while (*h == ' ' || *h == '\t') h++;
    size_t n = strcspn(h, "\n");
    while (n && (h[n - 1] == ' ' || h[n - 1] == '\r')) n--;
    char *r = malloc(n + 1);
    if (!r) return NULL;
    memcpy(r, h, n);
    r[n] = 0;
    return r;
}

char *jr_answer_extract_final(const char *response) {
    if (!response) return strdup("");
    char *a = after_hashes(response);
    if (a && *a) return a;
    free(a);
    char *e = jr_answer_extract(response);
    if (!e || strcmp(e, response)) return e; /* \boxed{} or "answer is" / "Answer:" found */
    char *num = find_number(response, 1);
    if (num) { free(e); return num; }
    return e;
}

int jr_answer_final_match(const char *response, const char *reference, char **got) {
    if (got) *got = NULL;
    char *ref = after_hashes(reference);
    const char *r = ref && *ref ? ref : reference;
    char *g = jr_answer_extract_final(response);
    int eq = g && jr_answer_equiv(g, r);
    if (g && !eq) { /* "$18 per day." against 18: the first number of the extracted answer */
        char *rn = jr_answer_normalize(r);
        double v;
        int pct;
        if (rn && jr_answer_number(rn, &v, &pct)) {
            char *n = find_number(g, 0);
            eq = n && jr_answer_equiv(n, r);
            free(n);
        }
        free(rn);
    }
    free(ref);
    if (got) *got = g;
    else free(g);
    return eq;
}
