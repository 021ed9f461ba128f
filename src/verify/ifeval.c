/* ifeval.c - the 25 IFEval instruction checkers with the official semantics, their kwargs, and
 * the strict/loose drivers (docs/IFEVAL.md) */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/ifeval.h"
#include "verify/ifeval_internal.h"

/* ---- regular expressions (Python `re` semantics through PCRE2 in UTF + UCP mode) ---------- */

typedef struct {
    size_t b, e;
} span;

static pcre2_code *re_compile(const char *pat, uint32_t opts, int *err, size_t *erroff) {
    size_t n = strlen(pat);
    char *full = malloc(n + 8);
    if (!full) return NULL;
    memcpy(full, "(*LF)", 5); /* '.', '^', '$' and \N treat only '\n' as a newline, as Python does */
    memcpy(full + 5, pat, n + 1);
    PCRE2_SIZE off = 0;
    int e = 0;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)full, PCRE2_ZERO_TERMINATED,
                                   opts | PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | PCRE2_ALT_CIRCUMFLEX, &e,
                                   &off, NULL);
    free(full);
    if (err) *err = e;
    if (erroff) *erroff = off > 5 ? off - 5 : 0;
    return re;
}

/* Non-overlapping matches from the start (Python's finditer). Calls fn for each unless fn is
 * NULL; returns the number of matches (stops early when fn returns false). */
static size_t re_each(const pcre2_code *re, const char *s, size_t len, bool (*fn)(void *, span), void *arg) {
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md) return 0;
    size_t count = 0, at = 0;
    while (at <= len) {
        int rc = pcre2_match(re, (PCRE2_SPTR)s, len, at, 0, md, NULL);
        if (rc < 0) break;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        span sp = {ov[0], ov[1]};
        count++;
        if (fn && !fn(arg, sp)) break;
        if (sp.e > sp.b) {
            at = sp.e;
        } else {
            if (sp.e >= len) break;
            size_t i = sp.e;
            ifv_next_cp(s, len, &i);
            at = i;
        }
    }
    pcre2_match_data_free(md);
    return count;
}

static bool re_search(const pcre2_code *re, const char *s, size_t len) {
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md) return false;
    int rc = pcre2_match(re, (PCRE2_SPTR)s, len, 0, 0, md, NULL);
    pcre2_match_data_free(md);
    return rc >= 0;
}

/* Fixed patterns of the official checkers, compiled once. */
enum { P_PLACEHOLDER, P_BULLET_STAR, P_BULLET_DASH, P_HIGHLIGHT, P_HIGHLIGHT2, P_PARAGRAPH, P_TITLE, P_PS_PPS, P_PS_PS, P_COUNT };
static const char *const fixed_src[P_COUNT] = {
    "\\[.*?\\]", "^\\s*\\*[^\\*].*$", "^\\s*-.*$", "\\*[^\\n\\*]*\\*", "\\*\\*[^\\n\\*]*\\*\\*",
    "\\s?\\*\\*\\*\\s?", "<<[^\\n]+>>", "\\s*p\\.\\s?p\\.\\s?s.*$", "\\s*p\\.\\s?s\\..*$",
};
static const uint32_t fixed_opts[P_COUNT] = {0, PCRE2_MULTILINE, PCRE2_MULTILINE, 0, 0, 0, 0, PCRE2_MULTILINE, PCRE2_MULTILINE};
static pcre2_code *fixed[P_COUNT];
static pthread_once_t fixed_once = PTHREAD_ONCE_INIT;

static void compile_fixed(void) {
    for (int i = 0; i < P_COUNT; i++) fixed[i] = re_compile(fixed_src[i], fixed_opts[i], NULL, NULL);
}

static const pcre2_code *pat(int which) {
    pthread_once(&fixed_once, compile_fixed);
    return fixed[which];
}

/* ---- instructions and kwargs ------------------------------------------------------------- */

typedef enum { K_INT, K_STR, K_LIST, K_REL } kwtype;

typedef struct {
    const char *name;
    kwtype type;
} kwspec;

struct jr_ifeval_instr;
typedef bool (*check_fn)(const struct jr_ifeval_instr *, const char *, size_t);

typedef struct {
    const char *id;
    check_fn check;
    kwspec kw[3];
} ispec;

struct jr_ifeval_instr {
    const ispec *spec;
    long num[3];          /* integer kwargs, in spec order */
    int rel[3];           /* relation kwargs: 0 "less than", 1 "at least" */
    char *str[3];         /* string kwargs */
    char **list;          /* the list kwarg */
    size_t nlist;
    pcre2_code **re;      /* compiled kwarg-dependent patterns */
    size_t nre;
    uint32_t letter;
};

