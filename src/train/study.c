/* study.c - `judgerl study`: one GRPO config against several judges, same seeds, a gold evaluator; per judge
 * proxy vs gold, divergence, drift, alarms and probe results collected into study.json (docs/MONITOR.md) */
#include "judgerl/study.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/dataset.h"
#include "judgerl/ensemble.h"
#include "judgerl/eval.h"
#include "judgerl/fsutil.h"
#include "judgerl/grpo_trainer.h"
#include "judgerl/judge.h"
#include "judgerl/model.h"
#include "judgerl/monitor.h"
#include "judgerl/probe.h"
#include "judgerl/protocols.h"
#include "judgerl/study_report.h"
#include "judgerl/reward.h"
#include "judgerl/sandbox.h"
#include "judgerl/strbuf.h"
#include "judgerl/tokenizer.h"
#include "judgerl/train.h"

static const jr_cfg_field judge_sub[] = {
    {"name", JR_CFG_STRING, NULL, "the judge's name (its run directory OUT/NAME)", NULL, NULL, 0, 0},
    {"set", JR_CFG_LIST, "[]", "key=value overrides naming this judge: judge.endpoints, judge.protocol, ...", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

const jr_cfg_field jr_study_cfg[] = {
    {"study.train", JR_CFG_STRING, NULL, "the GRPO config (judgerl train) every run starts from", NULL, NULL, 0, 0},
    {"study.out_dir", JR_CFG_STRING, "runs/study", "runs in OUT/JUDGE/seed-S, study.json and study.html in OUT", NULL, NULL, 0, 0},
    {"study.seeds", JR_CFG_LIST, "[1]", "run.seed of each run (the same for every judge)", NULL, NULL, 0, 0},
    {"study.set", JR_CFG_LIST, "[]", "key=value overrides of every run: the gold evaluator (monitor.gold_reward or monitor.gold_field), monitor.*, mitigations", NULL, NULL, 0, 0},
    {"study.judges", JR_CFG_OBJLIST, "[]", "the judges [{name, set: [key=value, ...]}]", NULL, judge_sub, 0, 0},
    {"study.probe_data", JR_CFG_STRING, "null", "rows {id, prompt, response, ...} for `judgerl probe` of each judge (probe.* in study.set); null: no probes", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

/* A study's run config: `judgerl train`'s tables and probe.* (the judge's probes). */
static const jr_cfg_field *const run_tables[] = {JR_TRAIN_TABLE_LIST, jr_probe_cfg, NULL};

/* Strings of a list value into out (at most JR_STUDY_MAX). */
static jr_status str_list(const json_t *a, const char *key, const char **out, int *n) {
    *n = 0;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
        if (*n == JR_STUDY_MAX) return jr_fail(JR_EINVAL, "%s: more than %d entries", key, JR_STUDY_MAX);
        if (!json_is_string(v)) return jr_fail(JR_EINVAL, "%s[%zu]: expected a string key=value", key, i);
        if (!strchr(json_string_value(v), '='))
            return jr_fail(JR_EINVAL, "%s[%zu]: '%s' is not key=value", key, i, json_string_value(v));
        out[(*n)++] = json_string_value(v);
    }
    return JR_OK;
}

jr_status jr_study_opts_from_config(jr_study_opts *o, const jr_config *c) {
    memset(o, 0, sizeof *o);
    o->train = jr_cfg_str(c, "study.train");
    o->out_dir = jr_cfg_str(c, "study.out_dir");
    o->probe_data = jr_cfg_str(c, "study.probe_data");
    json_t *seeds = jr_cfg_json(c, "study.seeds"), *set = jr_cfg_json(c, "study.set"), *judges = jr_cfg_json(c, "study.judges");
    jr_status st = jr_cfg_check(c);
    if (st) return st;
    size_t i;
    json_t *v;
    json_array_foreach(seeds, i, v) {
        if (o->n_seeds == JR_STUDY_MAX) return jr_fail(JR_EINVAL, "%s: study.seeds: more than %d", c->source, JR_STUDY_MAX);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return jr_fail(JR_EINVAL, "%s: study.seeds[%zu]: expected a non-negative integer", c->source, i);
        o->seeds[o->n_seeds++] = json_integer_value(v);
    }
    if (!o->n_seeds) return jr_fail(JR_EINVAL, "%s: study.seeds is empty", c->source);
    if ((st = str_list(set, "study.set", o->set, &o->n_set))) return jr_fail_ctx(st, "%s", c->source);
    json_array_foreach(judges, i, v) {
        if (o->n_judges == JR_STUDY_MAX) return jr_fail(JR_EINVAL, "%s: study.judges: more than %d", c->source, JR_STUDY_MAX);
        jr_study_judge *j = &o->judges[o->n_judges++];
        j->name = json_string_value(json_object_get(v, "name"));
        for (const char *p = j->name; *p; p++)
            if (!isalnum((unsigned char)*p) && !strchr("-_.", *p))
                return jr_fail(JR_EINVAL, "%s: study.judges[%zu].name '%s': use letters, digits, '-', '_' and '.' (a directory name)",
                               c->source, i, j->name);
        if (!j->name[0] || j->name[0] == '.')
            return jr_fail(JR_EINVAL, "%s: study.judges[%zu].name '%s' is not a directory name", c->source, i, j->name);
        for (int k = 0; k < o->n_judges - 1; k++)
            if (!strcmp(o->judges[k].name, j->name))
                return jr_fail(JR_EINVAL, "%s: study.judges: the name '%s' is given twice", c->source, j->name);
        char key[64];
        snprintf(key, sizeof key, "study.judges[%zu].set", i);
        if ((st = str_list(json_object_get(v, "set"), key, j->set, &j->n_set))) return jr_fail_ctx(st, "%s", c->source);
    }
    if (!o->n_judges) return jr_fail(JR_EINVAL, "%s: study.judges is empty: give at least one judge", c->source);
    return JR_OK;
}

/* ---- one run ---- */

/* The run directory of judge j, seed s. */
static char *run_dir(const jr_study_opts *o, const jr_study_judge *j, int64_t seed) {
    return jr_strfmt("%s/%s/seed-%lld", o->out_dir, j->name, (long long)seed);
}

/* The config of one run: study.train with study.set, the judge's set, and the run's own keys. */
static jr_status run_config(const jr_study_opts *o, const jr_study_judge *j, int64_t seed, jr_config *cfg) {
    char *dir = run_dir(o, j, seed), *od = dir ? jr_strfmt("run.out_dir=%s", dir) : NULL;
    char *sd = jr_strfmt("run.seed=%lld", (long long)seed);
    char *over[2 * JR_STUDY_MAX + 4];
    int n = 0;
    for (int i = 0; i < o->n_set; i++) over[n++] = (char *)o->set[i];
    for (int i = 0; i < j->n_set; i++) over[n++] = (char *)j->set[i];
    over[n++] = od;
    over[n++] = sd;
    over[n++] = "monitor.enabled=true";
    over[n++] = "trainer.resume=true";
    jr_status st = od && sd ? jr_config_load(cfg, o->train, n, over, run_tables) : JR_ENOMEM;
    free(dir);
    free(od);
    free(sd);
    if (st) return jr_fail_ctx(st, "study judge '%s'", j->name);
    jr_trainer_opts to;
    jr_trainer_opts_from_config(&to, cfg);
    jr_monitor_opts mo;
    if (strcmp(to.algo, "grpo") && strcmp(to.algo, "rloo"))
        st = jr_fail(JR_EINVAL, "%s: trainer.algo=%s: a study trains with grpo or rloo", o->train, to.algo);
    if (!st) st = jr_monitor_opts_from_config(&mo, cfg);
    if (!st && !mo.gold_reward && !mo.gold_field)
        st = jr_fail(JR_EINVAL, "study judge '%s': no gold evaluator: set monitor.gold_reward (a verifier or reference judge) or "
                                "monitor.gold_field (labelled data) in study.set or %s", j->name, o->train);
    if (st) jr_config_free(cfg);
    return st;
}

/* Trains one run; a stop by monitor.stop is a result (recorded in *stopped), a signal is not. */
static jr_status train_one(const jr_study_opts *o, const jr_study_judge *j, int64_t seed, FILE *progress,
                           volatile sig_atomic_t *stop, char *stopped, size_t cap) {
    jr_config cfg;
    jr_status st = run_config(o, j, seed, &cfg);
    if (st) return st;
    if (progress) fprintf(progress, "study: judge %s, seed %lld\n", j->name, (long long)seed);
    jr_train_result res;
    st = jr_train_run(&cfg, progress, stop, &res);
    stopped[0] = 0;
    if (st == JR_ECANCELED && res.halted && !(stop && *stop)) {
        snprintf(stopped, cap, "%s", jr_errmsg());
        st = JR_OK;
    }
    jr_config_free(&cfg);
    return st ? jr_fail_ctx(st, "study judge '%s' seed %lld", j->name, (long long)seed) : JR_OK;
}

/* The judge's probes on o->probe_data, with the first seed's config (its judge.* and probe.*). */
static jr_status probe_one(const jr_study_opts *o, const jr_study_judge *j, const json_t *rows) {
    jr_config cfg;
    jr_status st = run_config(o, j, o->seeds[0], &cfg);
    if (st) return st;
    jr_probe_opts po;
    json_t *res = NULL;
    st = jr_probe_opts_from_config(&po, &cfg);
    if (!st) st = jr_probe_run(&cfg, &po, rows, &res);
    char *path = jr_strfmt("%s/%s/probe.json", o->out_dir, j->name);
    char *text = res ? json_dumps(res, JSON_INDENT(1) | JSON_REAL_PRECISION(8)) : NULL;
    if (!st) st = path && text ? jr_write_atomic(path, text, strlen(text)) : JR_ENOMEM;
    free(path);
    free(text);
    json_decref(res);
    jr_config_free(&cfg);
    return st ? jr_fail_ctx(st, "study judge '%s': probe", j->name) : JR_OK;
}

/* ---- collection ---- */

static const char *const SERIES[] = {"proxy", "gold", "length", "markdown", "list", "label_max_share", "label_entropy",
                                     "phrase_rise"};
#define N_SERIES (int)(sizeof SERIES / sizeof SERIES[0])

static double numv(const json_t *o, const char *k) {
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static json_t *jnum(double v) { return isnan(v) ? json_null() : json_real(v); }

/* The training KL at each monitored step (metrics.jsonl "kl"); null without a reference (grpo.beta = 0). */
static double kl_at(const json_t *metrics, int64_t step) {
    size_t i;
    json_t *m;
    json_array_foreach(metrics, i, m)
        if (json_integer_value(json_object_get(m, "step")) == step) return numv(m, "kl");
    return NAN;
}

/* One run's record from its monitor.jsonl and metrics.jsonl. */
static jr_status collect_run(const char *dir, int64_t seed, int has_kl, json_t **out) {
    char *mp = jr_strfmt("%s/monitor.jsonl", dir), *tp = jr_strfmt("%s/metrics.jsonl", dir);
    json_t *mon = NULL, *met = NULL;
    jr_status st = mp && tp ? jr_jsonl_read_all(mp, &mon) : JR_ENOMEM;
    if (!st) st = jr_jsonl_read_all(tp, &met);
    if (!st && json_array_size(mon) < 2)
        st = jr_fail(JR_EFORMAT, "%s: fewer than two evaluations (the baseline and one after training): set trainer.eval_every "
                                 "<= trainer.steps", mp);
    free(mp);
    free(tp);
    if (st) { json_decref(mon); json_decref(met); return st; }
    json_t *run = json_object(), *series = json_object(), *alarms = json_object();
    json_t *steps = json_array(), *div = json_array(), *kl = json_array();
    for (int k = 0; k < N_SERIES; k++) json_object_set_new(series, SERIES[k], json_array());
    const json_t *b = json_array_get(mon, 0), *last = json_array_get(mon, json_array_size(mon) - 1);
    double p0 = numv(b, "proxy"), g0 = numv(b, "gold"), drop5 = NAN, gold_at_alarm = NAN;
    for (int a = 0; a < JR_ALARM_COUNT; a++) json_object_set_new(alarms, jr_monitor_alarm_name(a), json_null());
    size_t i;
    json_t *r;
    json_array_foreach(mon, i, r) {
        int64_t s = json_integer_value(json_object_get(r, "step"));
        json_array_append_new(steps, json_integer(s));
        for (int k = 0; k < N_SERIES; k++) json_array_append_new(json_object_get(series, SERIES[k]), jnum(numv(r, SERIES[k])));
        json_array_append_new(div, jnum((numv(r, "proxy") - p0) - (numv(r, "gold") - g0)));
        json_array_append_new(kl, jnum(has_kl ? (s == 0 ? 0 : kl_at(met, s)) : NAN));
        if (isnan(drop5) && g0 - numv(r, "gold") >= 0.05) drop5 = (double)s;
        size_t j;
        json_t *a;
        json_array_foreach(json_object_get(r, "fired"), j, a)
            if (json_is_null(json_object_get(alarms, json_string_value(a)))) {
                json_object_set_new(alarms, json_string_value(a), json_integer(s));
                if (!strcmp(json_string_value(a), "proxy_gold")) gold_at_alarm = numv(r, "gold") - g0;
            }
    }
    json_object_set_new(series, "step", steps);
    json_object_set_new(series, "divergence", div);
    json_object_set_new(series, "kl", kl);
    json_object_set_new(run, "seed", json_integer(seed));
    json_object_set_new(run, "dir", json_string(dir));
    json_object_set_new(run, "series", series);
    json_object_set_new(run, "alarms", alarms);
    json_object_set_new(run, "gold_drop_5pp_step", jnum(drop5));
    json_object_set_new(run, "gold_change_at_alarm", jnum(gold_at_alarm)); /* gold - gold0 where proxy_gold first fired */
    json_object_set(run, "labels_start", json_object_get(b, "labels"));
    json_object_set(run, "labels_end", json_object_get(last, "labels"));
    json_t *top = json_object_get(last, "top_ngrams");
    json_object_set_new(run, "top_ngrams_end", top ? json_incref(top) : json_array());
    json_decref(mon);
    json_decref(met);
    *out = run;
    return JR_OK;
}

/* The mean over runs of each series at the steps every run has (runs stopped early end the mean). */
static json_t *mean_series(const json_t *runs) {
    json_t *mean = json_object();
    size_t nr = json_array_size(runs), n = (size_t)-1;
    for (size_t r = 0; r < nr; r++) {
        size_t m = json_array_size(json_object_get(json_object_get(json_array_get(runs, r), "series"), "step"));
        if (m < n) n = m;
    }
    if (!nr) return mean;
    const json_t *s0 = json_object_get(json_array_get(runs, 0), "series");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s0, k, v) {
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++) {
            if (!strcmp(k, "step")) { json_array_append(a, json_array_get(v, i)); continue; }
            double s = 0;
            int c = 0;
            for (size_t r = 0; r < nr; r++) {
                json_t *x = json_array_get(json_object_get(json_object_get(json_array_get(runs, r), "series"), k), i);
                if (json_is_number(x)) { s += json_number_value(x); c++; }
            }
            json_array_append_new(a, c ? json_real(s / c) : json_null());
        }
        json_object_set_new(mean, k, a);
    }
    return mean;
}

/* Last minus first of a mean series; for length, the ratio. */
static json_t *finals(const json_t *mean) {
    json_t *f = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)mean, k, v) {
        if (!strcmp(k, "step") || !json_array_size(v)) continue;
        double a = json_number_value(json_array_get(v, 0)), z = json_number_value(json_array_get(v, json_array_size(v) - 1));
        int nul = json_is_null(json_array_get(v, 0)) || json_is_null(json_array_get(v, json_array_size(v) - 1));
        char key[64];
        snprintf(key, sizeof key, "%s_start", k);
        json_object_set_new(f, key, nul ? json_null() : json_real(a));
        snprintf(key, sizeof key, "%s_end", k);
        json_object_set_new(f, key, nul ? json_null() : json_real(z));
        snprintf(key, sizeof key, "%s_delta", k);
        json_object_set_new(f, key, nul ? json_null() : json_real(z - a));
    }
    return f;
}

