/* utf8.h - the one UTF-8 module: one character decoded or encoded, validity, lossy repair (U+FFFD
 * as Python's errors="replace"), and an incomplete character at the end of a stream */
#ifndef JUDGERL_UTF8_H
#define JUDGERL_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "judgerl/strbuf.h"

/* Length (1-4) a lead byte announces; 0 for a byte that cannot start a character (a continuation
 * byte, C0, C1, F5..FF). */
static inline size_t jr_utf8_lead_len(unsigned char c) {
    return c < 0x80 ? 1 : (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
}

/* The well-formed character at s[0..n): its length (1-4) with *cp set, or 0 (cp untouched) when s
 * starts with an invalid, overlong, surrogate (U+D800..DFFF), > U+10FFFF or truncated sequence.
 * Inline: tokenizers decode every character of a vocabulary with it. */
static inline size_t jr_utf8_decode(const char *s, size_t n, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    if (!n) return 0;
    if (u[0] < 0x80) { *cp = u[0]; return 1; }
    size_t len = jr_utf8_lead_len(u[0]);
    if (!len || len > n) return 0;
    uint32_t v = u[0] & (0xFFu >> (len + 1));
    for (size_t i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (u[i] & 0x3F);
    }
    if ((len == 3 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) || (len == 4 && (v < 0x10000 || v > 0x10FFFF))) return 0;
    *cp = v;
    return len;
}

/* Writes cp (at most U+10FFFF) to out (room for 4 bytes); returns its length. */
size_t jr_utf8_encode(uint32_t cp, char *out);

/* Offset of the first byte that is not part of a well-formed character (with reject_nul, also of
 * the first NUL byte); n when all of s is valid. */
size_t jr_utf8_invalid_at(const char *s, size_t n, int reject_nul);

/* Appends s with each maximal ill-formed subsequence replaced by U+FFFD (Unicode's "maximal
 * subpart" rule, what Python's bytes.decode(errors="replace") and HF's decode do). */
void jr_utf8_append_lossy(jr_strbuf *b, const char *s, size_t n);

/* Bytes at the end of s that begin a character still incomplete but so far well-formed (a stream cut
 * mid-character: what to hold back until more bytes come), 0 when s ends on a whole character or on
 * bytes that can never become one (those are final: "\xE0\x80", "\xED\xA0", "\xF8"); *missing (may be
 * NULL) gets how many bytes it still needs. */
size_t jr_utf8_incomplete_tail(const char *s, size_t n, size_t *missing);

#endif
