/* pointwise.c - Prometheus-style absolute grading: one call per row, "feedback [RESULT] n", 1..scale */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/judge.h"
#include "judgerl/protocols.h"

typedef struct {
    char *tmpl;
    char *system;
    int scale;
    int normalize;
} pointwise;

static void pw_close(void *state) {
    pointwise *p = state;
    if (!p) return;
    free(p->tmpl);
    free(p->system);
    free(p);
}

static jr_status pw_open(const jr_judge_opts *o, const char *cfg_dir, void **state) {
    *state = NULL;
    pointwise *p = jr_calloc(1, sizeof *p);
    if (!p) return JR_ENOMEM;
    p->scale = o->pointwise.scale;
    p->normalize = o->pointwise.normalize;
    const char *sys = o->pointwise.system;
    const char *path = o->template_path;
    if (!path) {
        if (p->scale == 5) path = "templates/prometheus_absolute.txt";
        else if (p->scale == 10) path = "templates/prometheus_absolute_10.txt";
        else {
            int scale = p->scale;
            pw_close(p);
            return jr_fail(JR_EINVAL, "judge.pointwise.scale=%d has no shipped template: set judge.template", scale);
        }
    }
    jr_status st = jr_template_load(path, cfg_dir, &p->tmpl);
    if (!st && sys && *sys && !(p->system = jr_strdup(sys))) st = JR_ENOMEM;
    if (st) { pw_close(p); return st; }
    *state = p;
    return JR_OK;
}

/* A row's prompt as text: a string, or chat messages rendered "role: content" per line. */
static char *prompt_text(const json_t *v) {
    if (json_is_string(v)) return jr_strdup(json_string_value(v));
    size_t i;
    json_t *m;
    size_t cap = 1;
    json_array_foreach(v, i, m) cap += strlen(json_string_value(json_object_get(m, "role")) ? json_string_value(json_object_get(m, "role")) : "") +
                                      strlen(json_string_value(json_object_get(m, "content")) ? json_string_value(json_object_get(m, "content")) : "") + 4;
    char *s = jr_malloc(cap);
    if (!s) return NULL;
    s[0] = 0;
    json_array_foreach(v, i, m) {
        const char *r = json_string_value(json_object_get(m, "role")), *c = json_string_value(json_object_get(m, "content"));
        if (i) strcat(s, "\n");
        strcat(s, r ? r : "");
        strcat(s, ": ");
        strcat(s, c ? c : "");
    }
    return s;
}

/* A rubric as text: a string, or {criteria, score1_description..scoreN_description}. */
static char *rubric_text(const json_t *v, int scale) {
    if (json_is_string(v)) return jr_strdup(json_string_value(v));
    const char *crit = json_string_value(json_object_get(v, "criteria"));
    size_t cap = strlen(crit ? crit : "") + 8;
    for (int s = 1; s <= scale; s++) {
        char k[32];
        snprintf(k, sizeof k, "score%d_description", s);
        const char *d = json_string_value(json_object_get(v, k));
        cap += strlen(d ? d : "") + 24;
    }
    char *out = jr_malloc(cap);
    if (!out) return NULL;
    size_t off = (size_t)snprintf(out, cap, "[%s]", crit ? crit : "");
    for (int s = 1; s <= scale; s++) {
        char k[32];
        snprintf(k, sizeof k, "score%d_description", s);
        const char *d = json_string_value(json_object_get(v, k));
        if (d) off += (size_t)snprintf(out + off, cap - off, "\nScore %d: %s", s, d);
    }
    return out;
}