/* index of the first kwarg of a type */
static int kwi(const struct jr_ifeval_instr *ins, kwtype t, int nth) {
    for (int i = 0; i < 3 && ins->spec->kw[i].name; i++)
        if (ins->spec->kw[i].type == t && nth-- == 0) return i;
    return 0;
}
#define NUM(ins, k) ((ins)->num[kwi(ins, K_INT, k)])
#define REL(ins) ((ins)->rel[kwi(ins, K_REL, 0)])
#define STR(ins) ((ins)->str[kwi(ins, K_STR, 0)])

static bool compare(long actual, int rel, long threshold) { return rel ? actual >= threshold : actual < threshold; }

/* ---- the checkers (check_following of the official instructions) -------------------------- */

static bool ck_language(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    char code[16];
    if (!jr_ifeval_detect_language(v, n, code)) return true; /* detection failed: counted as followed */
    return !strcmp(code, STR(ins));
}

static bool ck_sentences(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    return compare((long)jr_ifeval_count_sentences(v, n), REL(ins), NUM(ins, 0));
}

static bool ck_placeholders(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    return (long)re_each(pat(P_PLACEHOLDER), v, n, NULL, NULL) >= NUM(ins, 0);
}

static bool ck_bullets(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    size_t k = re_each(pat(P_BULLET_STAR), v, n, NULL, NULL) + re_each(pat(P_BULLET_DASH), v, n, NULL, NULL);
    return (long)k == NUM(ins, 0);
}

static bool ck_constrained(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    (void)ins;
    size_t b, e;
    ifv_strip(v, n, &b, &e);
    static const char *const opts[] = {"My answer is yes.", "My answer is no.", "My answer is maybe."};
    for (int i = 0; i < 3; i++)
        if (memmem(v + b, e - b, opts[i], strlen(opts[i]))) return true;
    return false;
}

typedef struct {
    const char *s;
    size_t count;
    int dbl;
} hl_ctx;

static bool hl_one(void *arg, span sp) {
    hl_ctx *h = arg;
    size_t b = sp.b, e = sp.e;
    if (h->dbl) { b += 2; e -= 2; }
    else {
        while (b < e && h->s[b] == '*') b++;
        while (e > b && h->s[e - 1] == '*') e--;
    }
    size_t sb, se;
    ifv_strip(h->s + b, e - b, &sb, &se);
    if (se > sb) h->count++;
    return true;
}

static bool ck_highlights(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    hl_ctx h = {v, 0, 0};
    re_each(pat(P_HIGHLIGHT), v, n, hl_one, &h);
    h.dbl = 1;
    re_each(pat(P_HIGHLIGHT2), v, n, hl_one, &h);
    return (long)h.count >= NUM(ins, 0);
}

static bool ck_sections(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    /* len(re.split(pattern, value)) - 1 == number of matches */
    return (long)re_each(ins->re[0], v, n, NULL, NULL) >= NUM(ins, 0);
}

typedef struct {
    const char *s;
    size_t len, prev, npieces, nonempty;
    bool bad_middle;
    size_t last_b, last_e; /* the most recent piece */
    bool have_last;
    bool pending_empty;    /* an empty piece that is not known yet to be the last */
} para_ctx;

static void para_piece(para_ctx *p, size_t b, size_t e) {
    size_t sb, se;
    ifv_strip(p->s + b, e - b, &sb, &se);
    bool empty = se == sb;
    if (p->pending_empty) p->bad_middle = true; /* an empty piece followed by another piece */
    p->pending_empty = false;
    if (empty) {
        if (p->npieces == 0) { /* first piece: dropped */ }
        else p->pending_empty = true;
    } else {
        p->nonempty++;
    }
    p->npieces++;
}

static bool para_split(void *arg, span sp) {
    para_ctx *p = arg;
    para_piece(p, p->prev, sp.b);
    p->prev = sp.e;
    return true;
}

static bool ck_paragraphs(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    para_ctx p = {.s = v, .len = n};
    re_each(pat(P_PARAGRAPH), v, n, para_split, &p);
    para_piece(&p, p.prev, n);
    if (p.bad_middle) return false;
    return (long)p.nonempty == NUM(ins, 0);
}

static bool ck_postscript(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    size_t ln;
    char *low = ifv_lower(v, n, &ln);
    if (!low) return false;
    const char *m = STR(ins);
    const pcre2_code *re = !strcmp(m, "P.P.S") ? pat(P_PS_PPS) : !strcmp(m, "P.S.") ? pat(P_PS_PS) : ins->re[0];
    bool r = re_search(re, low, ln);
    free(low);
    return r;
}

