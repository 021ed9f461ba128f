/* fns.c - the built-in reward functions: judge protocols (with their rule parts and short-circuits
 * assembled here) and rule verifiers reading the row's own fields */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/ifeval.h"
#include "judgerl/protocols.h"
#include "judgerl/reward.h"
#include "judgerl/verify.h"
#include "judgerl/sandbox.h"
#include "judgerl/strbuf.h"

static const char *const response_names[] = {"response", "completion", "output", NULL};
static const char *const reference_names[] = {"reference", "answer", NULL};
static const char *const domain_names[] = {"domain", "type", NULL};

/* Sets out->reason from a format and returns JR_RW_UNSCORED. */
__attribute__((format(printf, 2, 3))) static jr_rw_rc unscored(jr_rw_out *out, const char *fmt, ...) {
    char buf[800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    out->reason = jr_strdup(buf);
    return JR_RW_UNSCORED;
}

static jr_rw_rc scored(jr_rw_out *out, double v) {
    out->value = v;
    return JR_RW_SCORED;
}

/* The first of `names` that is a string in row (borrowed), or NULL. */
static const char *row_str(const json_t *row, const char *const *names, const char **which) {
    for (int i = 0; names[i]; i++) {
        const char *s = json_string_value(json_object_get(row, names[i]));
        if (s) {
            if (which) *which = names[i];
            return s;
        }
    }
    return NULL;
}

const char *jr_row_text_or_number(const json_t *row, const char *field, char *buf, size_t len) {
    const json_t *v = json_object_get(row, field);
    if (json_is_string(v)) return json_string_value(v);
    if (json_is_integer(v)) { snprintf(buf, len, "%lld", (long long)json_integer_value(v)); return buf; }
    if (json_is_real(v)) { snprintf(buf, len, "%.17g", json_real_value(v)); return buf; }
    return NULL;
}

/* The first of names that is a string or a number, as text (jr_row_text_or_number), or NULL. */
static const char *row_text_or_number(const json_t *row, const char *const *names, char *buf, size_t len) {
    for (int i = 0; names[i]; i++) {
        const char *s = jr_row_text_or_number(row, names[i], buf, len);
        if (s) return s;
    }
    return NULL;
}

static double pnum(const json_t *params, const char *key, double def) {
    const json_t *v = json_object_get(params, key);
    return json_is_number(v) ? json_number_value(v) : def;
}

static const char *pstr(const json_t *params, const char *key, const char *def) {
    const char *s = json_string_value(json_object_get(params, key));
    return s ? s : def;
}

/* Checks that params is an object whose keys are all in `allowed` ("a|b|c") and whose listed
 * number keys are numbers. */
static jr_status check_keys(const json_t *params, const char *allowed, const char *numbers) {
    if (!json_is_object(params)) return jr_fail(JR_EINVAL, "expected a mapping");
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)params, key, v) {
        char pat[80];
        snprintf(pat, sizeof pat, "|%s|", key);
        char all[400];
        snprintf(all, sizeof all, "|%s|", allowed);
        if (!strstr(all, pat)) return jr_fail(JR_EINVAL, "unknown key '%s' (allowed: %s)", key, allowed);
        snprintf(all, sizeof all, "|%s|", numbers ? numbers : "");
        if (strstr(all, pat) && !json_is_number(v)) return jr_fail(JR_EINVAL, "'%s' must be a number", key);
    }
    return JR_OK;
}

/* A copy of row with "rule_met" set (a new reference). */
static json_t *with_rule_met(const json_t *row, json_t *rule_met) {
    json_t *c = json_copy((json_t *)row);
    if (c) json_object_set_new(c, "rule_met", rule_met);
    else json_decref(rule_met);
    return c;
}

/* ---- judge protocols ---- */

static jr_status check_none(const json_t *params) { return check_keys(params, "", NULL); }

static jr_rw_rc judge_as_is(const jr_reward_opts *ro, const json_t *params, const json_t *row, jr_rw_out *out) {
    out->judge_row = json_incref((json_t *)row);
    return JR_RW_JUDGE;
}