static jr_status pw_build(void *state, const json_t *row, jr_judge_calls *calls) {
    pointwise *p = state;
    const json_t *prompt = json_object_get(row, "prompt"), *resp = json_object_get(row, "response");
    const json_t *ref = json_object_get(row, "reference"), *rub = json_object_get(row, "rubric");
    if (!json_is_string(prompt) && !json_is_array(prompt)) return jr_fail(JR_EINVAL, "field 'prompt': expected a string or chat messages");
    if (!json_is_string(resp)) return jr_fail(JR_EINVAL, "field 'response': expected a string");
    if (ref && !json_is_null(ref) && !json_is_string(ref)) return jr_fail(JR_EINVAL, "field 'reference': expected a string");
    if (rub && !json_is_null(rub) && !json_is_string(rub) && !json_is_object(rub))
        return jr_fail(JR_EINVAL, "field 'rubric': expected a string or {criteria, score1_description, ...}");
    json_t *view = json_object();
    char *pt = prompt_text(prompt);
    char *rt = rub && !json_is_null(rub) ? rubric_text(rub, p->scale) : NULL;
    if (!view || !pt || (rub && !json_is_null(rub) && !rt)) { json_decref(view); free(pt); free(rt); return JR_ENOMEM; }
    json_object_set_new(view, "prompt", json_string(pt));
    json_object_set(view, "response", (json_t *)resp);
    if (ref) json_object_set(view, "reference", (json_t *)ref);
    if (rt) json_object_set_new(view, "rubric", json_string(rt));
    json_object_set_new(view, "scale", json_integer(p->scale));
    free(pt);
    free(rt);
    char *text;
    jr_status st = jr_template_render(p->tmpl, view, &text);
    json_decref(view);
    if (st) return st;
    json_t *msgs = json_array();
    if (p->system) json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "system", "content", p->system));
    json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "user", "content", text));
    free(text);
    return jr_judge_calls_add(calls, msgs, NULL, "pointwise", NULL);
}

static jr_parse_rc pw_parse(void *state, const json_t *row, const jr_judge_call *call, int index,
                            const jr_judge_response *resp, double *value, json_t **detail, char *why, size_t why_len) {
    pointwise *p = state;
    int n;
    char reason[200];
    if (!jr_judge_parse_result(resp->text, 1, p->scale, &n, reason, sizeof reason)) {
        /* the JSON form a constrained judge answers: {"feedback": "...", "result": n} */
        json_t *j = jr_verdict_json(resp->text);
        json_t *res = json_object_get(j, "result"), *fb = json_object_get(j, "feedback");
        int ok = json_is_integer(res) && json_integer_value(res) >= 1 && json_integer_value(res) <= p->scale;
        if (ok) {
            *value = (double)json_integer_value(res);
            *detail = json_pack("{s:s}", "feedback", json_is_string(fb) ? json_string_value(fb) : "");
        }
        json_decref(j);
        if (ok) return JR_PARSE_OK;
        if (!strcmp(resp->finish_reason, "length")) snprintf(why, why_len, "finish_reason=length without a verdict (%s)", reason);
        else snprintf(why, why_len, "%s, nor a JSON {\"result\": 1..%d}", reason, p->scale);
        return JR_PARSE_RETRY;
    }
    *value = n;
    /* The feedback: the text before the last [RESULT], without a leading "Feedback:". */
    const char *t = resp->text, *end = NULL;
    for (const char *q = t; *q; q++) if (*q == '[' && !strncasecmp(q, "[RESULT]", 8)) end = q;
    if (!strncasecmp(t, "Feedback:", 9)) t += 9;
    while (*t == ' ' || *t == '\n') t++;
    size_t len = end && end > t ? (size_t)(end - t) : 0;
    while (len && (t[len - 1] == ' ' || t[len - 1] == '\n')) len--;
    if (len > 4000) len = 4000;
    *detail = json_pack("{s:s%}", "feedback", t, len);
    return JR_PARSE_OK;
}

static jr_verdict pw_combine(void *state, const json_t *row, jr_judge_calls *calls, const jr_call_result *res, int n,
                             jr_judge_outcome *out) {
    pointwise *p = state;
    if (n < 1 || !res[0].ok) {
        char buf[1200];
        snprintf(buf, sizeof buf, "pointwise: %s", n >= 1 && res[0].error ? res[0].error : "no result");
        out->reason = jr_strdup(buf);
        return JR_VERDICT_UNSCORED;
    }
    double s = res[0].value;
    out->reward = p->normalize ? (s - 1.0) / (p->scale - 1.0) : s;
    out->scores = json_pack("{s:f}", "pointwise", s);
    out->detail = res[0].detail ? json_incref(res[0].detail) : NULL;
    return JR_VERDICT_SCORED;
}

const jr_protocol jr_protocol_pointwise = {
    .name = "pointwise",
    .open = pw_open,
    .close = pw_close,
    .build = pw_build,
    .parse = pw_parse,
    .combine = pw_combine,
};
