/* fns_exec.c - code_tests (the response run against the row's hidden tests in the sandbox) and
 * final_answer (GSM8K-aware answer match) */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/sandbox.h"
#include "judgerl/strbuf.h"
#include "judgerl/verify.h"
#include "reward/fns_exec.h"

static jr_rw_rc unscored(jr_rw_out *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static jr_rw_rc unscored(jr_rw_out *out, const char *fmt, ...) {
    char buf[800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    out->reason = jr_strdup(buf);
    return JR_RW_UNSCORED;
}

static const char *row_string(const json_t *row, const char *const *names) {
    for (int i = 0; names[i]; i++) {
        const char *s = json_string_value(json_object_get(row, names[i]));
        if (s) return s;
    }
    return NULL;
}

static const char *const response_names[] = {"response", "completion", "output", NULL};

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

jr_status jr_rw_check_code_tests(const json_t *params) {
    if (!json_is_object(params)) return jr_fail(JR_EINVAL, "expected a mapping");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)params, k, v) {
        if (strcmp(k, "score")) return jr_fail(JR_EINVAL, "unknown key '%s' (allowed: score)", k);
        const char *s = json_string_value(v);
        if (!s || (strcmp(s, "pass") && strcmp(s, "fraction"))) return jr_fail(JR_EINVAL, "score: use pass (1/0) or fraction");
    }
    return JR_OK;
}

jr_rw_rc jr_rw_eval_code_tests(const jr_config *cfg, const json_t *params, const json_t *row, jr_rw_out *out) {
    const char *resp = row_string(row, response_names);
    const char *test = json_string_value(json_object_get(row, "test"));
    const char *ep = json_string_value(json_object_get(row, "entry_point"));
    const char *prompt = row_string(row, (const char *const[]){"prompt", "problem", NULL});
    if (!resp) return unscored(out, "field 'response': expected a string");
    if (!test || !ep) return unscored(out, "code_tests: the row needs string fields 'test' (def check(candidate)) and 'entry_point'");
    const char *score = json_string_value(json_object_get(params, "score"));
    int fraction = score && !strcmp(score, "fraction");
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
    if (!fraction) {
        jr_strbuf_add(&b, "\n");
        jr_strbuf_add(&b, test);
        jr_strbuf_add(&b, "\ncheck(");
        jr_strbuf_add(&b, ep);
        jr_strbuf_add(&b, ")");
    }
    free(code);
    char *program = jr_strbuf_take(&b);
    if (!program) return unscored(out, "out of memory");
    jr_sandbox_opts so;
    jr_sandbox_opts_from_config(&so, cfg);
    jr_py_job job = {program, fraction ? test : NULL, fraction ? ep : NULL};
    jr_py_result r;
    jr_status st = jr_sandbox_python(&so, &job, &r);
    free(program);
    if (st) return unscored(out, "code_tests: %s", jr_errmsg());
    out->value = fraction ? (r.asserts_total ? (double)r.asserts_passed / r.asserts_total : r.outcome == JR_SB_PASSED)
                          : r.outcome == JR_SB_PASSED;
    out->detail = fraction ? json_pack("{s:s,s:i,s:i}", "result", r.result, "asserts_passed", r.asserts_passed, "asserts_total", r.asserts_total)
                           : json_pack("{s:s}", "result", r.result);
    jr_py_result_free(&r);
    return JR_RW_SCORED;
}

jr_status jr_rw_check_final_answer(const json_t *params) {
    if (!json_is_object(params)) return jr_fail(JR_EINVAL, "expected a mapping");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)params, k, v) return jr_fail(JR_EINVAL, "unknown key '%s' (final_answer takes no params)", k);
    return JR_OK;
}

jr_rw_rc jr_rw_eval_final_answer(const jr_config *cfg, const json_t *params, const json_t *row, jr_rw_out *out) {
    const char *resp = row_string(row, response_names);
    const json_t *rv = json_object_get(row, "reference");
    if (!rv) rv = json_object_get(row, "answer");
    char nb[64];
    const char *ref = json_string_value(rv);
    if (json_is_integer(rv)) { snprintf(nb, sizeof nb, "%lld", (long long)json_integer_value(rv)); ref = nb; }
    else if (json_is_real(rv)) { snprintf(nb, sizeof nb, "%.17g", json_real_value(rv)); ref = nb; }
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