static bool ck_keywords(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    for (size_t i = 0; i < ins->nre; i++)
        if (!re_search(ins->re[i], v, n)) return false;
    return true;
}

static bool ck_frequency(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    return compare((long)re_each(ins->re[0], v, n, NULL, NULL), REL(ins), NUM(ins, 0));
}

static bool ck_words(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    return compare((long)jr_ifeval_count_words(v, n), REL(ins), NUM(ins, 0));
}

static bool ck_json(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    (void)ins;
    size_t b, e;
    ifv_strip(v, n, &b, &e);
    const char *s = v + b;
    size_t len = e - b;
    static const char *const pre[] = {"```json", "```Json", "```JSON", "```"};
    for (int i = 0; i < 4; i++) {
        size_t k = strlen(pre[i]);
        if (len >= k && !memcmp(s, pre[i], k)) { s += k; len -= k; }
    }
    if (len >= 3 && !memcmp(s + len - 3, "```", 3)) len -= 3;
    ifv_strip(s, len, &b, &e);
    return ifv_json_valid(s + b, e - b);
}

static bool ck_first_word(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    long want_paras = NUM(ins, 0), nth = NUM(ins, 1);
    /* re.split(r"\n\n", value) */
    size_t npieces = 1;
    for (size_t i = 0; i + 1 < n; i++)
        if (v[i] == '\n' && v[i + 1] == '\n') { npieces++; i++; }
    size_t *pb = malloc((npieces + 1) * sizeof *pb), *pe = malloc((npieces + 1) * sizeof *pe);
    if (!pb || !pe) { free(pb); free(pe); return false; }
    size_t k = 0, start = 0;
    for (size_t i = 0; i + 1 < n; i++)
        if (v[i] == '\n' && v[i + 1] == '\n') { pb[k] = start; pe[k] = i; k++; start = i + 2; i++; }
    pb[k] = start;
    pe[k] = n;
    k++;
    long num = (long)k;
    for (size_t i = 0; i < k; i++) {
        size_t sb, se;
        ifv_strip(v + pb[i], pe[i] - pb[i], &sb, &se);
        if (se == sb) num--;
    }
    bool ok = false;
    if (nth <= num) {
        size_t sb, se;
        const char *p = v + pb[nth - 1];
        ifv_strip(p, pe[nth - 1] - pb[nth - 1], &sb, &se);
        if (se > sb) {
            /* first whitespace-separated word, without leading ' then ", cut at punctuation */
            const char *w = p + sb;
            size_t wl = 0, i = 0, lim = se - sb;
            while (i < lim) {
                size_t at = i;
                if (ifv_isspace(ifv_next_cp(w, lim, &i))) break;
                wl = i;
                (void)at;
            }
            size_t a = 0;
            while (a < wl && w[a] == '\'') a++;
            while (a < wl && w[a] == '"') a++;
            size_t cut = a;
            while (cut < wl && !strchr(".,?!'\"", w[cut])) {
                ifv_next_cp(w, wl, &cut);
            }
            size_t fl;
            char *first = ifv_lower(w + a, cut - a, &fl);
            ok = first && num == want_paras && !strcmp(first, STR(ins));
            free(first);
        }
    }
    free(pb);
    free(pe);
    return ok;
}

static bool ck_forbidden(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    for (size_t i = 0; i < ins->nre; i++)
        if (re_search(ins->re[i], v, n)) return false;
    return true;
}

static bool ck_two_responses(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    (void)ins;
    /* value.split("******") */
    size_t nvalid = 0, vb[2] = {0, 0}, ve[2] = {0, 0};
    size_t start = 0, idx = 0;
    size_t npieces = 1;
    for (size_t i = 0; i + 6 <= n;) {
        if (!memcmp(v + i, "******", 6)) { npieces++; i += 6; }
        else i++;
    }
    for (size_t i = 0;; ) {
        size_t end = n;
        const char *hit = NULL;
        for (size_t j = i; j + 6 <= n; j++)
            if (!memcmp(v + j, "******", 6)) { hit = v + j; break; }
        if (hit) end = (size_t)(hit - v);
        start = i;
        size_t sb, se;
        ifv_strip(v + start, end - start, &sb, &se);
        if (se == sb) {
            if (idx != 0 && idx != npieces - 1) return false;
        } else {
            if (nvalid < 2) { vb[nvalid] = start + sb; ve[nvalid] = start + se; }
            nvalid++;
        }
        idx++;
        if (!hit) break;
        i = end + 6;
    }
    return nvalid == 2 && !(ve[0] - vb[0] == ve[1] - vb[1] && !memcmp(v + vb[0], v + vb[1], ve[0] - vb[0]));
}