static jr_rw_rc eval_reference(const jr_reward_opts *ro, const json_t *params, const json_t *row, jr_rw_out *out) {
    const char *resp = row_str(row, response_names, NULL);
    char nb[64];
    const char *ref = row_text_or_number(row, reference_names, nb, sizeof nb);
    if (!resp) return unscored(out, "field 'response': expected a string");
    if (!ref) return unscored(out, "field 'reference' (or 'answer'): expected a string or a number");
    if (ro->judge.reference.shortcircuit) {
        char *got = jr_answer_extract(resp);
        int eq = got && jr_answer_equiv(got, ref);
        if (eq) {
            out->detail = json_pack("{s:b,s:s}", "shortcircuit", 1, "answer", got);
            free(got);
            return scored(out, ro->judge.reference.correct);
        }
        free(got);
    }
    out->judge_row = json_incref((json_t *)row);
    return JR_RW_JUDGE;
}

static jr_rw_rc eval_rubric(const jr_reward_opts *ro, const json_t *params, const json_t *row, jr_rw_out *out) {
    const char *resp = row_str(row, response_names, NULL);
    if (!resp) return unscored(out, "field 'response': expected a string");
    jr_criterion *items;
    size_t n;
    if (jr_rubric_read(json_object_get(row, "rubric"), &items, &n)) return unscored(out, "%s", jr_errmsg());
    int *met = jr_calloc(n, sizeof *met);
    json_t *rm = json_array();
    size_t n_llm = 0;
    jr_rw_rc rc = JR_RW_SCORED;
    for (size_t i = 0; met && rm && i < n && rc == JR_RW_SCORED; i++) {
        if (!items[i].rule) { met[i] = -1; n_llm++; json_array_append_new(rm, json_null()); continue; }
        int pass;
        if (jr_rule_check(items[i].rule, items[i].params, resp, &pass)) rc = unscored(out, "rubric[%zu]: %s", i, jr_errmsg());
        met[i] = pass;
        json_array_append_new(rm, json_boolean(pass));
    }
    if (!met || !rm) rc = unscored(out, "out of memory");
    if (rc == JR_RW_SCORED && n_llm) {
        out->judge_row = with_rule_met(row, rm);
        rm = NULL;
        rc = out->judge_row ? JR_RW_JUDGE : unscored(out, "out of memory");
    } else if (rc == JR_RW_SCORED) {
        double s;
        int k = jr_rubric_score(items, n, met, ro->judge.rubric.clip_sample, &s);
        if (k == 1) {
            out->value = s;
            out->detail = json_pack("{s:O}", "met", rm);
        } else rc = unscored(out, "rubric: no criterion has positive points (HealthBench scores this None)");
    }
    json_decref(rm);
    free(met);
    jr_rubric_free(items, n);
    return rc;
}

static jr_rw_rc eval_verif(const jr_reward_opts *ro, const json_t *params, const json_t *row, jr_rw_out *out) {
    const char *resp = row_str(row, response_names, NULL);
    if (!resp) return unscored(out, "field 'response': expected a string");
    jr_constraint *c;
    size_t n;
    if (jr_constraints_read(row, &c, &n)) return unscored(out, "%s", jr_errmsg());
    int *rules = jr_calloc(n, sizeof *rules);
    json_t *rm = json_array();
    size_t n_rules = 0, n_llm = 0;
    jr_rw_rc rc = JR_RW_SCORED;
    for (size_t i = 0; rules && rm && i < n && rc == JR_RW_SCORED; i++) {
        if (!c[i].is_rule) { n_llm++; json_array_append_new(rm, json_null()); continue; }
        int pass;
        if (jr_rule_check(c[i].rule, c[i].params, resp, &pass)) rc = unscored(out, "constraint %zu: %s", i, jr_errmsg());
        rules[n_rules++] = pass;
        json_array_append_new(rm, json_boolean(pass));
    }
    if (!rules || !rm) rc = unscored(out, "out of memory");
    if (rc == JR_RW_SCORED && n_llm) {
        out->judge_row = with_rule_met(row, rm);
        rm = NULL;
        rc = out->judge_row ? JR_RW_JUDGE : unscored(out, "out of memory");
    } else if (rc == JR_RW_SCORED) {
        int all = ro->judge.verif.all_pass;
        out->value = jr_verif_reward(rules, n_rules, 1, all);
        out->detail = json_pack("{s:O}", "rule_met", rm);
    }
    json_decref(rm);
    free(rules);
    jr_constraints_free(c, n);
    return rc;
}

