/* rules.c - rule verifiers: exact match, regex, word counts, n-gram repetition, length,
 * efficiency and simplicity scores, and the named rule checks rubrics and VerIF use */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "judgerl/verify.h"
#include "judgerl/ifeval.h"

#include <ctype.h>
#include <math.h>
#include <pcre2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void trim_span(const char *s, size_t *b, size_t *e) {
    *b = 0;
    *e = strlen(s);
    while (*b < *e && isspace((unsigned char)s[*b])) (*b)++;
    while (*e > *b && isspace((unsigned char)s[*e - 1])) (*e)--;
}

int jr_verify_exact(const char *response, const char *reference, int casefold) {
    if (!response || !reference) return 0;
    size_t b1, e1, b2, e2;
    trim_span(response, &b1, &e1);
    trim_span(reference, &b2, &e2);
    if (e1 - b1 != e2 - b2) return 0;
    return casefold ? !strncasecmp(response + b1, reference + b2, e1 - b1)
                    : !strncmp(response + b1, reference + b2, e1 - b1);
}

jr_status jr_verify_regex(const char *text, const char *pattern, int *match) {
    *match = 0;
    int err;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &err, &off, NULL);
    if (!re) {
        PCRE2_UCHAR buf[256];
        pcre2_get_error_message(err, buf, sizeof buf);
        return jr_fail(JR_EINVAL, "regex '%.200s': %s at offset %zu", pattern, (const char *)buf, (size_t)off);
    }
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md) {
        pcre2_code_free(re);
        return jr_fail(JR_ENOMEM, "out of memory matching regex");
    }
    int rc = pcre2_match(re, (PCRE2_SPTR)(text ? text : ""), PCRE2_ZERO_TERMINATED, 0, 0, md, NULL);
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    if (rc >= 0) { *match = 1; return JR_OK; }
    if (rc == PCRE2_ERROR_NOMATCH) return JR_OK;
    if (rc == PCRE2_ERROR_BADUTFOFFSET || (rc <= PCRE2_ERROR_UTF8_ERR1 && rc >= PCRE2_ERROR_UTF8_ERR21))
        return jr_fail(JR_EINVAL, "regex '%.200s': the text is not valid UTF-8", pattern);
    return jr_fail(JR_EINVAL, "regex '%.200s': match failed (pcre2 error %d)", pattern, rc);
}

size_t jr_count_words(const char *text) {
    size_t n = 0;
    int in = 0;
    for (const char *p = text ? text : ""; *p; p++) {
        int ws = isspace((unsigned char)*p);
        if (!ws && !in) n++;
        in = !ws;
    }
    return n;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

double jr_repetition_rate(const char *text, int n) {
    if (!text || n < 1) return 0;
    size_t nw = jr_count_words(text);
    if (nw < (size_t)n) return 0;
    /* Hash of each word (FNV-1a, ASCII lower-cased), then of each window of n word hashes. */
    uint64_t *wh = malloc(nw * sizeof *wh);
    size_t ng = nw - (size_t)n + 1;
    uint64_t *gh = malloc(ng * sizeof *gh);
    if (!wh || !gh) { free(wh); free(gh); return 0; }
    size_t k = 0;
    const char *p = text;
    while (*p) {
        while (*p && isspace((unsigned char)*p)) p++;
        if (!*p) break;
        uint64_t h = 1469598103934665603ULL;
        while (*p && !isspace((unsigned char)*p)) {
            h ^= (uint64_t)(unsigned char)tolower((unsigned char)*p++);
            h *= 1099511628211ULL;
        }
        wh[k++] = h;
    }
    for (size_t i = 0; i < ng; i++) {
        uint64_t h = 1469598103934665603ULL;
        for (int j = 0; j < n; j++) {
            h ^= wh[i + (size_t)j];
            h *= 1099511628211ULL;
            h ^= h >> 29;
        }
        gh[i] = h;
    }
    qsort(gh, ng, sizeof *gh, cmp_u64);
    size_t distinct = 1;
    for (size_t i = 1; i < ng; i++) distinct += gh[i] != gh[i - 1];
    free(wh);
    free(gh);
    return 1.0 - (double)distinct / (double)ng;
}

double jr_length_score(double length, double lo, double hi, double slack) {
    if (length < lo) {
        if (slack <= 0) return 0;
        return fmax(0, 1 - (lo - length) / slack);
    }
    if (hi > 0 && length > hi) {
        if (slack <= 0) return 0;
        return fmax(0, 1 - (length - hi) / slack);
    }
    return 1;
}

double jr_efficiency_score(double cost, double cost_budget, double latency, double latency_budget, double w) {
    int hc = cost >= 0 && cost_budget > 0, hl = latency >= 0 && latency_budget > 0;
    double sc = hc ? fmax(0, 1 - cost / cost_budget) : 0;
    double sl = hl ? fmax(0, 1 - latency / latency_budget) : 0;
    if (hc && hl) return w * sc + (1 - w) * sl;
    if (hc) return sc;
    if (hl) return sl;
    return -1;
}

double jr_simplicity_score(double n_ops, double min_ops, double max_ops) {
    if (n_ops <= min_ops) return 1;
    if (n_ops >= max_ops) return 0;
    return (max_ops - n_ops) / (max_ops - min_ops);
}

/* Named rule checks. */

static const char *param_str(const json_t *params, const char *key) {
    if (json_is_string(params)) return json_string_value(params);
    return json_string_value(json_object_get(params, key));
}

static int param_num(const json_t *params, const char *key, double *v) {
    json_t *x = json_object_get(params, key);
    if (json_is_number(x)) { *v = json_number_value(x); return 1; }
    if (json_is_string(x)) {
        char *end;
        *v = strtod(json_string_value(x), &end);
        return end != json_string_value(x) && *end == 0;
    }
    return 0;
}

static int contains_ci(const char *hay, const char *needle, int casefold) {
    if (!casefold) return strstr(hay, needle) != NULL;
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++)
        if (!strncasecmp(p, needle, n)) return 1;
    return n == 0;
}

