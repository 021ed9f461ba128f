/* verif.c - VerIF: [rule] constraints checked by verifiers (results arrive in the row's rule_met),
 * [llm] constraints checked by one judge call answering [[1]] / [[0]];
 * reward = reduce(rule results) x llm verdict */
#include <stdio.h>

#include "judge/proto_util.h"

typedef struct {
    char *tmpl, *system;
    int all_pass;
} verif;

static const char *const prompt_names[] = {"prompt", "instruction", "question", NULL};

void jr_constraints_free(jr_constraint *items, size_t n) {
    for (size_t i = 0; items && i < n; i++) {
        free(items[i].text);
        free(items[i].rule);
        json_decref(items[i].params);
    }
    free(items);
}

/* Splits "[rule] text" / "[llm] text" into the tag (1 rule, 0 llm, -1 none) and the text. */
static int split_tag(const char *s, const char **text) {
    while (*s == ' ') s++;
    int tag = -1;
    if (proto_prefix_ci(s, "[rule]")) { tag = 1; s += 6; }
    else if (proto_prefix_ci(s, "[llm]")) { tag = 0; s += 5; }
    while (*s == ' ') s++;
    *text = s;
    return tag;
}

/* Fills one constraint from its tagged text and an optional {rule, params} object. */
static jr_status fill(jr_constraint *c, const char *tagged, const json_t *fn, const char *field, size_t i) {
    const char *text;
    int tag = split_tag(tagged, &text);
    if (tag < 0) return jr_fail(JR_EINVAL, "field '%s'[%zu]: '%.60s' lacks a [rule] or [llm] tag", field, i, tagged);
    c->is_rule = tag;
    if (!(c->text = jr_strdup(text))) return JR_ENOMEM;
    if (!tag) return JR_OK;
    if (json_is_string(fn))
        return jr_fail(JR_EINVAL, "field 'functions'[%zu]: Python source is not run; give {\"rule\": NAME, \"params\": ...}", i);
    const char *rule = json_string_value(json_object_get(fn, "rule"));
    if (!rule) return jr_fail(JR_EINVAL, "field '%s'[%zu]: a [rule] constraint needs \"rule\": NAME", field, i);
    if (!(c->rule = jr_strdup(rule))) return JR_ENOMEM;
    json_t *p = json_object_get(fn, "params");
    c->params = p ? json_incref(p) : NULL;
    return JR_OK;
}

jr_status jr_constraints_read(const json_t *row, jr_constraint **items, size_t *n) {
    *items = NULL;
    *n = 0;
    const json_t *cons = json_object_get(row, "constraints"), *chk = json_object_get(row, "checkers");
    const json_t *fns = json_object_get(row, "functions");
    const json_t *list = json_is_array(cons) ? cons : chk;
    const char *field = json_is_array(cons) ? "constraints" : "checkers";
    if (!json_is_array(list) || !json_array_size(list))
        return jr_fail(JR_EINVAL, "field 'constraints' (or 'checkers'): expected a non-empty list");
    if (list == chk && fns && (!json_is_array(fns) || json_array_size(fns) != json_array_size(chk)))
        return jr_fail(JR_EINVAL, "field 'functions': expected a list as long as 'checkers'");
    size_t cnt = json_array_size(list);
    jr_constraint *v = jr_calloc(cnt, sizeof *v);
    if (!v) return JR_ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        const json_t *it = json_array_get(list, i);
        jr_status st;
        if (json_is_string(it)) st = fill(&v[i], json_string_value(it), list == chk ? json_array_get(fns, i) : NULL, field, i);
        else if (json_is_string(json_object_get(it, "constraint")))
            st = fill(&v[i], json_string_value(json_object_get(it, "constraint")), it, field, i);
        else st = jr_fail(JR_EINVAL, "field '%s'[%zu]: expected a string or {constraint, rule, params}", field, i);
        if (st) { jr_constraints_free(v, cnt); return st; }
    }
    *items = v;
    *n = cnt;
    return JR_OK;
}

jr_status jr_verif_parse(const char *text, int *followed) {
    if (!text) return jr_fail(JR_EFORMAT, "no verdict text");
    for (const char *p = strstr(text, "[["); p; p = strstr(p + 2, "[[")) {
        const char *q = p + 2;
        while (*q == ' ') q++;
        if ((*q == '0' || *q == '1') && (q[1] == ']' || (q[1] == ' ' && q[2] == ']'))) {
            *followed = *q == '1';
            return JR_OK;
        }
    }
    json_t *j = jr_verdict_json(text);
    if (j) {
        json_t *s = json_object_get(j, "score");
        int ok = json_is_integer(s) && (json_integer_value(s) == 0 || json_integer_value(s) == 1);
        if (ok) *followed = (int)json_integer_value(s);
        json_decref(j);
        if (ok) return JR_OK;
    }
    return jr_fail(JR_EFORMAT, "no [[1]] / [[0]] verdict found");
}

double jr_verif_reward(const int *rule_met, size_t n_rules, int llm_verdict, int all_pass) {
    double r = 1;
    if (n_rules) {
        size_t pass = 0;
        for (size_t i = 0; i < n_rules; i++) pass += rule_met[i] != 0;
        r = all_pass ? (pass == n_rules) : (double)pass / (double)n_rules;
    }
    return r * (llm_verdict ? 1.0 : 0.0);
}

static void vf_close(void *state) {
    verif *v = state;
    if (!v) return;
    free(v->tmpl);
    free(v->system);
    free(v);
}