static bool ck_repeat_prompt(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    size_t b, e, pb, pe;
    ifv_strip(v, n, &b, &e);
    const char *p = STR(ins);
    ifv_strip(p, strlen(p), &pb, &pe);
    size_t ln, lp;
    char *lv = ifv_lower(v + b, e - b, &ln), *lpr = ifv_lower(p + pb, pe - pb, &lp);
    bool ok = lv && lpr && ln >= lp && !memcmp(lv, lpr, lp);
    free(lv);
    free(lpr);
    return ok;
}

static bool ck_end(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    size_t b, e;
    ifv_strip(v, n, &b, &e);
    while (b < e && v[b] == '"') b++;
    while (e > b && v[e - 1] == '"') e--;
    size_t ln, lp;
    char *lv = ifv_lower(v + b, e - b, &ln);
    const char *p = STR(ins);
    size_t pb, pe;
    ifv_strip(p, strlen(p), &pb, &pe);
    char *lpr = ifv_lower(p + pb, pe - pb, &lp);
    bool ok = lv && lpr && ln >= lp && !memcmp(lv + ln - lp, lpr, lp);
    free(lv);
    free(lpr);
    return ok;
}

typedef struct {
    const char *s;
    bool found;
} title_ctx;

static bool title_one(void *arg, span sp) {
    title_ctx *t = arg;
    size_t b = sp.b, e = sp.e;
    while (b < e && t->s[b] == '<') b++;
    while (e > b && t->s[e - 1] == '>') e--;
    size_t sb, se;
    ifv_strip(t->s + b, e - b, &sb, &se);
    if (se > sb) t->found = true;
    return !t->found; /* stop at the first non-empty title */
}

static bool ck_title(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    (void)ins;
    title_ctx t = {v, false};
    re_each(pat(P_TITLE), v, n, title_one, &t);
    return t.found;
}

static bool ck_letter(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    long count = 0;
    size_t i = 0;
    while (i < n) {
        uint32_t c = ifv_next_cp(v, n, &i);
        if (c == 0x130 ? ins->letter == 'i' : ifv_tolower(c) == ins->letter) count++;
    }
    return compare(count, REL(ins), NUM(ins, 0));
}

static bool ck_capital(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    (void)ins;
    if (!ifv_str_isupper(v, n)) return false;
    char code[16];
    return !jr_ifeval_detect_language(v, n, code) || !strcmp(code, "en");
}

static bool ck_lowercase(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    (void)ins;
    if (!ifv_str_islower(v, n)) return false;
    char code[16];
    return !jr_ifeval_detect_language(v, n, code) || !strcmp(code, "en");
}

static bool ck_no_comma(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    (void)ins;
    return !memchr(v, ',', n);
}

static bool ck_capital_words(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    return compare((long)jr_ifeval_count_capital_words(v, n), REL(ins), NUM(ins, 0));
}

static bool ck_quotation(const struct jr_ifeval_instr *ins, const char *v, size_t n) {
    (void)ins;
    size_t b, e;
    ifv_strip(v, n, &b, &e);
    return e - b >= 2 && v[b] == '"' && v[e - 1] == '"';
}