/* One judge's record: its runs, their mean, the alarms' first steps and how many runs fired each. */
static jr_status collect_judge(const jr_study_opts *o, const jr_study_judge *j, json_t **out) {
    json_t *rec = json_object(), *runs = json_array(), *first = json_object(), *count = json_object();
    jr_status st = JR_OK;
    for (int s = 0; s < o->n_seeds && !st; s++) {
        jr_config cfg;
        jr_grpo_opts go;
        if ((st = run_config(o, j, o->seeds[s], &cfg))) break;
        st = jr_grpo_opts_from_config(&go, &cfg);
        jr_config_free(&cfg);
        char *dir = run_dir(o, j, o->seeds[s]);
        json_t *run = NULL;
        if (!st) st = dir ? collect_run(dir, o->seeds[s], go.beta > 0, &run) : JR_ENOMEM;
        free(dir);
        if (!st) json_array_append_new(runs, run);
    }
    for (size_t r = 0; !st && r < json_array_size(runs); r++) {
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(json_array_get(runs, r), "alarms"), k, v) {
            json_t *f = json_object_get(first, k), *c = json_object_get(count, k);
            if (json_is_integer(v) && (!f || json_is_null(f) || json_integer_value(v) < json_integer_value(f)))
                json_object_set(first, k, v);
            else if (!f) json_object_set_new(first, k, json_null());
            json_object_set_new(count, k, json_integer((c ? json_integer_value(c) : 0) + json_is_integer(v)));
        }
    }
    json_t *mean = mean_series(runs);
    json_object_set_new(rec, "name", json_string(j->name));
    json_t *set = json_array();
    for (int i = 0; i < j->n_set; i++) json_array_append_new(set, json_string(j->set[i]));
    json_object_set_new(rec, "set", set);
    json_object_set_new(rec, "final", finals(mean));
    json_object_set_new(rec, "mean", mean);
    json_object_set_new(rec, "alarm_first_step", first);
    json_object_set_new(rec, "alarm_runs", count);
    json_object_set_new(rec, "runs", runs);
    char *pp = jr_strfmt("%s/%s/probe.json", o->out_dir, j->name);
    json_t *probe = pp && jr_path_exists(pp) ? json_load_file(pp, 0, NULL) : NULL;
    json_object_set_new(rec, "probe", probe ? probe : json_null());
    free(pp);
    if (st) { json_decref(rec); return st; }
    *out = rec;
    return JR_OK;
}

