/* utf8.h - the one UTF-8 module: one character decoded or encoded, validity, lossy repair (U+FFFD
 * as Python's errors="replace"), and an incomplete character at the end of a stream */
#ifndef JUDGERL_UTF8_H
#define JUDGERL_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "judgerl/strbuf.h"

/* Length (1-4) a lead byte announces; 0 for a byte that cannot start a character (a continuation
 * byte, C0, C1, F5..FF). */
size_t jr_utf8_lead_len(unsigned char c);

/* The well-formed character at s[0..n): its length (1-4) with *cp set, or 0 (cp untouched) when s
 * starts with an invalid, overlong, surrogate (U+D800..DFFF), > U+10FFFF or truncated sequence. */
size_t jr_utf8_decode(const char *s, size_t n, uint32_t *cp);

/* Writes cp (at most U+10FFFF) to out (room for 4 bytes); returns its length. */
size_t jr_utf8_encode(uint32_t cp, char *out);

/* Offset of the first byte that is not part of a well-formed character (with reject_nul, also of
 * the first NUL byte); n when all of s is valid. */
size_t jr_utf8_invalid_at(const char *s, size_t n, int reject_nul);

/* Appends s with each maximal ill-formed subsequence replaced by U+FFFD (Unicode's "maximal
 * subpart" rule, what Python's bytes.decode(errors="replace") and HF's decode do). */
void jr_utf8_append_lossy(jr_strbuf *b, const char *s, size_t n);

/* Bytes at the end of s that begin a character still incomplete (a stream cut mid-character), 0
 * when s ends on a whole character; *missing (may be NULL) gets how many bytes it still needs. Only
 * the lead byte is looked at: whether the bytes can still become a valid character is not checked. */
size_t jr_utf8_incomplete_tail(const char *s, size_t n, size_t *missing);

#endif