static const ispec specs[JR_IFEVAL_N_INSTRUCTIONS] = {
    {"keywords:existence", ck_keywords, {{"keywords", K_LIST}}},
    {"keywords:frequency", ck_frequency, {{"keyword", K_STR}, {"frequency", K_INT}, {"relation", K_REL}}},
    {"keywords:forbidden_words", ck_forbidden, {{"forbidden_words", K_LIST}}},
    {"keywords:letter_frequency", ck_letter, {{"letter", K_STR}, {"let_frequency", K_INT}, {"let_relation", K_REL}}},
    {"language:response_language", ck_language, {{"language", K_STR}}},
    {"length_constraints:number_sentences", ck_sentences, {{"num_sentences", K_INT}, {"relation", K_REL}}},
    {"length_constraints:number_paragraphs", ck_paragraphs, {{"num_paragraphs", K_INT}}},
    {"length_constraints:number_words", ck_words, {{"num_words", K_INT}, {"relation", K_REL}}},
    {"length_constraints:nth_paragraph_first_word", ck_first_word,
     {{"num_paragraphs", K_INT}, {"nth_paragraph", K_INT}, {"first_word", K_STR}}},
    {"detectable_content:number_placeholders", ck_placeholders, {{"num_placeholders", K_INT}}},
    {"detectable_content:postscript", ck_postscript, {{"postscript_marker", K_STR}}},
    {"detectable_format:number_bullet_lists", ck_bullets, {{"num_bullets", K_INT}}},
    {"detectable_format:constrained_response", ck_constrained, {{0}}},
    {"detectable_format:number_highlighted_sections", ck_highlights, {{"num_highlights", K_INT}}},
    {"detectable_format:multiple_sections", ck_sections, {{"section_spliter", K_STR}, {"num_sections", K_INT}}},
    {"detectable_format:json_format", ck_json, {{0}}},
    {"detectable_format:title", ck_title, {{0}}},
    {"combination:two_responses", ck_two_responses, {{0}}},
    {"combination:repeat_prompt", ck_repeat_prompt, {{"prompt_to_repeat", K_STR}}},
    {"startend:end_checker", ck_end, {{"end_phrase", K_STR}}},
    {"startend:quotation", ck_quotation, {{0}}},
    {"change_case:capital_word_frequency", ck_capital_words, {{"capital_frequency", K_INT}, {"capital_relation", K_REL}}},
    {"change_case:english_capital", ck_capital, {{0}}},
    {"change_case:english_lowercase", ck_lowercase, {{0}}},
    {"punctuation:no_comma", ck_no_comma, {{0}}},
};

const char *jr_ifeval_instruction_name(int i) {
    return i >= 0 && i < JR_IFEVAL_N_INSTRUCTIONS ? specs[i].id : NULL;
}

static const ispec *find_spec(const char *id) {
    for (int i = 0; i < JR_IFEVAL_N_INSTRUCTIONS; i++)
        if (!strcmp(specs[i].id, id)) return &specs[i];
    return NULL;
}

int jr_ifeval_instruction_known(const char *id) { return id && find_spec(id) != NULL; }

const char *jr_ifeval_instr_id(const jr_ifeval_instr *ins) { return ins->spec->id; }

void jr_ifeval_instr_free(jr_ifeval_instr *ins) {
    if (!ins) return;
    for (int i = 0; i < 3; i++) free(ins->str[i]);
    for (size_t i = 0; i < ins->nlist; i++) free(ins->list[i]);
    free(ins->list);
    for (size_t i = 0; i < ins->nre; i++) pcre2_code_free(ins->re[i]);
    free(ins->re);
    free(ins);
}

static const char *json_type_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* Python's str.strip() into a new string */
static char *strip_dup(const char *s) {
    size_t b, e;
    ifv_strip(s, strlen(s), &b, &e);
    char *o = malloc(e - b + 1);
    if (!o) return NULL;
    memcpy(o, s + b, e - b);
    o[e - b] = 0;
    return o;
}

static jr_status add_re(jr_ifeval_instr *ins, const char *id, const char *kw, const char *src, const char *pattern,
                        uint32_t opts) {
    int err = 0;
    size_t off = 0;
    pcre2_code *re = re_compile(pattern, opts, &err, &off);
    if (!re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(err, msg, sizeof msg);
        return jr_fail(JR_EINVAL, "%s: kwarg %s=\"%s\" is not a valid pattern (%s)", id, kw, src, (char *)msg);
    }
    pcre2_code **nr = realloc(ins->re, (ins->nre + 1) * sizeof *nr);
    if (!nr) { pcre2_code_free(re); return jr_fail(JR_ENOMEM, "%s: out of memory", id); }
    ins->re = nr;
    ins->re[ins->nre++] = re;
    return JR_OK;
}

static size_t cp_len(const char *s) {
    size_t n = strlen(s), i = 0, k = 0;
    while (i < n) { ifv_next_cp(s, n, &i); k++; }
    return k;
}

