/* ifeval_text.c - Python-compatible text primitives for the IFEval checkers: decoding, whitespace,
 * case, stripping, word counts, nltk-like word tokens and a json.loads-compatible validator */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "judgerl/ifeval.h"
#include "judgerl/utf8.h"
#include "verify/ifeval_internal.h"

uint32_t ifv_next_cp(const char *s, size_t len, size_t *i) {
    uint32_t cp;
    size_t l = jr_utf8_decode(s + *i, len - *i, &cp);
    if (!l) return 0xDC00u + (unsigned char)s[(*i)++]; /* an invalid byte, escaped as Python's surrogateescape */
    *i += l;
    return cp;
}

uint32_t *ifv_decode(const char *s, size_t len, size_t *n) {
    uint32_t *out = malloc((len + 1) * sizeof *out);
    if (!out) return NULL;
    size_t i = 0, k = 0;
    while (i < len) out[k++] = ifv_next_cp(s, len, &i);
    *n = k;
    return out;
}

bool ifv_utf8_valid(const char *s, size_t len) { return jr_utf8_invalid_at(s, len, 0) == len; }

char *ifv_utf8_sanitize(const char *s, size_t len, size_t *outlen) {
    char *o = malloc(len * 3 + 1);
    if (!o) return NULL;
    size_t i = 0, k = 0;
    while (i < len) {
        size_t at = i;
        uint32_t c = ifv_next_cp(s, len, &i);
        if (c >= 0xDC80 && c <= 0xDCFF && i == at + 1) {
            memcpy(o + k, "\xEF\xBF\xBD", 3);
            k += 3;
        } else {
            memcpy(o + k, s + at, i - at);
            k += i - at;
        }
    }
    o[k] = 0;
    *outlen = k;
    return o;
}