/* ---- rule verifiers ---- */

static jr_status check_exact(const json_t *params) { return check_keys(params, "field|casefold|extract", NULL); }

static jr_rw_rc eval_exact(const jr_reward_opts *ro, const json_t *params, const json_t *row, jr_rw_out *out) {
    const char *resp = row_str(row, response_names, NULL);
    const char *field = pstr(params, "field", NULL);
    const char *const one[] = {field, NULL};
    char nb[64];
    const char *ref = row_text_or_number(row, field ? one : reference_names, nb, sizeof nb);
    if (!resp) return unscored(out, "field 'response': expected a string");
    if (!ref) return unscored(out, "field '%s': expected a string or a number", field ? field : "reference");
    int cf = json_is_true(json_object_get(params, "casefold"));
    if (!json_is_true(json_object_get(params, "extract"))) return scored(out, jr_verify_exact(resp, ref, cf));
    char *got = jr_answer_extract(resp);
    int eq = got && jr_verify_exact(got, ref, cf);
    free(got);
    return scored(out, eq);
}

static jr_rw_rc eval_math(const jr_reward_opts *ro, const json_t *params, const json_t *row, jr_rw_out *out) {
    const char *resp = row_str(row, response_names, NULL);
    char nb[64];
    const char *ref = row_text_or_number(row, reference_names, nb, sizeof nb);
    if (!resp) return unscored(out, "field 'response': expected a string");
    if (!ref) return unscored(out, "field 'reference' (or 'answer'): expected a string or a number");
    char *got = jr_answer_extract(resp);
    if (!got) return unscored(out, "out of memory");
    int eq = jr_answer_equiv(got, ref);
    out->detail = json_pack("{s:s}", "answer", got);
    free(got);
    return scored(out, eq);
}

static jr_status check_format(const json_t *params) {
    jr_status st = check_keys(params, "pattern|by_domain|domain_field|field|scale", "scale");
    if (st) return st;
    const json_t *pat = json_object_get(params, "pattern"), *bd = json_object_get(params, "by_domain");
    if (!json_is_string(pat) && !json_is_object(bd)) return jr_fail(JR_EINVAL, "give 'pattern' or 'by_domain'");
    int m;
    if (json_is_string(pat) && (st = jr_verify_regex("", json_string_value(pat), &m))) return st;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)bd, k, v) {
        if (!json_is_string(v)) return jr_fail(JR_EINVAL, "by_domain.%s: expected a regex string", k);
        if ((st = jr_verify_regex("", json_string_value(v), &m))) return jr_fail_ctx(st, "by_domain.%s", k);
    }
    return JR_OK;
}

static jr_rw_rc eval_format(const jr_reward_opts *ro, const json_t *params, const json_t *row, jr_rw_out *out) {
    const char *field = pstr(params, "field", NULL);
    const char *const one[] = {field, NULL};
    const char *resp = row_str(row, field ? one : response_names, NULL);
    if (!resp) return unscored(out, "field '%s': expected a string", field ? field : "response");
    const char *pat = pstr(params, "pattern", NULL);
    const json_t *bd = json_object_get(params, "by_domain");
    const char *dfield = pstr(params, "domain_field", NULL);
    const char *const dn[] = {dfield, NULL};
    const char *dom = row_str(row, dfield ? dn : domain_names, NULL);
    if (bd) {
        const char *p = dom ? json_string_value(json_object_get(bd, dom)) : NULL;
        if (!p) p = json_string_value(json_object_get(bd, "default"));
        if (p) pat = p;
    }
    if (!pat) return unscored(out, "format: no pattern for domain '%s' (add it or 'default' to by_domain)", dom ? dom : "");
    int m;
    if (jr_verify_regex(resp, pat, &m)) return unscored(out, "%s", jr_errmsg());
    return scored(out, m * pnum(params, "scale", 1));
}

