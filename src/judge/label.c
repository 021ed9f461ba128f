/* label.c - the judge picks one of N labels; confidence from log-probs renormalised over the labels'
 * first tokens (else verbalised), null when the log-probs cannot be trusted (a label absent, or the
 * chosen token far below the best: logprobs_unreliable); verdicts below a threshold are rejected */
#include <math.h>
#include <stdio.h>

#include "judge/proto_util.h"

enum { CONF_AUTO, CONF_LOGPROBS, CONF_VERBAL };

typedef struct {
    char *tmpl, *system;
    char **labels;
    double *values;
    size_t n;
    int mode, top, completions;
    double threshold;
    double max_gap;      /* judge.label.max_logprob_gap */
    int accept_unreliable; /* judge.label.unreliable: accept */
} label;

static const char *const prompt_names[] = {"prompt", "question", "problem", NULL};

static const char *skip_space(const char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
    return s;
}

/* Length of s without trailing non-alphanumerics (ASCII; bytes >= 0x80 count as letters). */
static size_t core_len(const char *s, size_t n) {
    while (n && !isalnum((unsigned char)s[n - 1]) && (unsigned char)s[n - 1] < 0x80) n--;
    return n;
}

static int ci_ncmp(const char *a, const char *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int x = tolower((unsigned char)a[i]), y = tolower((unsigned char)b[i]);
        if (x != y) return x - y;
        if (!x) return 0;
    }
    return 0;
}

jr_status jr_label_check(const char *const *labels, size_t n) {
    if (n < 2) return jr_fail(JR_EINVAL, "labels: need at least 2, got %zu", n);
    for (size_t i = 0; i < n; i++) {
        const char *a = skip_space(labels[i]);
        if (!*a) return jr_fail(JR_EINVAL, "labels[%zu] is empty", i);
        for (size_t j = 0; j < i; j++) {
            const char *b = skip_space(labels[j]);
            size_t la = strlen(a), lb = strlen(b), m = la < lb ? la : lb;
            if (!ci_ncmp(a, b, m)) {
                if (la == lb) return jr_fail(JR_EINVAL, "labels '%s' and '%s' are the same", labels[j], labels[i]);
                return jr_fail(JR_EINVAL, "label '%s' is a prefix of '%s': their first tokens cannot be told apart; "
                                          "rename one", la < lb ? a : b, la < lb ? b : a);
            }
        }
    }
    return JR_OK;
}

/* The label whose text starts s (case-insensitive, followed by a non-alphanumeric), or -1. */
static int label_at(const char *s, const char *const *labels, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const char *l = skip_space(labels[i]);
        size_t ll = strlen(l);
        if (!ci_ncmp(s, l, ll) && strlen(s) >= ll && !isalnum((unsigned char)s[ll])) return (int)i;
    }
    return -1;
}

/* Skips markup before a label: spaces, quotes, asterisks, backticks, brackets. */
static const char *skip_markup(const char *s) {
    while (*s && strchr(" \t\r\n\"'*`_[(<#", *s)) s++;
    return s;
}

static double read_confidence(const char *text) {
    double best = -1;
    for (const char *p = text; *p; p++) {
        if (!proto_prefix_ci(p, "confidence")) continue;
        const char *q = p + 10;
        while (*q && strchr(" \t:*\"=`", *q)) q++;
        char *end;
        double v = strtod(q, &end);
        if (end == q || !isfinite(v)) continue;
        if (*end == '%' || (v > 1 && v <= 100)) v /= 100;
        if (v >= 0 && v <= 1) best = v;
    }
    return best;
}

jr_status jr_label_parse(const char *text, const char *const *labels, size_t n, int *idx, double *verbal) {
    *verbal = -1;
    if (!text) return jr_fail(JR_EFORMAT, "no verdict text");
    json_t *j = jr_verdict_json(text);
    if (j) {
        const char *l = json_string_value(json_object_get(j, "label"));
        json_t *c = json_object_get(j, "confidence");
        int k = l ? label_at(skip_markup(l), labels, n) : -1;
        if (json_is_number(c)) {
            double v = json_number_value(c);
            if (v > 1 && v <= 100) v /= 100;
            if (v >= 0 && v <= 1) *verbal = v;
        } else if (json_is_string(c)) {
            char buf[64];
            snprintf(buf, sizeof buf, "confidence: %s", json_string_value(c));
            *verbal = read_confidence(buf);
        }
        json_decref(j);
        if (k >= 0) { *idx = k; return JR_OK; }
    }
    if (*verbal < 0) *verbal = read_confidence(text);
    /* The last "label:" line. */
    int found = -1;
    for (const char *p = text; *p; p++) {
        if (!proto_prefix_ci(p, "label")) continue;
        const char *q = p + 5;
        while (*q && strchr(" \t*:`", *q)) q++;
        int k = label_at(skip_markup(q), labels, n);
        if (k >= 0) found = k;
    }
    if (found < 0) found = label_at(skip_markup(text), labels, n);
    if (found < 0) return jr_fail(JR_EFORMAT, "the verdict names none of the labels");
    *idx = found;
    return JR_OK;
}