static const char *const rule_names[] = {"math_verify", "word_count_range", "regex", "exact", "contains",
                                         "max_repetition", NULL};

int jr_rule_known(const char *name) {
    if (name && !strncmp(name, "ifeval:", 7)) return jr_ifeval_instruction_known(name + 7);
    if (name && !strcmp(name, "ifeval")) return 1;
    for (int i = 0; name && rule_names[i]; i++)
        if (!strcmp(name, rule_names[i])) return 1;
    return 0;
}

jr_status jr_rule_check(const char *name, const json_t *params, const char *response, int *pass) {
    *pass = 0;
    if (!response) response = "";
    if (!name) return jr_fail(JR_EINVAL, "rule check: no rule name");
    if (!strcmp(name, "math_verify")) {
        const char *ans = param_str(params, "answer");
        if (!ans) return jr_fail(JR_EINVAL, "rule math_verify: parameters need a string 'answer'");
        char *got = jr_answer_extract(response);
        if (!got) return jr_fail(JR_ENOMEM, "out of memory");
        *pass = jr_answer_equiv(got, ans);
        free(got);
        return JR_OK;
    }
    if (!strcmp(name, "word_count_range")) {
        double lo, hi;
        if (!param_num(params, "min_count", &lo) || !param_num(params, "max_count", &hi))
            return jr_fail(JR_EINVAL, "rule word_count_range: parameters need numbers 'min_count' and 'max_count'");
        if (lo > hi)
            return jr_fail(JR_EINVAL, "rule word_count_range: min_count=%g is above max_count=%g", lo, hi);
        double n = (double)jr_count_words(response);
        *pass = n >= lo && n <= hi;
        return JR_OK;
    }
    if (!strcmp(name, "regex")) {
        const char *pat = param_str(params, "pattern");
        if (!pat) return jr_fail(JR_EINVAL, "rule regex: parameters need a string 'pattern'");
        return jr_verify_regex(response, pat, pass);
    }
    if (!strcmp(name, "exact")) {
        const char *ans = param_str(params, "answer");
        if (!ans) return jr_fail(JR_EINVAL, "rule exact: parameters need a string 'answer'");
        *pass = jr_verify_exact(response, ans, json_is_true(json_object_get(params, "casefold")));
        return JR_OK;
    }
    if (!strcmp(name, "contains")) {
        int cf = json_is_true(json_object_get(params, "casefold"));
        const char *one = param_str(params, "text");
        json_t *many = json_object_get(params, "texts");
        if (one) { *pass = contains_ci(response, one, cf); return JR_OK; }
        if (!json_is_array(many))
            return jr_fail(JR_EINVAL, "rule contains: parameters need a string 'text' or a list 'texts'");
        size_t i;
        json_t *t;
        json_array_foreach(many, i, t) {
            if (!json_is_string(t)) return jr_fail(JR_EINVAL, "rule contains: texts[%zu] is not a string", i);
            if (!contains_ci(response, json_string_value(t), cf)) return JR_OK;
        }
        *pass = 1;
        return JR_OK;
    }
    if (!strcmp(name, "max_repetition")) {
        double n = 3, maxr;
        param_num(params, "n", &n);
        if (!param_num(params, "max_rate", &maxr))
            return jr_fail(JR_EINVAL, "rule max_repetition: parameters need a number 'max_rate'");
        if (n < 1 || n > 64) return jr_fail(JR_EINVAL, "rule max_repetition: n=%g is outside 1..64", n);
        *pass = jr_repetition_rate(response, (int)n) <= maxr;
        return JR_OK;
    }
    if (!strncmp(name, "ifeval:", 7) || !strcmp(name, "ifeval")) {
        /* "ifeval:ID" with the kwargs as params, or "ifeval" with {instruction_id, kwargs, loose?}. */
        const char *id = name[6] == ':' ? name + 7 : json_string_value(json_object_get(params, "instruction_id"));
        const json_t *kw = name[6] == ':' ? params : json_object_get(params, "kwargs");
        int loose = name[6] != ':' && json_is_true(json_object_get(params, "loose"));
        if (!id) return jr_fail(JR_EINVAL, "rule ifeval: parameters need a string 'instruction_id'");
        if (json_is_null(kw)) kw = NULL;
        jr_ifeval_instr *ins;
        jr_status st = jr_ifeval_instr_new(id, kw, NULL, &ins);
        if (st) return jr_fail_ctx(st, "rule %s", name);
        *pass = jr_ifeval_instr_check(ins, response, strlen(response), loose ? JR_IFEVAL_LOOSE : JR_IFEVAL_STRICT);
        jr_ifeval_instr_free(ins);
        return JR_OK;
    }
    return jr_fail(JR_EINVAL, "unknown rule '%s' (known: math_verify, word_count_range, regex, exact, contains, "
                              "max_repetition, ifeval:ID)", name);
}