static jr_status check_rule(const json_t *params) {
    jr_status st = check_keys(params, "rule|params", NULL);
    if (st) return st;
    const char *r = pstr(params, "rule", NULL);
    if (!r) return jr_fail(JR_EINVAL, "'rule' must name a rule");
    if (!jr_rule_known(r)) return jr_fail(JR_EINVAL, "unknown rule '%s'", r);
    return JR_OK;
}

static jr_rw_rc eval_rule(const jr_reward_opts *ro, const json_t *params, const json_t *row, jr_rw_out *out) {
    const char *resp = row_str(row, response_names, NULL);
    if (!resp) return unscored(out, "field 'response': expected a string");
    int pass;
    if (jr_rule_check(pstr(params, "rule", ""), json_object_get(params, "params"), resp, &pass))
        return unscored(out, "%s", jr_errmsg());
    return scored(out, pass);
}

static jr_status check_length(const json_t *params) {
    jr_status st = check_keys(params, "unit|field|min|max|slack", "min|max|slack");
    if (st) return st;
    const char *u = pstr(params, "unit", "words");
    if (strcmp(u, "words") && strcmp(u, "chars") && strcmp(u, "field"))
        return jr_fail(JR_EINVAL, "unit '%s': use words, chars or field", u);
    if (!strcmp(u, "field") && !pstr(params, "field", NULL))
        return jr_fail(JR_EINVAL, "unit field needs 'field' (a numeric row field such as response_tokens)");
    return JR_OK;
}

static jr_rw_rc eval_length(const jr_reward_opts *ro, const json_t *params, const json_t *row, jr_rw_out *out) {
    const char *u = pstr(params, "unit", "words");
    double len;
    if (!strcmp(u, "field")) {
        const char *f = pstr(params, "field", "");
        const json_t *v = json_object_get(row, f);
        if (!json_is_number(v)) return unscored(out, "field '%s': expected a number", f);
        len = json_number_value(v);
    } else {
        const char *resp = row_str(row, response_names, NULL);
        if (!resp) return unscored(out, "field 'response': expected a string");
        len = !strcmp(u, "chars") ? (double)strlen(resp) : (double)jr_count_words(resp);
    }
    out->detail = json_pack("{s:f}", "length", len);
    return scored(out, jr_length_score(len, pnum(params, "min", 0), pnum(params, "max", 0), pnum(params, "slack", 0)));
}

static jr_status check_efficiency(const json_t *params) {
    jr_status st = check_keys(params, "cost_field|latency_field|cost_budget|latency_budget|cost_weight|scale",
                              "cost_budget|latency_budget|cost_weight|scale");
    if (st) return st;
    if (pnum(params, "cost_budget", 1) <= 0 || pnum(params, "latency_budget", 1) <= 0)
        return jr_fail(JR_EINVAL, "budgets must be positive");
    double w = pnum(params, "cost_weight", 0.5);
    if (w < 0 || w > 1) return jr_fail(JR_EINVAL, "cost_weight=%g is outside [0, 1]", w);
    return JR_OK;
}

static jr_rw_rc eval_efficiency(const jr_reward_opts *ro, const json_t *params, const json_t *row, jr_rw_out *out) {
    const char *cf = pstr(params, "cost_field", "cost"), *lf = pstr(params, "latency_field", "latency");
    const json_t *c = json_object_get(row, cf), *l = json_object_get(row, lf);
    double cost = json_is_number(c) ? json_number_value(c) : -1, lat = json_is_number(l) ? json_number_value(l) : -1;
    double s = jr_efficiency_score(cost, pnum(params, "cost_budget", 0.01), lat, pnum(params, "latency_budget", 60),
                                   pnum(params, "cost_weight", 0.5));
    if (s < 0) return unscored(out, "efficiency: the row has neither '%s' nor '%s' (numbers >= 0)", cf, lf);
    return scored(out, s * pnum(params, "scale", 1));
}

