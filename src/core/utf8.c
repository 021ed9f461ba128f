/* utf8.c - the one UTF-8 module (utf8.h) */
#include "judgerl/utf8.h"

/* The range the second byte of a sequence led by c must fall in (excludes overlong forms,
 * surrogates and code points above U+10FFFF). */
static void second_range(unsigned c, unsigned *lo, unsigned *hi) {
    *lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80;
    *hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
}

/* Length of the longest prefix of s[0..n) (at most one character) that a valid character could
 * start with: the whole character when it is valid, else its maximal subpart (at least 1); *need
 * gets the length the lead byte announces (0: none). */
static size_t valid_prefix(const unsigned char *s, size_t n, size_t *need) {
    *need = jr_utf8_lead_len(s[0]);
    if (*need <= 1) return 1;
    size_t k = 1;
    for (; k < *need && k < n; k++) {
        unsigned lo = 0x80, hi = 0xBF;
        if (k == 1) second_range(s[0], &lo, &hi);
        if (s[k] < lo || s[k] > hi) break;
    }
    return k;
}

size_t jr_utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12)); out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F)); return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18)); out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t jr_utf8_invalid_at(const char *s, size_t n, int reject_nul) {
    size_t i = 0;
    uint32_t cp;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        if (c == 0 && reject_nul) return i;
        if (c < 0x80) { i++; continue; }
        size_t l = jr_utf8_decode(s + i, n - i, &cp);
        if (!l) return i;
        i += l;
    }
    return n;
}

void jr_utf8_append_lossy(jr_strbuf *b, const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0;
    while (i < n) {
        if (u[i] < 0x80) { i++; continue; }
        size_t need, k = valid_prefix(u + i, n - i, &need);
        if (need && k == need) { i += k; continue; }
        if (i > run) jr_strbuf_addn(b, s + run, i - run);
        jr_strbuf_addn(b, "\xEF\xBF\xBD", 3);
        i += k;
        run = i;
    }
    if (n > run) jr_strbuf_addn(b, s + run, n - run);
}

size_t jr_utf8_incomplete_tail(const char *s, size_t n, size_t *missing) {
    if (missing) *missing = 0;
    for (size_t back = 1; back <= 4 && back <= n; back++) {
        const unsigned char *u = (const unsigned char *)s + n - back;
        if ((u[0] & 0xC0) == 0x80) continue;
        size_t need, k = valid_prefix(u, back, &need);
        if (need <= back || k < back) return 0; /* whole, or can never become a character */
        if (missing) *missing = need - back;
        return back;
    }
    return 0;
}