/* Which label a candidate token starts: its index, -1 for none, -2 for more than one. */
static int token_label(const char *tok, const char *const *labels, size_t n) {
    const char *t = skip_space(tok);
    size_t tl = core_len(t, strlen(t));
    if (!tl) return -1;
    int hit = -1;
    for (size_t i = 0; i < n; i++) {
        const char *l = skip_space(labels[i]);
        if (tl <= strlen(l) && !ci_ncmp(t, l, tl)) {
            if (hit >= 0) return -2;
            hit = (int)i;
        }
    }
    return hit;
}

jr_status jr_label_logprob_confidence(const json_t *content, const char *const *labels, size_t n, double max_gap,
                                      int *idx, double *conf, double *probs, char *unreliable, size_t ulen) {
    if (unreliable && ulen) unreliable[0] = 0;
    if (!json_is_array(content) || !json_array_size(content)) return jr_fail(JR_ENOTFOUND, "no log-probs");
    size_t pos;
    json_t *e = NULL;
    json_array_foreach(content, pos, e) {
        const char *tok = json_string_value(json_object_get(e, "token"));
        if (tok && *skip_markup(tok)) break;
    }
    if (pos == json_array_size(content)) return jr_fail(JR_ENOTFOUND, "log-probs hold only blank tokens");
    const char *tok = json_string_value(json_object_get(e, "token"));
    int chosen = token_label(skip_markup(tok), labels, n);
    if (chosen == -1) return jr_fail(JR_ENOTFOUND, "the first token '%.40s' starts no label", tok);
    if (chosen == -2) return jr_fail(JR_ENOTFOUND, "the first token '%.40s' starts several labels", tok);
    double *p = jr_calloc(n, sizeof *p);
    int *seen = jr_calloc(n, sizeof *seen);
    if (!p || !seen) { free(p); free(seen); return JR_ENOMEM; }
    /* The sampled token, then every alternative not equal to it. */
    json_t *top = json_object_get(e, "top_logprobs");
    size_t nt = json_array_size(top);
    int sampled_in_top = 0;
    for (size_t k = 0; k < nt; k++) {
        const char *t = json_string_value(json_object_get(json_array_get(top, k), "token"));
        if (t && !strcmp(t, tok)) sampled_in_top = 1;
    }
    double chosen_lp = json_number_value(json_object_get(e, "logprob")), best_lp = -INFINITY;
    const char *best_tok = NULL;
    jr_status st = JR_OK;
    for (size_t k = 0; k <= nt && !st; k++) {
        const json_t *cand = k < nt ? json_array_get(top, k) : e;
        if (k == nt && sampled_in_top) break;
        const char *t = json_string_value(json_object_get(cand, "token"));
        json_t *lp = json_object_get(cand, "logprob");
        if (!t || !json_is_number(lp)) continue;
        if (json_number_value(lp) > best_lp) { best_lp = json_number_value(lp); best_tok = t; }
        int l = token_label(skip_markup(t), labels, n);
        if (l == -2) st = jr_fail(JR_ENOTFOUND, "token '%.40s' starts several labels: labels do not start with "
                                                "distinct tokens", t);
        else if (l >= 0) { p[l] += exp(json_number_value(lp)); seen[l] = 1; }
    }
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += p[i];
    if (!st && !(sum > 0)) st = jr_fail(JR_ENOTFOUND, "no label has probability mass");
    if (!st) {
        *idx = chosen;
        char why[300] = "";
        /* A greedy (or sampled) token far below the best alternative was not drawn from these
         * log-probs: the server constrained the output after computing them. */
        if (best_tok && chosen_lp < best_lp - max_gap)
            snprintf(why, sizeof why, "the chosen token '%.40s' has log-prob %.2f, %.2f below the best alternative '%.40s' "
                     "(%.2f): the server computed the log-probs before constraining the output", tok, chosen_lp,
                     best_lp - chosen_lp, best_tok, best_lp);
        for (size_t i = 0; i < n && !why[0]; i++)
            if (!seen[i])
                snprintf(why, sizeof why, "label '%.40s' is absent from the returned top log-probs (%zu alternatives): "
                         "its probability is unknown", labels[i], nt);
        if (why[0]) {
            *conf = NAN;
            if (unreliable && ulen) snprintf(unreliable, ulen, "%s", why);
        } else {
            *conf = p[chosen] / sum;
            if (probs)
                for (size_t i = 0; i < n; i++) probs[i] = p[i] / sum;
        }
    }
    free(p);
    free(seen);
    return st;
}

