/* rubric.c - rubric grading as HealthBench defines it and RuscaRL trains with it: criteria with
 * points (negative for pitfalls), judged one call per criterion or in one batched call with a
 * per-criterion fallback; a criterion that cannot be graded leaves the sample unscored */
#include <math.h>
#include <stdio.h>

#include "judge/proto_util.h"

typedef struct {
    char *tmpl, *batch_tmpl;
    int batched, fallback, not_present, clip;
    int constrained; /* judge.constraint is set: the batched call gets its own (batch_constraint) */
} rubric;

static const char *const prompt_names[] = {"prompt", "question", "problem", NULL};

/* ---- reading a rubric ---- */

void jr_rubric_free(jr_criterion *items, size_t n) {
    for (size_t i = 0; items && i < n; i++) {
        free(items[i].text);
        free(items[i].rule);
        json_decref(items[i].params);
    }
    free(items);
}

/* RuscaRL tags: a list of "key:value" strings (a bare string is key -> true) or an object.
 * Returns a new object. */
static json_t *tags_object(const json_t *tags) {
    if (json_is_object(tags)) return json_incref((json_t *)tags);
    json_t *o = json_object();
    size_t i;
    json_t *t;
    json_array_foreach(tags, i, t) {
        const char *s = json_string_value(t);
        if (!s) continue;
        const char *c = strchr(s, ':');
        if (!c) { json_object_set_new(o, s, json_true()); continue; }
        char *k = strndup(s, (size_t)(c - s));
        if (!k) continue;
        json_object_set_new(o, k, json_string(c + 1));
        free(k);
    }
    return o;
}

jr_status jr_rubric_read(const json_t *rubric, jr_criterion **items, size_t *n) {
    *items = NULL;
    *n = 0;
    if (!json_is_array(rubric) || json_array_size(rubric) == 0)
        return jr_fail(JR_EINVAL, "field 'rubric': expected a non-empty list of {criterion, points}");
    size_t cnt = json_array_size(rubric);
    jr_criterion *v = jr_calloc(cnt, sizeof *v);
    if (!v) return JR_ENOMEM;
    for (size_t i = 0; i < cnt; i++) {
        const json_t *it = json_array_get(rubric, i);
        const json_t *crit = json_object_get(it, "criterion"), *pts = json_object_get(it, "points");
        if (!json_is_string(crit)) { jr_rubric_free(v, cnt); return jr_fail(JR_EINVAL, "field 'rubric'[%zu].criterion: expected a string", i); }
        if (!json_is_number(pts)) { jr_rubric_free(v, cnt); return jr_fail(JR_EINVAL, "field 'rubric'[%zu].points: expected a number", i); }
        v[i].points = json_number_value(pts);
        if (!(v[i].text = jr_strdup(json_string_value(crit)))) { jr_rubric_free(v, cnt); return JR_ENOMEM; }
        const json_t *rule = json_object_get(it, "rule");
        if (json_is_string(rule)) {
            if (!(v[i].rule = jr_strdup(json_string_value(rule)))) { jr_rubric_free(v, cnt); return JR_ENOMEM; }
            const json_t *p = json_object_get(it, "params");
            v[i].params = p ? json_incref((json_t *)p) : NULL;
        } else if (json_object_get(it, "tags")) {
            json_t *tags = tags_object(json_object_get(it, "tags"));
            const char *ver = json_string_value(json_object_get(tags, "verifier"));
            const char *fn = json_string_value(json_object_get(tags, "function"));
            json_t *par = json_object_get(tags, "parameters");
            if (ver && !strcmp(ver, "rule") && fn && par) {
                v[i].rule = jr_strdup(fn);
                /* RuscaRL writes parameters as a JSON text inside a "key:value" tag. */
                json_t *pj = json_is_string(par) ? json_loads(json_string_value(par), JSON_DECODE_ANY, NULL) : NULL;
                v[i].params = pj ? pj : json_incref(par);
            }
            json_decref(tags);
        }
    }
    *items = v;
    *n = cnt;
    return JR_OK;
}