static jr_status check_simplicity(const json_t *params) {
    jr_status st = check_keys(params, "field|min_ops|max_ops|scale", "min_ops|max_ops|scale");
    if (st) return st;
    if (pnum(params, "max_ops", 8) <= pnum(params, "min_ops", 1)) return jr_fail(JR_EINVAL, "max_ops must be above min_ops");
    return JR_OK;
}

static jr_rw_rc eval_simplicity(const jr_reward_opts *ro, const json_t *params, const json_t *row, jr_rw_out *out) {
    const char *f = pstr(params, "field", NULL);
    static const char *const names[] = {"operator_count", "operators", "num_operators", NULL};
    const json_t *v = NULL;
    const char *used = f;
    if (f) v = json_object_get(row, f);
    else
        for (int i = 0; names[i] && !v; i++) { v = json_object_get(row, names[i]); used = names[i]; }
    double ops;
    if (json_is_number(v)) ops = json_number_value(v);
    else if (json_is_array(v)) ops = (double)json_array_size(v);
    else return unscored(out, "simplicity: field '%s' missing (a number, or a list of operators)", f ? f : "operator_count");
    out->detail = json_pack("{s:f,s:s}", "operators", ops, "field", used);
    return scored(out, jr_simplicity_score(ops, pnum(params, "min_ops", 1), pnum(params, "max_ops", 8)) * pnum(params, "scale", 1));
}

static jr_status check_repetition(const json_t *params) {
    jr_status st = check_keys(params, "n|field|scale", "n|scale");
    if (st) return st;
    double n = pnum(params, "n", 3);
    if (n < 1 || n > 64 || n != floor(n)) return jr_fail(JR_EINVAL, "n=%g: use an integer in 1..64", n);
    return JR_OK;
}

static jr_rw_rc eval_repetition(const jr_reward_opts *ro, const json_t *params, const json_t *row, jr_rw_out *out) {
    const char *field = pstr(params, "field", NULL);
    const char *const one[] = {field, NULL};
    const char *resp = row_str(row, field ? one : response_names, NULL);
    if (!resp) return unscored(out, "field '%s': expected a string", field ? field : "response");
    double rate = jr_repetition_rate(resp, (int)pnum(params, "n", 3));
    out->detail = json_pack("{s:f}", "rate", rate);
    return scored(out, rate > 0 ? -rate * pnum(params, "scale", 1) : 0.0);
}

static jr_status check_ifeval(const json_t *params) {
    jr_status st = check_keys(params, "mode|reduce|ids_field|kwargs_field", NULL);
    if (st) return st;
    const char *m = pstr(params, "mode", "strict"), *r = pstr(params, "reduce", "pass_rate");
    if (strcmp(m, "strict") && strcmp(m, "loose")) return jr_fail(JR_EINVAL, "mode '%s': use strict or loose", m);
    if (strcmp(r, "pass_rate") && strcmp(r, "all_pass")) return jr_fail(JR_EINVAL, "reduce '%s': use pass_rate or all_pass", r);
    return JR_OK;
}