jr_status jr_study_collect(const jr_study_opts *o, json_t **out) {
    *out = NULL;
    json_t *s = json_object(), *judges = json_array(), *seeds = json_array(), *set = json_array();
    json_object_set_new(s, "train", json_string(o->train));
    for (int i = 0; i < o->n_seeds; i++) json_array_append_new(seeds, json_integer(o->seeds[i]));
    for (int i = 0; i < o->n_set; i++) json_array_append_new(set, json_string(o->set[i]));
    json_object_set_new(s, "seeds", seeds);
    json_object_set_new(s, "set", set);
    json_object_set_new(s, "judges", judges);
    jr_status st = JR_OK;
    for (int j = 0; j < o->n_judges && !st; j++) {
        json_t *rec = NULL;
        if (!(st = collect_judge(o, &o->judges[j], &rec))) json_array_append_new(judges, rec);
    }
    if (st) { json_decref(s); return st; }
    *out = s;
    return JR_OK;
}

static jr_status write_outputs(const jr_study_opts *o, const json_t *s) {
    char *jp = jr_strfmt("%s/study.json", o->out_dir), *hp = jr_strfmt("%s/study.html", o->out_dir);
    char *text = json_dumps(s, JSON_INDENT(1) | JSON_REAL_PRECISION(8));
    jr_status st = jp && hp && text ? jr_write_atomic(jp, text, strlen(text)) : JR_ENOMEM;
    if (!st) st = jr_study_html_write(hp, s);
    free(jp);
    free(hp);
    free(text);
    return st;
}