/* ---- scoring ---- */

int jr_rubric_score(const jr_criterion *items, size_t n, const int *met, int clip_sample, double *score) {
    double possible = 0, achieved = 0;
    for (size_t i = 0; i < n; i++) {
        if (met[i] < 0) return -1;
        if (items[i].points > 0) possible += items[i].points;
        if (met[i]) achieved += items[i].points;
    }
    if (possible <= 0) return 0;
    double s = achieved / possible;
    if (clip_sample) s = fmin(1, fmax(0, s));
    *score = s;
    return 1;
}

size_t jr_rubric_aggregate(const double *scores, const int *scored, size_t n, double *mean) {
    double sum = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (scored[i]) { sum += scores[i]; k++; }
    *mean = k ? fmin(1, fmax(0, sum / (double)k)) : 0;
    return k;
}

/* ---- parsing verdicts ---- */

jr_status jr_rubric_parse_one(const char *text, int *met) {
    json_t *j = jr_verdict_json(text);
    if (!j) {
        /* A verdict whose explanation broke the JSON: look for "criteria_met": true|false. */
        const char *k = text ? strstr(text, "\"criteria_met\"") : NULL;
        if (k) {
            const char *q = k + 14;
            while (*q == ' ' || *q == ':' || *q == '\t' || *q == '\n') q++;
            if (!strncmp(q, "true", 4)) { *met = 1; return JR_OK; }
            if (!strncmp(q, "false", 5)) { *met = 0; return JR_OK; }
        }
        return jr_fail(JR_EFORMAT, "no JSON object with criteria_met in the verdict");
    }
    json_t *m = json_object_get(j, "criteria_met");
    int ok = json_is_boolean(m);
    if (ok) *met = json_is_true(m);
    json_decref(j);
    return ok ? JR_OK : jr_fail(JR_EFORMAT, "criteria_met is missing or not a boolean");
}

jr_status jr_rubric_parse_batch(const char *text, size_t n, int *met) {
    for (size_t i = 0; i < n; i++) met[i] = -1;
    json_t *j = jr_verdict_json(text);
    if (!j) return jr_fail(JR_EFORMAT, "no JSON object in the batched verdict");
    const char *key;
    json_t *val;
    json_object_foreach(j, key, val) {
        char *end;
        long idx = strtol(key, &end, 10);
        if (end == key || *end || idx < 1 || (size_t)idx > n || !json_is_string(val)) continue;
        const char *s = json_string_value(val);
        while (*s == ' ') s++;
        if (proto_prefix_ci(s, "NOT_PRESENT") || proto_prefix_ci(s, "NOT PRESENT")) met[idx - 1] = 0;
        else if (proto_prefix_ci(s, "PRESENT")) met[idx - 1] = 1;
    }
    json_decref(j);
    size_t missing = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (met[i] < 0 && !missing++) first = i + 1;
    if (missing) return jr_fail(JR_EFORMAT, "batched verdict lacks %zu of %zu criteria (first: %zu)", missing, n, first);
    return JR_OK;
}

/* ---- the protocol ---- */

static void rb_close(void *state) {
    rubric *r = state;
    if (!r) return;
    free(r->tmpl);
    free(r->batch_tmpl);
    free(r);
}

static jr_status rb_open(const jr_judge_opts *o, const char *cfg_dir, void **state) {
    *state = NULL;
    rubric *r = jr_calloc(1, sizeof *r);
    if (!r) return JR_ENOMEM;
    r->batched = o->rubric.batched;
    r->fallback = o->rubric.fallback;
    r->not_present = o->rubric.not_present;
    r->clip = o->rubric.clip_sample;
    r->constrained = o->constraint != NULL;
    jr_status st = proto_template(o->rubric.template_path, cfg_dir, "judge.rubric.template", "templates/rubric_criterion.txt", &r->tmpl);
    if (!st && r->batched)
        st = proto_template(o->rubric.batch_template, cfg_dir, "judge.rubric.batch_template", "templates/rubric_batch.txt", &r->batch_tmpl);
    if (st) { rb_close(r); return st; }
    *state = r;
    return JR_OK;
}