static jr_rw_rc eval_ifeval(const jr_reward_opts *ro, const json_t *params, const json_t *row, jr_rw_out *out) {
    const char *resp = row_str(row, response_names, NULL);
    if (!resp) return unscored(out, "field 'response': expected a string");
    const char *idf = pstr(params, "ids_field", "instruction_id_list"), *kwf = pstr(params, "kwargs_field", "kwargs");
    const json_t *ids = json_object_get(row, idf), *kw = json_object_get(row, kwf);
    if (!json_is_array(ids) || !json_array_size(ids)) return unscored(out, "field '%s': expected a non-empty list of instruction ids", idf);
    size_t n = json_array_size(ids);
    bool *res = jr_calloc(n, sizeof *res);
    if (!res) return unscored(out, "out of memory");
    char *prompt = jr_row_text(row, (const char *const[]){"prompt", "instruction", NULL});
    jr_ifeval_mode mode = !strcmp(pstr(params, "mode", "strict"), "loose") ? JR_IFEVAL_LOOSE : JR_IFEVAL_STRICT;
    jr_status st = jr_ifeval_check_row(ids, kw, prompt, resp, mode, res);
    free(prompt);
    if (st) { free(res); return unscored(out, "ifeval: %s", jr_errmsg()); }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(arr, json_boolean(res[i]));
    out->detail = json_pack("{s:o}", "followed", arr);
    double v = !strcmp(pstr(params, "reduce", "pass_rate"), "all_pass") ? jr_ifeval_all_pass(res, n) : jr_ifeval_pass_rate(res, n);
    free(res);
    return scored(out, v);
}

/* ---- code and final answers (docs/EVAL.md) ---- */

/* The code of a response: the first fenced block (```python, ```py or ```) that defines
 * entry_point, else the last fenced block, else the whole response. New string. */
static char *response_code(const char *resp, const char *entry_point) {
    char def[300];
    snprintf(def, sizeof def, "def %s(", entry_point);
    const char *def_b = NULL, *def_e = NULL, *last_b = NULL, *last_e = NULL;
    for (const char *p = strstr(resp, "```"); p;) {
        const char *b = strchr(p + 3, '\n');
        if (!b) break;
        b++;
        const char *e = strstr(b, "```"), *end = e ? e : b + strlen(b);
        const char *d = strstr(b, def);
        if (!def_b && d && d < end) { def_b = b; def_e = end; }
        last_b = b;
        last_e = end;
        p = e ? strstr(e + 3, "```") : NULL;
    }
    const char *pick_b = def_b ? def_b : last_b, *pick_e = def_b ? def_e : last_e;
    if (!pick_b) return jr_strdup(resp);
    char *s = jr_malloc((size_t)(pick_e - pick_b) + 1);
    if (s) { memcpy(s, pick_b, (size_t)(pick_e - pick_b)); s[pick_e - pick_b] = 0; }
    return s;
}

static jr_status check_code_tests(const json_t *params) {
    jr_status st = check_keys(params, "score", NULL);
    const char *s = pstr(params, "score", "pass");
    if (!st && strcmp(s, "pass") && strcmp(s, "fraction")) st = jr_fail(JR_EINVAL, "score '%s': use pass (1/0) or fraction", s);
    return st;
}

static jr_rw_rc eval_code_tests(const jr_reward_opts *ro, const json_t *params, const json_t *row, jr_rw_out *out) {
    const char *resp = row_str(row, response_names, NULL);
    const char *test = json_string_value(json_object_get(row, "test"));
    const char *ep = json_string_value(json_object_get(row, "entry_point"));
    const char *prompt = row_str(row, (const char *const[]){"prompt", "problem", NULL}, NULL);
    if (!resp) return unscored(out, "field 'response': expected a string");
    if (!test || !ep) return unscored(out, "code_tests: the row needs string fields 'test' (def check(candidate)) and 'entry_point'");
    int fraction = !strcmp(pstr(params, "score", "pass"), "fraction");
    char *code = response_code(resp, ep);
    if (!code) return unscored(out, "out of memory");
    char def[300];
    snprintf(def, sizeof def, "def %s(", ep);
    /* a whole function is defined after the prompt (whose own definition it replaces); a body
     * continues the prompt, as HumanEval's completions do */
    jr_strbuf b = {0};
    if (prompt) jr_strbuf_add(&b, prompt);
    if (prompt && strstr(code, def)) jr_strbuf_add(&b, "\n");
    jr_strbuf_add(&b, code);
    free(code);
    char *program = jr_strbuf_take(&b);
    if (!program) return unscored(out, "out of memory");
    jr_py_job job = {program, test, ep, fraction, prompt}; /* the test runs apart from the program (jr_sandbox_python) */
    jr_py_result r;
    jr_status st = jr_sandbox_python(&ro->sandbox, &job, &r);
    free(program);
    if (st) return unscored(out, "code_tests: %s", jr_errmsg());
    out->value = fraction ? (r.asserts_total ? (double)r.asserts_passed / r.asserts_total : r.outcome == JR_SB_PASSED)
                          : r.outcome == JR_SB_PASSED;
    out->detail = fraction ? json_pack("{s:s,s:i,s:i}", "result", r.result, "asserts_passed", r.asserts_passed, "asserts_total", r.asserts_total)
                           : json_pack("{s:s}", "result", r.result);
    jr_py_result_free(&r);
    return JR_RW_SCORED;
}