/* ---- the protocol ---- */

static void lb_close(void *state) {
    label *l = state;
    if (!l) return;
    for (size_t i = 0; i < l->n; i++) free(l->labels[i]);
    free(l->labels);
    free(l->values);
    free(l->tmpl);
    free(l->system);
    free(l);
}

static jr_status lb_open(const jr_judge_opts *o, const char *cfg_dir, void **state) {
    *state = NULL;
    label *l = jr_calloc(1, sizeof *l);
    if (!l) return JR_ENOMEM;
    const json_t *labels = o->label.labels, *values = o->label.values;
    size_t n = json_array_size(labels);
    l->mode = o->label.confidence == 1 ? CONF_LOGPROBS : o->label.confidence == 2 ? CONF_VERBAL : CONF_AUTO;
    l->top = o->label.top_logprobs;
    l->completions = !o->chat;
    l->threshold = o->label.threshold;
    l->max_gap = o->label.max_logprob_gap;
    l->accept_unreliable = o->label.accept_unreliable;
    int oom = 0;
    l->system = proto_opt_str(o->label.system, &oom);
    l->labels = jr_calloc(n ? n : 1, sizeof *l->labels);
    l->values = jr_calloc(n ? n : 1, sizeof *l->values);
    jr_status st = oom || !l->labels || !l->values ? JR_ENOMEM : JR_OK;
    for (size_t i = 0; !st && i < n; i++) {
        json_t *v = json_array_get(labels, i);
        if (!json_is_string(v)) st = jr_fail(JR_EINVAL, "judge.label.labels[%zu]: expected a string", i);
        else if (!(l->labels[i] = jr_strdup(json_string_value(v)))) st = JR_ENOMEM;
        else l->n++;
    }
    if (!st) st = jr_label_check((const char *const *)l->labels, l->n);
    if (st && !strncmp(jr_errmsg(), "label", 5)) jr_fail_ctx(st, "judge.label.labels");
    if (!st && json_array_size(values) && json_array_size(values) != n)
        st = jr_fail(JR_EINVAL, "judge.label.values has %zu entries for %zu labels", json_array_size(values), n);
    for (size_t i = 0; !st && i < n; i++) {
        json_t *v = json_array_get(values, i);
        if (!json_array_size(values)) l->values[i] = i == 0;
        else if (!json_is_number(v)) st = jr_fail(JR_EINVAL, "judge.label.values[%zu]: expected a number", i);
        else l->values[i] = json_number_value(v);
    }
    if (!st) st = proto_template(o->label.template_path, cfg_dir, "judge.label.template", "templates/label.txt", &l->tmpl);
    if (st) { lb_close(l); return st; }
    *state = l;
    return JR_OK;
}

static jr_status lb_build(void *state, const json_t *row, jr_judge_calls *calls) {
    label *l = state;
    char *prompt = jr_row_text(row, prompt_names);
    if (!prompt) return jr_fail(JR_EINVAL, "field 'prompt' (or 'question'): expected a string or chat messages");
    const json_t *resp = json_object_get(row, "response");
    if (resp && !json_is_null(resp) && !json_is_string(resp)) {
        free(prompt);
        return jr_fail(JR_EINVAL, "field 'response': expected a string");
    }
    size_t cap = 1;
    for (size_t i = 0; i < l->n; i++) cap += strlen(l->labels[i]) + 2;
    char *list = jr_malloc(cap);
    json_t *view = json_object();
    if (!list || !view) { free(prompt); free(list); json_decref(view); return JR_ENOMEM; }
    list[0] = 0;
    for (size_t i = 0; i < l->n; i++) {
        if (i) strcat(list, ", ");
        strcat(list, l->labels[i]);
    }
    json_object_set_new(view, "prompt", json_string(prompt));
    if (json_is_string(resp)) json_object_set(view, "response", (json_t *)resp);
    json_object_set_new(view, "labels", json_string(list));
    free(prompt);
    free(list);
    /* chat: logprobs + top_logprobs; /v1/completions: logprobs is the number of alternatives. */
    json_t *params = l->mode == CONF_VERBAL ? NULL
                     : l->completions ? json_pack("{s:i}", "logprobs", l->top)
                                      : json_pack("{s:b,s:i}", "logprobs", 1, "top_logprobs", l->top);
    jr_status st = proto_add(calls, l->tmpl, l->system, view, params, "label");
    json_decref(view);
    return st;
}