/* Reads the row's rubric and its rule results: met[i] is rule_met[i] (0/1) for rule items, -1
 * for the judge's. Caller frees items and *met. */
static jr_status read_row(const json_t *row, jr_criterion **items, size_t *n, int **met) {
    jr_status st = jr_rubric_read(json_object_get(row, "rubric"), items, n);
    if (st) return st;
    *met = jr_malloc(*n * sizeof **met);
    if (!*met) { jr_rubric_free(*items, *n); return JR_ENOMEM; }
    const json_t *rm = json_object_get(row, "rule_met");
    for (size_t i = 0; i < *n; i++) {
        (*met)[i] = -1;
        if (!(*items)[i].rule) continue;
        const json_t *v = json_array_get(rm, i);
        if (json_is_boolean(v)) (*met)[i] = json_is_true(v);
        else if (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1))
            (*met)[i] = (int)json_integer_value(v);
        else {
            free(*met);
            jr_rubric_free(*items, *n);
            return jr_fail(JR_EINVAL, "field 'rubric'[%zu] is a rule (%s) without a result in 'rule_met'[%zu]: grade "
                                      "rule criteria through reward.components (fn: rubric)", i, (*items)[i].rule, i);
        }
    }
    return JR_OK;
}

/* A view with prompt and response for the templates (new reference; NULL on a bad row). */
static json_t *base_view(const json_t *row) {
    const json_t *resp = json_object_get(row, "response");
    if (!json_is_string(resp)) { jr_fail(JR_EINVAL, "field 'response': expected a string"); return NULL; }
    json_t *view = json_object();
    char *prompt = jr_row_text(row, prompt_names);
    if (!view) { free(prompt); return NULL; }
    json_object_set_new(view, "prompt", json_string(prompt ? prompt : ""));
    free(prompt);
    json_object_set(view, "response", (json_t *)resp);
    return view;
}

static jr_status add_criterion_call(rubric *r, json_t *view, const jr_criterion *c, size_t i, jr_judge_calls *calls) {
    char item[64], tag[48];
    snprintf(item, sizeof item, "[%g] ", c->points);
    size_t tl = strlen(item) + strlen(c->text) + 1;
    char *t = jr_malloc(tl);
    if (!t) return JR_ENOMEM;
    snprintf(t, tl, "%s%s", item, c->text);
    json_object_set_new(view, "rubric_item", json_string(t));
    json_object_set_new(view, "criterion", json_string(c->text));
    json_object_set_new(view, "points", json_real(c->points));
    free(t);
    snprintf(tag, sizeof tag, "criterion %zu", i);
    return proto_add(calls, r->tmpl, NULL, view, NULL, tag);
}

static jr_status add_per_criterion(rubric *r, const json_t *row, const jr_criterion *items, size_t n, const int *met,
                                   jr_judge_calls *calls) {
    json_t *view = base_view(row);
    if (!view) return JR_EINVAL;
    jr_status st = JR_OK;
    for (size_t i = 0; i < n && !st; i++)
        if (met[i] < 0) st = add_criterion_call(r, view, &items[i], i, calls);
    json_decref(view);
    return st;
}

/* The batched answer's JSON schema: {"1": "PRESENT" | "NOT_PRESENT", ..., "k": ...}, every key
 * required in order (judge.constraint, meant for the per-criterion answers, does not fit it). */
static json_t *batch_constraint(size_t k) {
    json_t *props = json_object(), *req = json_array();
    for (size_t i = 1; props && req && i <= k; i++) {
        char key[24];
        snprintf(key, sizeof key, "%zu", i);
        json_object_set_new(props, key, json_pack("{s:[s,s]}", "enum", "PRESENT", "NOT_PRESENT"));
        json_array_append_new(req, json_string(key));
    }
    if (!props || !req) { json_decref(props); json_decref(req); return NULL; }
    return json_pack("{s:{s:s,s:o,s:o,s:b}}", "json_schema", "type", "object", "properties", props, "required", req,
                     "additionalProperties", 0);
}