bool ifv_isspace(uint32_t c) {
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool ifv_isspace_ascii(uint32_t c) { return c == ' ' || (c >= 0x09 && c <= 0x0D); }

static int category(uint32_t c) {
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return UTF8PROC_CATEGORY_CN;
    return utf8proc_category((utf8proc_int32_t)c);
}

bool ifv_cp_upper(uint32_t c) {
    if (c < 0x80) return c >= 'A' && c <= 'Z';
    if ((c >= 0x2160 && c <= 0x216F) || (c >= 0x24B6 && c <= 0x24CF) || (c >= 0x1F130 && c <= 0x1F189)) return true;
    return category(c) == UTF8PROC_CATEGORY_LU;
}

bool ifv_cp_lower(uint32_t c) {
    if (c < 0x80) return c >= 'a' && c <= 'z';
    if (c == 0xAA || c == 0xBA || (c >= 0x2B0 && c <= 0x2B8) || c == 0x2C0 || c == 0x2C1 || (c >= 0x2E0 && c <= 0x2E4) ||
        c == 0x345 || c == 0x37A || (c >= 0x1D2C && c <= 0x1D6A) || c == 0x1D78 || (c >= 0x1D9B && c <= 0x1DBF) ||
        c == 0x2071 || c == 0x207F || (c >= 0x2090 && c <= 0x209C) || (c >= 0x2170 && c <= 0x217F) ||
        (c >= 0x24D0 && c <= 0x24E9) || c == 0x2C7C || c == 0x2C7D)
        return true;
    return category(c) == UTF8PROC_CATEGORY_LL;
}

bool ifv_cp_title(uint32_t c) { return c >= 0x80 && category(c) == UTF8PROC_CATEGORY_LT; }

bool ifv_isword(uint32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    int k = category(c);
    return (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_LO) ||
           (k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO);
}

bool ifv_isdigit(uint32_t c) {
    if (c < 0x80) return c >= '0' && c <= '9';
    return category(c) == UTF8PROC_CATEGORY_ND;
}

uint32_t ifv_tolower(uint32_t c) {
    if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return c;
    return (uint32_t)utf8proc_tolower((utf8proc_int32_t)c);
}

/* Python's str.isupper (upper=1) / str.islower (upper=0): every cased character has that case
 * and there is at least one. */
static bool str_case(const char *s, size_t len, int upper) {
    bool cased = false;
    size_t i = 0;
    while (i < len) {
        uint32_t c = ifv_next_cp(s, len, &i);
        bool up = ifv_cp_upper(c), lo = ifv_cp_lower(c), ti = ifv_cp_title(c);
        if (ti || (upper ? lo : up)) return false;
        if (upper ? up : lo) cased = true;
    }
    return cased;
}

bool ifv_str_isupper(const char *s, size_t len) { return str_case(s, len, 1); }
bool ifv_str_islower(const char *s, size_t len) { return str_case(s, len, 0); }

void ifv_strip(const char *s, size_t len, size_t *b, size_t *e) {
    size_t i = 0, start = len;
    while (i < len) {
        size_t at = i;
        if (!ifv_isspace(ifv_next_cp(s, len, &i))) { start = at; break; }
    }
    /* backwards from the end: find the last character's lead byte, decode it forwards */
    size_t end = len;
    while (end > start) {
        unsigned char c = (unsigned char)s[end - 1];
        if (c < 0x80) {
            if (!ifv_isspace(c)) break;
            end--;
            continue;
        }
        size_t p = end - 1;
        for (int k = 0; k < 3 && p > start && ((unsigned char)s[p] & 0xC0) == 0x80; k++) p--;
        size_t q = p;
        uint32_t cp = ifv_next_cp(s, len, &q);
        if (q != end || !ifv_isspace(cp)) break; /* not whitespace, or a stray continuation byte */
        end = p;
    }
    *b = start;
    *e = end;
}

static size_t put_utf8(char *o, uint32_t c) {
    if (c >= 0xDC80 && c <= 0xDCFF) { o[0] = (char)(c - 0xDC00); return 1; } /* an escaped invalid byte */
    return c <= 0x10FFFF ? jr_utf8_encode(c, o) : 0;
}

char *ifv_lower(const char *s, size_t len, size_t *outlen) {
    char *o = malloc(len * 2 + 8);
    if (!o) return NULL;
    size_t i = 0, k = 0;
    while (i < len) {
        uint32_t c = ifv_next_cp(s, len, &i);
        if (c == 0x130) { /* full lowercase of U+0130 is "i" + combining dot above */
            o[k++] = 'i';
            k += put_utf8(o + k, 0x307);
            continue;
        }
        k += put_utf8(o + k, ifv_tolower(c));
    }
    o[k] = 0;
    if (outlen) *outlen = k;
    return o;
}

size_t jr_ifeval_count_words(const char *text, size_t len) {
    size_t n = 0, i = 0;
    bool in = false;
    while (i < len) {
        bool w = ifv_isword(ifv_next_cp(text, len, &i));
        if (w && !in) n++;
        in = w;
    }
    return n;
}

/* ---- nltk.word_tokenize, as far as counting all-uppercase tokens needs it --------------------
 * A whitespace-separated chunk loses its leading opening quotes/brackets and its trailing
 * punctuation; what remains is split at the characters the Treebank tokenizer separates
 * (?!;@#$%&,:()[]{}<> and "--", "..."), and each piece loses its clitic ('s 'm 'd 'll 're 've n't
 * and a final '), which becomes a token of its own; "cannot", "gonna", "gotta", "gimme",
 * "lemme", "wanna" are two tokens. Tokens that pass Python's str.isupper() are counted. */

static bool is_upper_piece(const uint32_t *c, size_t n) {
    bool cased = false;
    for (size_t i = 0; i < n; i++) {
        if (ifv_cp_lower(c[i]) || ifv_cp_title(c[i])) return false;
        if (ifv_cp_upper(c[i])) cased = true;
    }
    return cased;
}

static bool ieq(const uint32_t *c, size_t n, const char *w) {
    size_t m = strlen(w);
    if (n != m) return false;
    for (size_t i = 0; i < n; i++)
        if (ifv_tolower(c[i]) != (uint32_t)w[i]) return false;
    return true;
}

/* Counts the all-uppercase tokens of one piece. Clitics are split off only when the piece is
 * followed by a space (`space_after`): the Treebank rules for them require one. */
static size_t count_upper_word(const uint32_t *c, size_t n, bool space_after) {
    if (!n) return 0;
    /* X'A -> X' A: an apostrophe before a single word character (not m t s d n) */
    for (size_t k = 1; k + 1 < n; k++)
        if (c[k] == '\'' && ifv_isword(c[k + 1]) && (k + 2 == n || !ifv_isword(c[k + 2])) &&
            !strchr("mtsdnMTSDN", (int)(c[k + 1] < 0x80 ? c[k + 1] : 'x')))
            return count_upper_word(c, k + 1, true) + count_upper_word(c + k + 1, n - k - 1, space_after);
    static const char *const pairs[][2] = {{"cannot", "can"}, {"gonna", "gon"}, {"gotta", "got"},
                                           {"gimme", "gim"}, {"lemme", "lem"}, {"wanna", "wan"}};
    for (size_t k = 0; k < sizeof pairs / sizeof *pairs; k++)
        if (ieq(c, n, pairs[k][0])) {
            size_t a = strlen(pairs[k][1]);
            return is_upper_piece(c, a) + is_upper_piece(c + a, n - a);
        }
    if (!space_after) return is_upper_piece(c, n);
    /* clitics: n't N'T 'll 'LL 're 'RE 've 'VE, 's 'm 'd in any case, a final ' */
    size_t cut = n;
    const uint32_t *t = c + n;
    if (n >= 4 && t[-2] == '\'' && ((t[-3] == 'n' && t[-1] == 't') || (t[-3] == 'N' && t[-1] == 'T')))
        cut = n - 3;
    else if (n >= 4 && t[-3] == '\'' &&
             ((t[-2] == 'l' && t[-1] == 'l') || (t[-2] == 'L' && t[-1] == 'L') || (t[-2] == 'r' && t[-1] == 'e') ||
              (t[-2] == 'R' && t[-1] == 'E') || (t[-2] == 'v' && t[-1] == 'e') || (t[-2] == 'V' && t[-1] == 'E')))
        cut = n - 3;
    else if (n >= 3 && t[-2] == '\'' && ieq(t - 1, 1, "s") + ieq(t - 1, 1, "m") + ieq(t - 1, 1, "d"))
        cut = n - 2;
    else if (n >= 2 && t[-1] == '\'')
        cut = n - 1;
    if (cut < n && cut > 0 && c[cut - 1] != '\'') return is_upper_piece(c, cut) + is_upper_piece(c + cut, n - cut);
    return is_upper_piece(c, n);
}

static bool split_char(uint32_t c) {
    if (c < 0x80) return c && strchr("?!;@#$%&*()[]{}<>\"`", (int)c);
    return c == 0xAB || c == 0xBB || c == 0x201C || c == 0x201D || c == 0x2018 || c == 0x2019 || c == 0x201E;
}

size_t jr_ifeval_count_capital_words(const char *text, size_t len) {
    size_t n;
    uint32_t *c = ifv_decode(text, len, &n);
    if (!c) return 0;
    size_t count = 0, i = 0;
    while (i < n) {
        while (i < n && ifv_isspace(c[i])) i++;
        size_t b = i;
        while (i < n && !ifv_isspace(c[i])) i++;
        size_t e = i;
        bool space_after = i == n || c[i] == ' ';
        /* trailing sentence period, commas, colons (the rest is split below) */
        while (e > b && (c[e - 1] == '.' || c[e - 1] == ',' || c[e - 1] == ':')) { e--; space_after = true; }
        size_t p = b, j = b;
        while (j < e) {
            size_t sep = 0;
            if (split_char(c[j])) sep = 1;
            else if ((c[j] == ',' || c[j] == ':') && !(j + 1 < e && ifv_isdigit(c[j + 1]))) sep = 1;
            else if ((c[j] == '-' || c[j] == '.') && j + 1 < e && c[j + 1] == c[j]) {
                sep = 2;
                while (j + sep < e && c[j + sep] == c[j]) sep++;
            }
            if (sep) {
                count += count_upper_word(c + p, j - p, true);
                j += sep;
                p = j;
            } else {
                j++;
            }
        }
        count += count_upper_word(c + p, e - p, space_after);
    }
    free(c);
    return count;
}

/* ---- json.loads validity ------------------------------------------------------------------ */

typedef struct {
    const unsigned char *s;
    size_t n, i;
    int depth;
} jscan;

static void jws(jscan *j) {
    while (j->i < j->n && (j->s[j->i] == ' ' || j->s[j->i] == '\t' || j->s[j->i] == '\n' || j->s[j->i] == '\r')) j->i++;
}

static bool jlit(jscan *j, const char *w) {
    size_t m = strlen(w);
    if (j->n - j->i < m || memcmp(j->s + j->i, w, m)) return false;
    j->i += m;
    return true;
}

static bool jstring(jscan *j) { /* at the opening quote */
    j->i++;
    while (j->i < j->n) {
        unsigned c = j->s[j->i];
        if (c == '"') { j->i++; return true; }
        if (c < 0x20) return false;
        if (c == '\\') {
            if (++j->i >= j->n) return false;
            c = j->s[j->i];
            if (c == 'u') {
                for (int k = 1; k <= 4; k++)
                    if (j->i + (size_t)k >= j->n || !strchr("0123456789abcdefABCDEF", j->s[j->i + (size_t)k]) ||
                        !j->s[j->i + (size_t)k])
                        return false;
                j->i += 5;
                continue;
            }
            if (!strchr("\"\\/bfnrt", (int)c) || !c) return false;
        }
        j->i++;
    }
    return false;
}

static bool jdigits(jscan *j) {
    size_t s = j->i;
    while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9') j->i++;
    return j->i > s;
}

static bool jvalue(jscan *j) {
    if (j->i >= j->n) return false;
    unsigned c = j->s[j->i];
    if (c == '"') return jstring(j);
    if (c == '{' || c == '[') {
        if (++j->depth > 5000) return false;
        j->i++;
        jws(j);
        char close = c == '{' ? '}' : ']';
        if (j->i < j->n && j->s[j->i] == close) { j->i++; j->depth--; return true; }
        for (;;) {
            if (c == '{') {
                if (j->i >= j->n || j->s[j->i] != '"' || !jstring(j)) return false;
                jws(j);
                if (j->i >= j->n || j->s[j->i] != ':') return false;
                j->i++;
                jws(j);
            }
            if (!jvalue(j)) return false;
            jws(j);
            if (j->i >= j->n) return false;
            if (j->s[j->i] == close) { j->i++; j->depth--; return true; }
            if (j->s[j->i] != ',') return false;
            j->i++;
            jws(j);
        }
    }
    if (c == 'n') return jlit(j, "null");
    if (c == 't') return jlit(j, "true");
    if (c == 'f') return jlit(j, "false");
    if (c == 'N') return jlit(j, "NaN");
    if (c == 'I') return jlit(j, "Infinity");
    if (c == '-' && jlit(j, "-Infinity")) return true;
    if (c == '-' || (c >= '0' && c <= '9')) {
        if (c == '-') j->i++;
        if (j->i >= j->n) return false;
        if (j->s[j->i] == '0') j->i++;
        else if (!jdigits(j)) return false;
        if (j->i + 1 < j->n && j->s[j->i] == '.' && j->s[j->i + 1] >= '0' && j->s[j->i + 1] <= '9') {
            j->i++;
            jdigits(j);
        }
        if (j->i < j->n && (j->s[j->i] == 'e' || j->s[j->i] == 'E')) {
            size_t save = j->i++;
            if (j->i < j->n && (j->s[j->i] == '+' || j->s[j->i] == '-')) j->i++;
            if (!jdigits(j)) j->i = save;
        }
        return true;
    }
    return false;
}

bool ifv_json_valid(const char *s, size_t len) {
    if (len >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3)) return false;
    jscan j = {(const unsigned char *)s, len, 0, 0};
    jws(&j);
    if (!jvalue(&j)) return false;
    jws(&j);
    return j.i == j.n;
}