static jr_rw_rc eval_final_answer(const jr_reward_opts *ro, const json_t *params, const json_t *row, jr_rw_out *out) {
    const char *resp = row_str(row, response_names, NULL);
    char nb[64];
    const char *ref = row_text_or_number(row, reference_names, nb, sizeof nb);
    if (!resp) return unscored(out, "field 'response': expected a string");
    if (!ref) return unscored(out, "field 'reference' (or 'answer'): expected a string or a number");
    char *got;
    int eq = jr_answer_final_match(resp, ref, &got);
    if (!got) return unscored(out, "out of memory");
    out->detail = json_pack("{s:s}", "answer", got);
    free(got);
    out->value = eq;
    return JR_RW_SCORED;
}

const jr_reward_fn jr_reward_builtins[] = {
    {"reference", "reference", "judge: equivalent to the reference? judge.reference.correct / incorrect (normalised match short-circuits)", check_none, eval_reference},
    {"rubric", "rubric", "judge + rules: HealthBench score, sum of met points / sum of positive points", check_none, eval_rubric},
    {"verif", "verif", "judge + rules: VerIF, reduce([rule] results) x [llm] verdict", check_none, eval_verif},
    {"pairwise", "pairwise", "judge: response vs judge.pairwise.other_field in both orders (win / tie / loss)", check_none, judge_as_is},
    {"label", "label", "judge: one of judge.label.labels with confidence; value from judge.label.values", check_none, judge_as_is},
    {"pointwise", "pointwise", "judge: Prometheus-style absolute score", check_none, judge_as_is},
    {"exact", NULL, "1 when the response (or its extracted answer) equals the reference exactly", check_exact, eval_exact},
    {"math_verify", NULL, "1 when the extracted answer is equivalent to the reference (LaTeX / number aware)", check_none, eval_math},
    {"format", NULL, "1 when a regex (per domain) matches the response", check_format, eval_format},
    {"rule", NULL, "1 when a named rule check passes (math_verify, word_count_range, regex, exact, contains, max_repetition)", check_rule, eval_rule},
    {"length", NULL, "1 inside [min, max] words / chars / a numeric field, linear to 0 over slack", check_length, eval_length},
    {"efficiency", NULL, "from row cost and latency against budgets, in [0, 1]", check_efficiency, eval_efficiency},
    {"simplicity", NULL, "from the row's operator count: 1 at min_ops, 0 at max_ops", check_simplicity, eval_simplicity},
    {"repetition", NULL, "repetition penalty: -(1 - distinct n-grams / n-grams) of the response", check_repetition, eval_repetition},
    {"ifeval", NULL, "IFEval instructions of the row (instruction_id_list, kwargs): pass rate or all-pass, strict or loose", check_ifeval, eval_ifeval},
    {"code_tests", NULL, "runs the response against the row's tests (test, entry_point) in the sandbox: 1/0, or the assert pass fraction", check_code_tests, eval_code_tests},
    {"final_answer", NULL, "GSM8K-aware math_verify: the final answer (#### N, \\boxed{}, \"the answer is\", last number) vs the reference", check_none, eval_final_answer},
    {NULL, NULL, NULL, NULL, NULL},
};