static jr_status rb_build(void *state, const json_t *row, jr_judge_calls *calls) {
    rubric *r = state;
    jr_criterion *items;
    size_t n;
    int *met;
    jr_status st = read_row(row, &items, &n, &met);
    if (st) return st;
    size_t n_llm = 0;
    for (size_t i = 0; i < n; i++) n_llm += met[i] < 0;
    if (!n_llm) {
        st = jr_fail(JR_EINVAL, "field 'rubric': every criterion is a rule; nothing for the judge (grade it through "
                                "reward.components)");
    } else if (!r->batched) {
        st = add_per_criterion(r, row, items, n, met, calls);
    } else {
        json_t *view = base_view(row);
        size_t cap = 64;
        for (size_t i = 0; i < n; i++) cap += strlen(items[i].text) + 48;
        char *list = view ? jr_malloc(cap) : NULL;
        if (!view || !list) st = view ? JR_ENOMEM : JR_EINVAL;
        else {
            size_t off = 0, k = 0;
            list[0] = 0;
            for (size_t i = 0; i < n; i++)
                if (met[i] < 0)
                    off += (size_t)snprintf(list + off, cap - off, "%s%zu. (points: %g) %s", k ? "\n" : "", k + 1,
                                            items[i].points, items[i].text), k++;
            json_object_set_new(view, "rubric_items", json_string(list));
            char tag[48];
            snprintf(tag, sizeof tag, "batch %zu", n_llm);
            st = proto_add(calls, r->batch_tmpl, NULL, view, NULL, tag);
            if (!st && r->constrained && !(calls->v[calls->n - 1].constraint = batch_constraint(n_llm))) st = JR_ENOMEM;
        }
        free(list);
        json_decref(view);
    }
    free(met);
    jr_rubric_free(items, n);
    return st;
}

static jr_parse_rc rb_parse(void *state, const json_t *row, const jr_judge_call *call, int index,
                            const jr_judge_response *resp, double *value, json_t **detail, char *why, size_t why_len) {
    const char *tag = call->tag ? call->tag : "";
    if (!strncmp(tag, "batch ", 6)) {
        size_t n = (size_t)strtoul(tag + 6, NULL, 10);
        int *met = jr_malloc((n ? n : 1) * sizeof *met);
        if (!met) { snprintf(why, why_len, "out of memory"); return JR_PARSE_GIVE_UP; }
        jr_status st = jr_rubric_parse_batch(resp->text, n, met);
        if (st) {
            snprintf(why, why_len, "%s", jr_errmsg());
            free(met);
            return JR_PARSE_RETRY;
        }
        json_t *arr = json_array();
        int k = 0;
        for (size_t i = 0; i < n; i++) { json_array_append_new(arr, json_integer(met[i])); k += met[i]; }
        free(met);
        *value = k;
        *detail = json_pack("{s:o}", "met", arr);
        return JR_PARSE_OK;
    }
    int met;
    if (jr_rubric_parse_one(resp->text, &met)) {
        snprintf(why, why_len, "%s: %s", tag, jr_errmsg());
        return JR_PARSE_RETRY;
    }
    *value = met;
    json_t *j = jr_verdict_json(resp->text);
    json_t *ex = j ? json_object_get(j, "explanation") : NULL;
    *detail = json_pack("{s:O?}", "explanation", json_is_string(ex) ? ex : NULL);
    json_decref(j);
    return JR_PARSE_OK;
}

