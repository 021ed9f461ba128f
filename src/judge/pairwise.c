/* pairwise.c - pairwise comparison judged in both orders: disagreement between the orders is a
 * tie, and whether the two orders agree (position consistency) is reported per sample */
#include <stdio.h>

#include "judge/proto_util.h"

typedef struct {
    char *tmpl, *system, *other;
    int swap;
    double win, tie, loss;
} pairwise;

static const char *const prompt_names[] = {"prompt", "question", "problem", NULL};

/* JR_PW_* for a verdict word at p ("A", "B", "C", "tie"), -1 otherwise. */
static int pw_word(const char *p) {
    if (!*p) return -1;
    if (proto_prefix_ci(p, "tie")) return JR_PW_TIE;
    if (isalpha((unsigned char)p[1])) return -1;
    switch (*p) {
    case 'A': case 'a': return JR_PW_FIRST;
    case 'B': case 'b': return JR_PW_SECOND;
    case 'C': case 'c': return JR_PW_TIE;
    }
    return -1;
}

jr_status jr_pairwise_parse(const char *text, int *verdict) {
    if (!text) return jr_fail(JR_EFORMAT, "no verdict text");
    int found = -1;
    /* The last [[X]]. */
    for (const char *p = strstr(text, "[["); p; p = strstr(p + 2, "[[")) {
        const char *q = p + 2;
        while (*q == ' ') q++;
        int v = pw_word(q);
        if (v < 0) continue;
        while (isalpha((unsigned char)*q)) q++;
        while (*q == ' ') q++;
        if (!strncmp(q, "]]", 2)) found = v;
    }
    if (found >= 0) { *verdict = found; return JR_OK; }
    json_t *j = jr_verdict_json(text);
    if (j) {
        const char *w = json_string_value(json_object_get(j, "winner"));
        int v = w ? pw_word(w) : -1;
        int whole = w && (!w[0] || !w[1] || !strcasecmp(w, "tie"));
        json_decref(j);
        if (v >= 0 && whole) { *verdict = v; return JR_OK; }
    }
    /* The last "winner: X". */
    for (const char *p = text; *p; p++) {
        if (!proto_prefix_ci(p, "winner")) continue;
        const char *q = p + 6;
        while (*q == ':' || *q == ' ' || *q == '*' || *q == '"' || *q == '`' || *q == '=') q++;
        if (proto_prefix_ci(q, "response ")) q += 9;
        int v = pw_word(q);
        if (v >= 0) found = v;
    }
    if (found >= 0) { *verdict = found; return JR_OK; }
    return jr_fail(JR_EFORMAT, "no [[A]] / [[B]] / [[C]] verdict found");
}

void jr_pairwise_combine(int v_xy, int v_yx, int *winner, int *consistent) {
    /* In the swapped order "first" is y: map it back to x's point of view. */
    int back = v_yx == JR_PW_FIRST ? JR_PW_SECOND : v_yx == JR_PW_SECOND ? JR_PW_FIRST : JR_PW_TIE;
    *consistent = v_xy == back;
    *winner = *consistent ? v_xy : JR_PW_TIE;
}

static void pw_close(void *state) {
    pairwise *p = state;
    if (!p) return;
    free(p->tmpl);
    free(p->system);
    free(p->other);
    free(p);
}

static jr_status pw_open(const jr_judge_opts *o, const char *cfg_dir, void **state) {
    *state = NULL;
    pairwise *p = jr_calloc(1, sizeof *p);
    if (!p) return JR_ENOMEM;
    int oom = 0;
    p->system = proto_opt_str(o->pairwise.system, &oom);
    p->other = proto_opt_str(o->pairwise.other_field, &oom);
    p->swap = o->pairwise.swap;
    p->win = o->pairwise.win;
    p->tie = o->pairwise.tie;
    p->loss = o->pairwise.loss;
    jr_status st = oom ? JR_ENOMEM : JR_OK;
    if (!st && !p->other) st = jr_fail(JR_EINVAL, "judge.pairwise.other_field: must name a row field");
    if (!st) st = proto_template(o->pairwise.template_path, cfg_dir, "judge.pairwise.template", "templates/pairwise.txt", &p->tmpl);
    if (st) { pw_close(p); return st; }
    *state = p;
    return JR_OK;
}

static jr_status pw_build(void *state, const json_t *row, jr_judge_calls *calls) {
    pairwise *p = state;
    const json_t *x = json_object_get(row, "response"), *y = json_object_get(row, p->other);
    if (!json_is_string(x)) return jr_fail(JR_EINVAL, "field 'response': expected a string");
    if (!json_is_string(y)) return jr_fail(JR_EINVAL, "field '%s': expected a string (judge.pairwise.other_field)", p->other);
    char *prompt = jr_row_text(row, prompt_names);
    json_t *view = json_object();
    if (!view) { free(prompt); return JR_ENOMEM; }
    json_object_set_new(view, "prompt", json_string(prompt ? prompt : ""));
    free(prompt);
    json_object_set(view, "response_a", (json_t *)x);
    json_object_set(view, "response_b", (json_t *)y);
    jr_status st = proto_add(calls, p->tmpl, p->system, view, NULL, "order AB");
    if (!st && p->swap) {
        json_object_set(view, "response_a", (json_t *)y);
        json_object_set(view, "response_b", (json_t *)x);
        st = proto_add(calls, p->tmpl, p->system, view, NULL, "order BA");
    }
    json_decref(view);
    return st;
}

static jr_parse_rc pw_parse(void *state, const json_t *row, const jr_judge_call *call, int index,
                            const jr_judge_response *resp, double *value, json_t **detail, char *why, size_t why_len) {
    int v;
    if (jr_pairwise_parse(resp->text, &v)) {
        snprintf(why, why_len, "%s: %s", call->tag ? call->tag : "pairwise", jr_errmsg());
        return JR_PARSE_RETRY;
    }
    *value = v;
    return JR_PARSE_OK;
}

static const char *vname(int v) { return v == JR_PW_FIRST ? "A" : v == JR_PW_SECOND ? "B" : "tie"; }

static jr_verdict pw_combine(void *state, const json_t *row, jr_judge_calls *calls, const jr_call_result *res, int n,
                             jr_judge_outcome *out) {
    pairwise *p = state;
    for (int c = 0; c < n; c++)
        if (!res[c].ok) {
            PROTO_UNSCORED(out, "pairwise %s: %s", calls->v[c].tag ? calls->v[c].tag : "", res[c].error ? res[c].error : "failed");
            return JR_VERDICT_UNSCORED;
        }
    int v_xy = (int)res[0].value, winner, consistent = 1;
    if (p->swap && n >= 2) jr_pairwise_combine(v_xy, (int)res[1].value, &winner, &consistent);
    else winner = v_xy;
    out->reward = winner == JR_PW_FIRST ? p->win : winner == JR_PW_SECOND ? p->loss : p->tie;
    out->scores = json_pack("{s:f,s:i}", "pairwise", out->reward, "consistent", consistent);
    out->detail = json_pack("{s:s,s:s,s:b}", "winner",
                            winner == JR_PW_FIRST ? "response" : winner == JR_PW_SECOND ? p->other : "tie",
                            "order_ab", vname(v_xy), "consistent", consistent);
    if (p->swap && n >= 2) json_object_set_new(out->detail, "order_ba", json_string(vname((int)res[1].value)));
    return JR_VERDICT_SCORED;
}

const jr_protocol jr_protocol_pairwise = {
    .name = "pairwise",
    .open = pw_open,
    .close = pw_close,
    .build = pw_build,
    .parse = pw_parse,
    .combine = pw_combine,
};