jr_status jr_study_run(const jr_study_opts *o, FILE *progress, volatile sig_atomic_t *stop, json_t **out) {
    if (out) *out = NULL;
    json_t *rows = NULL;
    jr_status st = jr_mkdirs(o->out_dir);
    /* every run's config is checked before the first one trains */
    for (int j = 0; j < o->n_judges && !st; j++) {
        jr_config cfg;
        if (!(st = run_config(o, &o->judges[j], o->seeds[0], &cfg))) jr_config_free(&cfg);
    }
    if (!st && o->probe_data) st = jr_probe_load_rows(o->probe_data, &rows);
    if (!st && o->probe_data && !json_array_size(rows)) st = jr_fail(JR_EINVAL, "%s (study.probe_data): no rows", o->probe_data);
    for (int j = 0; j < o->n_judges && !st; j++) {
        for (int s = 0; s < o->n_seeds && !st; s++) {
            char stopped[700];
            st = train_one(o, &o->judges[j], o->seeds[s], progress, stop, stopped, sizeof stopped);
            if (!st && stopped[0] && progress) fprintf(progress, "study: %s\n", stopped);
        }
        if (!st && rows) st = probe_one(o, &o->judges[j], rows);
    }
    json_decref(rows);
    json_t *s = NULL;
    if (!st) st = jr_study_collect(o, &s);
    if (!st) st = write_outputs(o, s);
    if (!st && out) *out = s;
    else json_decref(s);
    return st;
}