/* the kwarg-dependent parts of an instruction, once its kwargs are read */
static jr_status finish(jr_ifeval_instr *ins) {
    const char *id = ins->spec->id;
    const ispec *sp = ins->spec;
    if (sp->check == ck_keywords || sp->check == ck_forbidden) {
        for (size_t i = 0; i < ins->nlist; i++) {
            const char *w = ins->list[i];
            char *p = malloc(strlen(w) + 8);
            if (!p) return jr_fail(JR_ENOMEM, "%s: out of memory", id);
            if (sp->check == ck_forbidden) sprintf(p, "\\b%s\\b", w);
            else strcpy(p, w);
            jr_status st = add_re(ins, id, sp->kw[0].name, w, p, PCRE2_CASELESS);
            free(p);
            if (st) return st;
        }
    } else if (sp->check == ck_frequency) {
        char *k = strip_dup(STR(ins));
        if (!k) return jr_fail(JR_ENOMEM, "%s: out of memory", id);
        free(ins->str[0]);
        ins->str[0] = k;
        if (!*k) return jr_fail(JR_EINVAL, "%s: kwarg keyword must not be empty", id);
        return add_re(ins, id, "keyword", k, k, PCRE2_CASELESS);
    } else if (sp->check == ck_sections) {
        char *k = strip_dup(STR(ins));
        if (!k) return jr_fail(JR_ENOMEM, "%s: out of memory", id);
        free(ins->str[0]);
        ins->str[0] = k;
        if (!*k) return jr_fail(JR_EINVAL, "%s: kwarg section_spliter must not be empty", id);
        char *p = malloc(strlen(k) + 16);
        if (!p) return jr_fail(JR_ENOMEM, "%s: out of memory", id);
        sprintf(p, "\\s?%s\\s?\\d+\\s?", k);
        jr_status st = add_re(ins, id, "section_spliter", k, p, 0);
        free(p);
        return st;
    } else if (sp->check == ck_postscript) {
        char *k = strip_dup(STR(ins));
        if (!k) return jr_fail(JR_ENOMEM, "%s: out of memory", id);
        free(ins->str[0]);
        ins->str[0] = k;
        if (!*k) return jr_fail(JR_EINVAL, "%s: kwarg postscript_marker must not be empty", id);
        size_t ln;
        char *low = ifv_lower(k, strlen(k), &ln);
        char *p = low ? malloc(ln + 16) : NULL;
        if (!p) { free(low); return jr_fail(JR_ENOMEM, "%s: out of memory", id); }
        sprintf(p, "\\s*%s.*$", low);
        jr_status st = add_re(ins, id, "postscript_marker", k, p, PCRE2_MULTILINE);
        free(p);
        free(low);
        return st;
    } else if (sp->check == ck_letter) {
        const char *l = STR(ins);
        char *k = strip_dup(l);
        if (!k) return jr_fail(JR_ENOMEM, "%s: out of memory", id);
        size_t n = strlen(k), i = 0;
        bool one = cp_len(l) == 1 && n > 0;
        uint32_t c = one ? ifv_next_cp(k, n, &i) : 0;
        free(k);
        if (!one) return jr_fail(JR_EINVAL, "%s: kwarg letter=\"%s\" must be a single character", id, l);
        ins->letter = ifv_tolower(c);
    } else if (sp->check == ck_first_word) {
        long paras = ins->num[0], nth = ins->num[1];
        if (nth < 1 || nth > paras)
            return jr_fail(JR_EINVAL, "%s: kwarg nth_paragraph=%ld must be between 1 and num_paragraphs=%ld", id, nth,
                           paras);
        size_t ln;
        char *low = ifv_lower(STR(ins), strlen(STR(ins)), &ln);
        if (!low) return jr_fail(JR_ENOMEM, "%s: out of memory", id);
        free(ins->str[2]);
        ins->str[2] = low;
    } else if (sp->check == ck_end || sp->check == ck_repeat_prompt || sp->check == ck_language) {
        if (!*STR(ins)) return jr_fail(JR_EINVAL, "%s: kwarg %s must not be empty", id, sp->kw[0].name);
    }
    return JR_OK;
}