static jr_parse_rc lb_parse(void *state, const json_t *row, const jr_judge_call *call, int index,
                            const jr_judge_response *resp, double *value, json_t **detail, char *why, size_t why_len) {
    label *l = state;
    const char *const *labels = (const char *const *)l->labels;
    int idx = -1, lp_idx = -1;
    double verbal = -1, conf = -1;
    double *probs = jr_calloc(l->n, sizeof *probs);
    if (!probs) { snprintf(why, why_len, "out of memory"); return JR_PARSE_GIVE_UP; }
    int parsed = jr_label_parse(resp->text, labels, l->n, &idx, &verbal) == JR_OK;
    char lp_err[256] = "", unreliable[320] = "";
    int have_lp = 0;
    if (l->mode != CONF_VERBAL) {
        if (jr_label_logprob_confidence(resp->logprobs, labels, l->n, l->max_gap, &lp_idx, &conf, probs, unreliable,
                                        sizeof unreliable) == JR_OK)
            have_lp = 1;
        else snprintf(lp_err, sizeof lp_err, "%s", jr_errmsg());
    }
    if (have_lp) idx = lp_idx;
    if (idx < 0) {
        snprintf(why, why_len, "the verdict names none of the labels%s%s (judge's text: '%.120s')", lp_err[0] ? "; " : "",
                 lp_err, resp->text);
        free(probs);
        return JR_PARSE_RETRY;
    }
    if (l->mode == CONF_LOGPROBS && !have_lp) {
        snprintf(why, why_len, "judge.label.confidence=logprobs: %s", lp_err);
        free(probs);
        return resp->logprobs ? JR_PARSE_RETRY : JR_PARSE_GIVE_UP;
    }
    const char *source = have_lp ? "logprobs" : "verbal";
    if (!have_lp) conf = verbal;
    *value = idx;
    *detail = json_pack("{s:s,s:o,s:s,s:b}", "label", l->labels[idx], "confidence",
                        unreliable[0] ? json_null() : json_real(conf), "source", source, "parsed_text", parsed);
    if (unreliable[0]) {
        /* log-probs that cannot give an honest confidence: null, never a renormalised guess */
        json_object_set_new(*detail, "reason", json_string("logprobs_unreliable"));
        json_object_set_new(*detail, "unreliable", json_string(unreliable));
    } else if (have_lp) {
        json_t *pj = json_object();
        for (size_t i = 0; i < l->n; i++) json_object_set_new(pj, l->labels[i], json_real(probs[i]));
        json_object_set_new(*detail, "probs", pj);
        if (lp_err[0] == 0 && parsed && verbal >= 0) json_object_set_new(*detail, "verbal", json_real(verbal));
    }
    free(probs);
    return JR_PARSE_OK;
}

static jr_verdict lb_combine(void *state, const json_t *row, jr_judge_calls *calls, const jr_call_result *res, int n,
                             jr_judge_outcome *out) {
    label *l = state;
    if (n < 1 || !res[0].ok) {
        PROTO_UNSCORED(out, "label: %s", n >= 1 && res[0].error ? res[0].error : "no result");
        return JR_VERDICT_UNSCORED;
    }
    int idx = (int)res[0].value;
    const char *unreliable = json_string_value(json_object_get(res[0].detail, "unreliable"));
    if (unreliable) {
        out->detail = json_incref(res[0].detail);
        if (!l->accept_unreliable) {
            PROTO_UNSCORED(out, "label: '%s' rejected: logprobs_unreliable: %s (judge.label.unreliable=reject)",
                           l->labels[idx], unreliable);
            return JR_VERDICT_UNSCORED;
        }
        out->reward = l->values[idx];
        out->scores = json_pack("{s:i}", "label_index", idx);
        return JR_VERDICT_SCORED;
    }
    double conf = json_number_value(json_object_get(res[0].detail, "confidence"));
    if (!json_is_number(json_object_get(res[0].detail, "confidence")) || conf < 0) {
        PROTO_UNSCORED(out, "label: '%s' without a confidence (no log-probs and none verbalised)", l->labels[idx]);
        return JR_VERDICT_UNSCORED;
    }
    if (conf < l->threshold) {
        PROTO_UNSCORED(out, "label: '%s' rejected: confidence %.3f below judge.label.threshold=%g", l->labels[idx], conf,
                       l->threshold);
        return JR_VERDICT_UNSCORED;
    }
    out->reward = l->values[idx];
    out->scores = json_pack("{s:i,s:f}", "label_index", idx, "confidence", conf);
    out->detail = json_incref(res[0].detail);
    return JR_VERDICT_SCORED;
}

const jr_protocol jr_protocol_label = {
    .name = "label",
    .open = lb_open,
    .close = lb_close,
    .build = lb_build,
    .parse = lb_parse,
    .combine = lb_combine,
};
