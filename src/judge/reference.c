/* reference.c - reference correctness: is the response equivalent to the reference answer?
 * One call per row; CORRECT / INCORRECT mapped to configurable rewards (seed 2: 10 / -5) */
#include <stdio.h>

#include "judge/proto_util.h"

typedef struct {
    char *tmpl, *system;
    double correct, incorrect;
} reference;

static const char *const prompt_names[] = {"prompt", "question", "problem", NULL};
static const char *const reference_names[] = {"reference", "answer", NULL};

/* 1 / 0 for a verdict word at p (case-insensitive, followed by a non-letter), -1 otherwise. */
static int verdict_word(const char *p) {
    static const struct { const char *w; int v; } words[] = {
        {"incorrect", 0}, {"not_equivalent", 0}, {"not equivalent", 0}, {"not correct", 0}, {"wrong", 0},
        {"correct", 1},   {"equivalent", 1},
    };
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        size_t n = strlen(words[i].w);
        if (proto_prefix_ci(p, words[i].w) && !isalpha((unsigned char)p[n]) && p[n] != '_') return words[i].v;
    }
    return -1;
}

jr_status jr_reference_parse(const char *text, int *correct) {
    if (!text) return jr_fail(JR_EFORMAT, "no verdict text");
    json_t *j = jr_verdict_json(text);
    if (j) {
        static const char *const bools[] = {"correct", "equivalent", "is_correct"};
        int v = -1;
        json_t *s = json_object_get(j, "verdict");
        if (json_is_string(s)) v = verdict_word(json_string_value(s));
        for (size_t i = 0; v < 0 && i < 3; i++) {
            json_t *b = json_object_get(j, bools[i]);
            if (json_is_boolean(b)) v = json_is_true(b);
        }
        json_decref(j);
        if (v >= 0) { *correct = v; return JR_OK; }
    }
    /* The last "verdict" marker followed by a verdict word. */
    int found = -1;
    for (const char *p = text; *p; p++) {
        if (!proto_prefix_ci(p, "verdict")) continue;
        const char *q = p + 7;
        while (*q && (*q == ':' || *q == '*' || *q == ' ' || *q == '\t' || *q == '[' || *q == '"' || *q == '`' ||
                      *q == '\n' || *q == '='))
            q++;
        int v = verdict_word(q);
        if (v >= 0) found = v;
    }
    if (found >= 0) { *correct = found; return JR_OK; }
    /* A text that is only the verdict word, with markup around it. */
    const char *b = text;
    while (*b && !isalpha((unsigned char)*b)) b++;
    int v = verdict_word(b);
    if (v >= 0) {
        const char *e = b;
        while (isalpha((unsigned char)*e) || *e == '_' || (*e == ' ' && isalpha((unsigned char)e[1]))) e++;
        while (*e && !isalpha((unsigned char)*e)) e++;
        if (!*e) { *correct = v; return JR_OK; }
    }
    return jr_fail(JR_EFORMAT, "no CORRECT / INCORRECT verdict found");
}

static void ref_close(void *state) {
    reference *r = state;
    if (!r) return;
    free(r->tmpl);
    free(r->system);
    free(r);
}

static jr_status ref_open(const jr_judge_opts *o, const char *cfg_dir, void **state) {
    *state = NULL;
    reference *r = jr_calloc(1, sizeof *r);
    if (!r) return JR_ENOMEM;
    int oom = 0;
    r->system = proto_opt_str(o->reference.system, &oom);
    r->correct = o->reference.correct;
    r->incorrect = o->reference.incorrect;
    jr_status st = oom ? JR_ENOMEM : proto_template(o->reference.template_path, cfg_dir, "judge.reference.template", "templates/reference.txt", &r->tmpl);
    if (st) { ref_close(r); return st; }
    *state = r;
    return JR_OK;
}

static jr_status ref_build(void *state, const json_t *row, jr_judge_calls *calls) {
    reference *r = state;
    const json_t *resp = json_object_get(row, "response");
    if (!json_is_string(resp)) return jr_fail(JR_EINVAL, "field 'response': expected a string");
    const json_t *ref = NULL;
    for (int i = 0; reference_names[i] && !ref; i++) {
        const json_t *v = json_object_get(row, reference_names[i]);
        if (json_is_string(v) || json_is_number(v)) ref = v;
    }
    if (!ref) return jr_fail(JR_EINVAL, "field 'reference' (or 'answer'): expected a string or a number");
    char *prompt = jr_row_text(row, prompt_names);
    json_t *view = json_object();
    if (!view) { free(prompt); return JR_ENOMEM; }
    if (prompt) json_object_set_new(view, "prompt", json_string(prompt));
    free(prompt);
    json_object_set(view, "response", (json_t *)resp);
    json_object_set(view, "reference", (json_t *)ref);
    jr_status st = proto_add(calls, r->tmpl, r->system, view, NULL, "reference");
    json_decref(view);
    return st;
}

static jr_parse_rc ref_parse(void *state, const json_t *row, const jr_judge_call *call, int index,
                             const jr_judge_response *resp, double *value, json_t **detail, char *why, size_t why_len) {
    int c;
    if (jr_reference_parse(resp->text, &c)) {
        snprintf(why, why_len, "%s%s", jr_errmsg(),
                 !strcmp(resp->finish_reason, "length") ? " (finish_reason=length)" : "");
        return JR_PARSE_RETRY;
    }
    *value = c;
    return JR_PARSE_OK;
}

static jr_verdict ref_combine(void *state, const json_t *row, jr_judge_calls *calls, const jr_call_result *res, int n,
                              jr_judge_outcome *out) {
    reference *r = state;
    if (n < 1 || !res[0].ok) {
        PROTO_UNSCORED(out, "reference: %s", n >= 1 && res[0].error ? res[0].error : "no result");
        return JR_VERDICT_UNSCORED;
    }
    int c = res[0].value > 0.5;
    out->reward = c ? r->correct : r->incorrect;
    out->scores = json_pack("{s:i}", "correct", c);
    out->detail = json_pack("{s:s}", "verdict", c ? "CORRECT" : "INCORRECT");
    return JR_VERDICT_SCORED;
}

const jr_protocol jr_protocol_reference = {
    .name = "reference",
    .open = ref_open,
    .close = ref_close,
    .build = ref_build,
    .parse = ref_parse,
    .combine = ref_combine,
};