static jr_status vf_open(const jr_judge_opts *o, const char *cfg_dir, void **state) {
    *state = NULL;
    verif *v = jr_calloc(1, sizeof *v);
    if (!v) return JR_ENOMEM;
    int oom = 0;
    v->system = proto_opt_str(o->verif.system, &oom);
    v->all_pass = o->verif.all_pass;
    jr_status st = oom ? JR_ENOMEM : proto_template(o->verif.template_path, cfg_dir, "judge.verif.template", "templates/verif.txt", &v->tmpl);
    if (st) { vf_close(v); return st; }
    *state = v;
    return JR_OK;
}

/* Reads constraints and the rule results (rule_met[i] for each [rule] constraint i). Fills
 * rules[] with the results in order; returns the number of [llm] constraints via *n_llm. */
static jr_status read_row(const json_t *row, jr_constraint **items, size_t *n, int **rules, size_t *n_rules,
                          size_t *n_llm) {
    jr_status st = jr_constraints_read(row, items, n);
    if (st) return st;
    *rules = jr_calloc(*n, sizeof **rules);
    if (!*rules) { jr_constraints_free(*items, *n); return JR_ENOMEM; }
    const json_t *rm = json_object_get(row, "rule_met");
    *n_rules = *n_llm = 0;
    for (size_t i = 0; i < *n; i++) {
        if (!(*items)[i].is_rule) { (*n_llm)++; continue; }
        const json_t *v = json_array_get(rm, i);
        if (!json_is_boolean(v) && !json_is_integer(v)) {
            free(*rules);
            jr_constraints_free(*items, *n);
            return jr_fail(JR_EINVAL, "constraint %zu is a [rule] (%s) without a result in 'rule_met'[%zu]: grade "
                                      "VerIF rows through reward.components (fn: verif)", i, (*items)[i].rule, i);
        }
        (*rules)[(*n_rules)++] = json_is_boolean(v) ? json_is_true(v) : json_integer_value(v) != 0;
    }
    return JR_OK;
}

static jr_status vf_build(void *state, const json_t *row, jr_judge_calls *calls) {
    verif *v = state;
    jr_constraint *items;
    size_t n, n_rules, n_llm;
    int *rules;
    jr_status st = read_row(row, &items, &n, &rules, &n_rules, &n_llm);
    if (st) return st;
    const json_t *resp = json_object_get(row, "response");
    char *prompt = jr_row_text(row, prompt_names);
    size_t cap = 1;
    for (size_t i = 0; i < n; i++) cap += strlen(items[i].text) + 4;
    char *list = jr_malloc(cap);
    json_t *view = json_object();
    if (!n_llm) st = jr_fail(JR_EINVAL, "field 'constraints': no [llm] constraint; nothing for the judge");
    else if (!json_is_string(resp)) st = jr_fail(JR_EINVAL, "field 'response': expected a string");
    else if (!prompt) st = jr_fail(JR_EINVAL, "field 'prompt' (or 'instruction'): expected a string or chat messages");
    else if (!list || !view) st = JR_ENOMEM;
    if (!st) {
        size_t off = 0;
        list[0] = 0;
        for (size_t i = 0; i < n; i++)
            if (!items[i].is_rule) off += (size_t)snprintf(list + off, cap - off, "%s- %s", off ? "\n" : "", items[i].text);
        json_object_set_new(view, "prompt", json_string(prompt));
        json_object_set(view, "response", (json_t *)resp);
        json_object_set_new(view, "constraints", json_string(list));
        st = proto_add(calls, v->tmpl, v->system, view, NULL, "verif llm");
    }
    json_decref(view);
    free(list);
    free(prompt);
    free(rules);
    jr_constraints_free(items, n);
    return st;
}

static jr_parse_rc vf_parse(void *state, const json_t *row, const jr_judge_call *call, int index,
                            const jr_judge_response *resp, double *value, json_t **detail, char *why, size_t why_len) {
    int f;
    if (jr_verif_parse(resp->text, &f)) {
        snprintf(why, why_len, "%s", jr_errmsg());
        return JR_PARSE_RETRY;
    }
    *value = f;
    return JR_PARSE_OK;
}

static jr_verdict vf_combine(void *state, const json_t *row, jr_judge_calls *calls, const jr_call_result *res, int n,
                             jr_judge_outcome *out) {
    verif *v = state;
    if (n < 1 || !res[0].ok) {
        PROTO_UNSCORED(out, "verif: %s", n >= 1 && res[0].error ? res[0].error : "no result");
        return JR_VERDICT_UNSCORED;
    }
    jr_constraint *items;
    size_t ni, n_rules, n_llm;
    int *rules;
    if (read_row(row, &items, &ni, &rules, &n_rules, &n_llm)) {
        PROTO_UNSCORED(out, "verif: %s", jr_errmsg());
        return JR_VERDICT_UNSCORED;
    }
    int verdict = res[0].value > 0.5;
    double rule_part = jr_verif_reward(rules, n_rules, 1, v->all_pass);
    out->reward = jr_verif_reward(rules, n_rules, verdict, v->all_pass);
    out->scores = json_pack("{s:f,s:i}", "rules", rule_part, "llm", verdict);
    free(rules);
    jr_constraints_free(items, ni);
    return JR_VERDICT_SCORED;
}

const jr_protocol jr_protocol_verif = {
    .name = "verif",
    .open = vf_open,
    .close = vf_close,
    .build = vf_build,
    .parse = vf_parse,
    .combine = vf_combine,
};