jr_status jr_ifeval_instr_new(const char *id, const json_t *kwargs, const char *prompt, jr_ifeval_instr **out) {
    (void)prompt;
    *out = NULL;
    const ispec *sp = id ? find_spec(id) : NULL;
    if (!sp) return jr_fail(JR_EINVAL, "unknown instruction id \"%s\" (see docs/IFEVAL.md for the 25 ids)", id ? id : "");
    if (kwargs && !json_is_null(kwargs) && !json_is_object(kwargs))
        return jr_fail(JR_EINVAL, "%s: kwargs must be an object, got %s", id, json_type_name(kwargs));
    jr_ifeval_instr *ins = calloc(1, sizeof *ins);
    if (!ins) return jr_fail(JR_ENOMEM, "%s: out of memory", id);
    ins->spec = sp;
    jr_status st = JR_OK;
    /* unknown kwargs (null values are ignored, as the HF copy of the data carries every key) */
    if (json_is_object(kwargs)) {
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)kwargs, key, val) {
            if (json_is_null(val)) continue;
            bool known = false;
            for (int i = 0; i < 3 && sp->kw[i].name; i++)
                if (!strcmp(sp->kw[i].name, key)) known = true;
            if (!known) {
                st = jr_fail(JR_EINVAL, "%s: unexpected kwarg %s", id, key);
                goto fail;
            }
        }
    }
    for (int i = 0; i < 3 && sp->kw[i].name; i++) {
        const char *name = sp->kw[i].name;
        json_t *v = json_is_object(kwargs) ? json_object_get(kwargs, name) : NULL;
        if (!v || json_is_null(v)) {
            st = jr_fail(JR_EINVAL, "%s: missing kwarg %s", id, name);
            goto fail;
        }
        switch (sp->kw[i].type) {
        case K_INT:
            if (!json_is_integer(v)) {
                st = jr_fail(JR_EINVAL, "%s: kwarg %s must be an integer, got %s", id, name, json_type_name(v));
                goto fail;
            }
            ins->num[i] = (long)json_integer_value(v);
            if (ins->num[i] < 0) {
                st = jr_fail(JR_EINVAL, "%s: kwarg %s=%ld must not be negative", id, name, ins->num[i]);
                goto fail;
            }
            break;
        case K_REL: {
            const char *r = json_string_value(v);
            if (!r) {
                st = jr_fail(JR_EINVAL, "%s: kwarg %s must be a string (\"less than\" or \"at least\"), got %s", id,
                             name, json_type_name(v));
                goto fail;
            }
            if (strcmp(r, "less than") && strcmp(r, "at least")) {
                st = jr_fail(JR_EINVAL, "%s: kwarg %s=\"%s\" must be \"less than\" or \"at least\"", id, name, r);
                goto fail;
            }
            ins->rel[i] = !strcmp(r, "at least");
            break;
        }
        case K_STR:
            if (!json_is_string(v)) {
                st = jr_fail(JR_EINVAL, "%s: kwarg %s must be a string, got %s", id, name, json_type_name(v));
                goto fail;
            }
            if (!(ins->str[i] = strdup(json_string_value(v)))) {
                st = jr_fail(JR_ENOMEM, "%s: out of memory", id);
                goto fail;
            }
            break;
        case K_LIST: {
            if (!json_is_array(v) || json_array_size(v) == 0) {
                st = jr_fail(JR_EINVAL, "%s: kwarg %s must be a non-empty array of strings, got %s", id, name,
                             json_is_array(v) ? "an empty array" : json_type_name(v));
                goto fail;
            }
            size_t n = json_array_size(v);
            ins->list = calloc(n, sizeof *ins->list);
            if (!ins->list) {
                st = jr_fail(JR_ENOMEM, "%s: out of memory", id);
                goto fail;
            }
            for (size_t k = 0; k < n; k++) {
                json_t *e = json_array_get(v, k);
                if (!json_is_string(e) || !*json_string_value(e)) {
                    st = jr_fail(JR_EINVAL, "%s: kwarg %s[%zu] must be a non-empty string, got %s", id, name, k,
                                 json_is_string(e) ? "an empty string" : json_type_name(e));
                    goto fail;
                }
                if (!(ins->list[k] = strdup(json_string_value(e)))) {
                    st = jr_fail(JR_ENOMEM, "%s: out of memory", id);
                    goto fail;
                }
                ins->nlist = k + 1;
            }
            break;
        }
        }
    }
    if ((st = finish(ins))) goto fail;
    *out = ins;
    return JR_OK;
fail:
    jr_ifeval_instr_free(ins);
    return st;
}

/* ---- strict and loose --------------------------------------------------------------------- */

/* The 8 loose variants of a response (the first is the response itself), built once per row. */
typedef struct {
    const char *s[8];
    size_t n[8];
    char *owned[7];
} variants;

static char *dup_range(const char *s, size_t b, size_t e, bool no_star, size_t *outlen) {
    char *o = malloc(e - b + 1);
    if (!o) return NULL;
    size_t k = 0;
    for (size_t i = b; i < e; i++)
        if (!no_star || s[i] != '*') o[k++] = s[i];
    o[k] = 0;
    *outlen = k;
    return o;
}

static void variants_free(variants *v) {
    for (int i = 0; i < 7; i++) free(v->owned[i]);
}