static jr_verdict rb_combine(void *state, const json_t *row, jr_judge_calls *calls, const jr_call_result *res, int n,
                             jr_judge_outcome *out) {
    rubric *r = state;
    jr_criterion *items;
    size_t ni;
    int *met;
    if (read_row(row, &items, &ni, &met)) {
        PROTO_UNSCORED(out, "rubric: %s", jr_errmsg());
        return JR_VERDICT_UNSCORED;
    }
    int *is_rule = jr_calloc(ni, sizeof *is_rule);
    const char *first_err = NULL;
    size_t first_bad = 0;
    int batch_failed = 0;
    for (size_t i = 0; is_rule && i < ni; i++) is_rule[i] = met[i] >= 0;
    for (int c = 0; c < n; c++) {
        const char *tag = calls->v[c].tag ? calls->v[c].tag : "";
        if (!strncmp(tag, "batch ", 6)) {
            if (!res[c].ok) { batch_failed = 1; first_err = res[c].error; continue; }
            json_t *arr = json_object_get(res[c].detail, "met");
            size_t k = 0;
            for (size_t i = 0; i < ni; i++)
                if (met[i] < 0 && !is_rule[i]) {
                    json_t *v = json_array_get(arr, k++);
                    if (json_is_integer(v)) met[i] = (int)json_integer_value(v);
                }
        } else if (!strncmp(tag, "criterion ", 10)) {
            size_t i = (size_t)strtoul(tag + 10, NULL, 10);
            if (i < ni && res[c].ok) met[i] = res[c].value > 0.5;
        }
    }
    jr_verdict verdict;
    /* A batched call that failed: one call per criterion, once. */
    if (batch_failed && n == 1 && r->fallback && is_rule) {
        jr_status st = add_per_criterion(r, row, items, ni, met, calls);
        if (!st) { verdict = JR_VERDICT_MORE; goto done; }
        PROTO_UNSCORED(out, "rubric: fallback calls: %s", jr_errmsg());
        verdict = JR_VERDICT_UNSCORED;
        goto done;
    }
    size_t n_failed = 0;
    for (size_t i = 0; i < ni; i++)
        if (met[i] < 0 && !n_failed++) first_bad = i;
    if (n_failed && !r->not_present) {
        /* The error of the failed criterion's call, when it had its own. */
        char tag[48];
        snprintf(tag, sizeof tag, "criterion %zu", first_bad);
        for (int c = 0; c < n; c++)
            if (calls->v[c].tag && !strcmp(calls->v[c].tag, tag) && res[c].error) first_err = res[c].error;
        PROTO_UNSCORED(out, "rubric: %zu of %zu criteria could not be graded (criterion %zu: %s)", n_failed, ni,
                       first_bad, first_err ? first_err : "no verdict");
        verdict = JR_VERDICT_UNSCORED;
        goto done;
    }
    json_t *failed = json_array();
    for (size_t i = 0; i < ni; i++)
        if (met[i] < 0) { met[i] = 0; json_array_append_new(failed, json_integer((json_int_t)i)); }
    double score = 0;
    int rc = jr_rubric_score(items, ni, met, r->clip, &score);
    if (rc == 0) {
        json_decref(failed);
        PROTO_UNSCORED(out, "rubric: no criterion has positive points (HealthBench scores this None)");
        verdict = JR_VERDICT_UNSCORED;
        goto done;
    }
    double possible = 0, achieved = 0;
    json_t *marr = json_array();
    for (size_t i = 0; i < ni; i++) {
        if (items[i].points > 0) possible += items[i].points;
        if (met[i]) achieved += items[i].points;
        json_array_append_new(marr, json_integer(met[i]));
    }
    out->reward = score;
    out->scores = json_pack("{s:f,s:f,s:f}", "rubric", score, "points", achieved, "possible", possible);
    out->detail = json_pack("{s:o}", "met", marr);
    if (json_array_size(failed)) json_object_set(out->detail, "failed_as_not_present", failed);
    if (batch_failed) json_object_set_new(out->detail, "fallback", json_true());
    json_decref(failed);
    verdict = JR_VERDICT_SCORED;
done:
    free(is_rule);
    free(met);
    jr_rubric_free(items, ni);
    return verdict;
}

const jr_protocol jr_protocol_rubric = {
    .name = "rubric",
    .open = rb_open,
    .close = rb_close,
    .build = rb_build,
    .parse = rb_parse,
    .combine = rb_combine,
};
