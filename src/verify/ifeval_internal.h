/* ifeval_internal.h - helpers shared by the IFEval files: Python-compatible text primitives */
#ifndef JUDGERL_IFEVAL_INTERNAL_H
#define JUDGERL_IFEVAL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decodes one code point at s[*i] (len bytes in all) and advances *i. An invalid byte decodes as
 * 0xDC00 + byte (Python's surrogateescape), so every byte string has a decoding. */
uint32_t ifv_next_cp(const char *s, size_t len, size_t *i);
/* Decodes the whole string into a new array (caller frees); *n gets its length. NULL on ENOMEM. */
uint32_t *ifv_decode(const char *s, size_t len, size_t *n);

/* Python's str.isspace() for one code point. */
bool ifv_isspace(uint32_t c);
/* ASCII whitespace as Python's string.whitespace. */
bool ifv_isspace_ascii(uint32_t c);
/* Python's str.isupper()/islower()/istitle-part for one code point (cased checks). */
bool ifv_cp_upper(uint32_t c);
bool ifv_cp_lower(uint32_t c);
bool ifv_cp_title(uint32_t c);
/* Python re (str pattern) \w and \d. */
bool ifv_isword(uint32_t c);
bool ifv_isdigit(uint32_t c);
/* Simple lowercase mapping of one code point. */
uint32_t ifv_tolower(uint32_t c);

/* Python str.isupper()/str.islower() over a UTF-8 string. */
bool ifv_str_isupper(const char *s, size_t len);
bool ifv_str_islower(const char *s, size_t len);
/* Python str.strip(): sets [*b, *e) to the bytes of s without leading/trailing whitespace. */
void ifv_strip(const char *s, size_t len, size_t *b, size_t *e);
/* Python str.lower() into a new NUL-terminated string (caller frees); *outlen gets its length. */
char *ifv_lower(const char *s, size_t len, size_t *outlen);

/* Python json.loads(s) succeeds (syntax of the standard json module: any top-level value,
 * NaN/Infinity allowed, no trailing data). */
bool ifv_json_valid(const char *s, size_t len);

#endif