static bool variants_build(variants *v, const char *r, size_t n) {
    memset(v, 0, sizeof *v);
    v->s[0] = r;
    v->n[0] = n;
    const char *f = memchr(r, '\n', n);
    const char *l = f ? memrchr(r, '\n', n) : NULL;
    /* "\n".join(r[1:]), "\n".join(r[:-1]), "\n".join(r[1:-1]); each stripped */
    size_t rb[3], re_[3];
    rb[0] = f ? (size_t)(f - r) + 1 : n; re_[0] = n;
    rb[1] = 0; re_[1] = l ? (size_t)(l - r) : 0;
    rb[2] = f ? (size_t)(f - r) + 1 : 0; re_[2] = (f && l > f) ? (size_t)(l - r) : rb[2];
    size_t sb[3], se[3];
    for (int i = 0; i < 3; i++) {
        size_t b, e;
        ifv_strip(r + rb[i], re_[i] - rb[i], &b, &e);
        sb[i] = rb[i] + b;
        se[i] = rb[i] + e;
    }
    /* order: response, revised, remove_first, remove_last, remove_both, and the last three revised */
    size_t len;
    if (!(v->owned[0] = dup_range(r, 0, n, true, &len))) goto oom;
    v->s[1] = v->owned[0]; v->n[1] = len;
    for (int i = 0; i < 3; i++) {
        if (!(v->owned[1 + i] = dup_range(r, sb[i], se[i], false, &len))) goto oom;
        v->s[2 + i] = v->owned[1 + i]; v->n[2 + i] = len;
        if (!(v->owned[4 + i] = dup_range(r, sb[i], se[i], true, &len))) goto oom;
        v->s[5 + i] = v->owned[4 + i]; v->n[5 + i] = len;
    }
    return true;
oom:
    variants_free(v);
    return false;
}

static bool follows(const jr_ifeval_instr *ins, const char *s, size_t n) {
    size_t b, e;
    ifv_strip(s, n, &b, &e);
    return e > b && ins->spec->check(ins, s, n);
}

static bool check_variants(const jr_ifeval_instr *ins, const variants *v, jr_ifeval_mode mode) {
    if (mode == JR_IFEVAL_STRICT) return follows(ins, v->s[0], v->n[0]);
    for (int i = 0; i < 8; i++)
        if (follows(ins, v->s[i], v->n[i])) return true;
    return false;
}

bool jr_ifeval_instr_check(const jr_ifeval_instr *ins, const char *response, size_t len, jr_ifeval_mode mode) {
    if (mode == JR_IFEVAL_STRICT) return follows(ins, response, len);
    variants v;
    if (!variants_build(&v, response, len)) return false;
    bool r = check_variants(ins, &v, mode);
    variants_free(&v);
    return r;
}

jr_status jr_ifeval_check_row(const json_t *instruction_ids, const json_t *kwargs_list, const char *prompt,
                              const char *response, jr_ifeval_mode mode, bool *results) {
    if (!json_is_array(instruction_ids))
        return jr_fail(JR_EINVAL, "instruction_id_list must be an array of strings, got %s",
                       instruction_ids ? json_type_name(instruction_ids) : "nothing");
    size_t n = json_array_size(instruction_ids);
    if (kwargs_list && !json_is_null(kwargs_list) && !json_is_array(kwargs_list))
        return jr_fail(JR_EINVAL, "kwargs must be an array of objects, got %s", json_type_name(kwargs_list));
    if (json_is_array(kwargs_list) && json_array_size(kwargs_list) != n)
        return jr_fail(JR_EINVAL, "kwargs has %zu entries but instruction_id_list has %zu",
                       json_array_size(kwargs_list), n);
    if (!response) return jr_fail(JR_EINVAL, "response is missing");
    variants v;
    bool built = false;
    for (size_t i = 0; i < n; i++) {
        json_t *idv = json_array_get(instruction_ids, i);
        if (!json_is_string(idv)) {
            if (built) variants_free(&v);
            return jr_fail(JR_EINVAL, "instruction_id_list[%zu] must be a string, got %s", i, json_type_name(idv));
        }
        jr_ifeval_instr *ins;
        jr_status st = jr_ifeval_instr_new(json_string_value(idv),
                                           json_is_array(kwargs_list) ? json_array_get(kwargs_list, i) : NULL,
                                           prompt, &ins);
        if (st) {
            if (built) variants_free(&v);
            return jr_fail_ctx(st, "instruction %zu", i);
        }
        if (!built) {
            if (!variants_build(&v, response, strlen(response))) {
                jr_ifeval_instr_free(ins);
                return jr_fail(JR_ENOMEM, "out of memory building the loose variants");
            }
            built = true;
        }
        results[i] = check_variants(ins, &v, mode);
        jr_ifeval_instr_free(ins);
    }
    if (built) variants_free(&v);
    return JR_OK;
}

double jr_ifeval_pass_rate(const bool *results, size_t n) {
    if (!n) return 0.0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += results[i];
    return (double)k / (double)n;
}

int jr_ifeval_all_pass(const bool *results, size_t n) {
    if (!n) return 0;
    for (size_t i = 0; i < n; i++)
        if (!results[i]) return 0;
    return 1;
}
