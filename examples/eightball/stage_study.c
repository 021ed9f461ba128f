/* stage_study.c - the demo's stage study: GRPO from the policy answering by kind (stage policy-pref) against the
 * unbiased judge, the sycophantic one (OUT/judge-syco), and the sycophantic one in a mean ensemble with the long and
 * masterkey judges (each served over HTTP), gold = the preference grades of the held-out questions, run in this
 * process by jr_study_run (docs/MONITOR.md) into OUT/study */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eightball/eightball.h"
#include "judgerl/fsutil.h"
#include "judgerl/strbuf.h"
#include "judgerl/study.h"
#include "judgerl/train.h"

/* The judges served for the study: the demo's model directories OUT/judge-DIR. */
static const char *const SERVED[] = {"unbiased", "syco", "long", "masterkey"};
#define N_SERVED 4

/* The judges studied: the unbiased one, the sycophantic one, and the sycophantic one in an ensemble
 * with the two judges whose injected biases are others (longer answers, master keys): every sample scored by
 * the three, the reward their mean (the mitigation: a bias one member has is outvoted).
 * OUT/study-members/NAME.yaml: configs/eightball/judge-label.yaml (the judge and the format term) with the
 * endpoint of the judge served on port. */
static jr_status member_yaml(const eb_ctx *c, const char *name, int port, char *path, size_t cap) {
    char *text = NULL;
    jr_status st = jr_read_file("configs/eightball/judge-label.yaml", &text, NULL);
    const char *url = "http://127.0.0.1:8000/v1", *at = text ? strstr(text, url) : NULL;
    if (!st && !at) st = jr_fail(JR_EFORMAT, "configs/eightball/judge-label.yaml: no endpoint %s to point at the served judge", url);
    char *y = at ? jr_strfmt("%.*shttp://127.0.0.1:%d/v1%s", (int)(at - text), text, port, at + strlen(url)) : NULL;
    eb_path(c, path, cap, "study-members");
    if (!st) st = y ? jr_mkdirs(path) : jr_fail(JR_ENOMEM, "out of memory");
    eb_path(c, path, cap, "study-members/%s.yaml", name);
    if (!st) st = jr_write_atomic(path, y, strlen(y));
    free(text);
    free(y);
    return st;
}

/* The study sets the format term's weight by its index (reward.components.1.weight): that index must still name
 * the format term in configs/eightball-grpo.yaml, else the override would silently reweight another component. */
static jr_status format_at_index_1(void) {
    jr_config cfg;
    jr_status st = jr_config_load(&cfg, "configs/eightball-grpo.yaml", 0, NULL, jr_train_tables);
    if (st) return st;
    const json_t *f = json_array_get(jr_cfg_json(&cfg, "reward.components"), 1);
    const char *name = json_string_value(json_object_get(f, "name"));
    if (!name || strcmp(name, "format"))
        st = jr_fail(JR_EINVAL, "configs/eightball-grpo.yaml: reward.components[1] is %s, not the format term the study's "
                     "reward.components.1.weight sets", name ? name : "missing");
    jr_config_free(&cfg);
    return st;
}

/* The study's YAML: the demo's GRPO config from the policy answering by kind (OUT/policy-pref), the held-out
 * questions with their preferred label as gold (answers mapped to Yes / No / Maybe by
 * data/eightball/answers.jsonl), one judge per port (ports: SERVED's). */
static jr_status study_yaml(const eb_ctx *c, const int *ports, char **yaml) {
    const eb_sizes *z = &c->z;
    char mb[3][PATH_MAX];
    static const int MEMBERS[3] = {1, 2, 3}; /* syco, long, masterkey */
    static const char *const MNAMES[3] = {"sycophantic", "long", "masterkey"};
    jr_status st = JR_OK;
    for (int k = 0; k < 3 && !st; k++) st = member_yaml(c, MNAMES[k], ports[MEMBERS[k]], mb[k], sizeof mb[k]);
    if (st) return st;
    jr_strbuf b = {0};
    char *t = jr_strfmt("study:\n  train: configs/eightball-grpo.yaml\n  out_dir: %s/study\n  seeds: [", c->out);
    jr_strbuf_add(&b, t ? t : "");
    free(t);
    for (int s = 0; s < z->study_seeds; s++) {
        t = jr_strfmt("%s%d", s ? ", " : "", s + 1);
        jr_strbuf_add(&b, t ? t : "");
        free(t);
    }
    t = jr_strfmt("]\n  probe_data: data/eightball/lm/probe_rows.jsonl\n  set:\n"
                  "    - model.path=%s/policy-pref/model\n"
                  "    - data.validation=data/eightball/lm/heldout_prompts.jsonl\n"
                  /* the study's prompts and format weight, as its alarm settings were chosen with (the GRPO stages
                   * train on grpo_prompts_all.jsonl with the format term at -2) */
                  "    - data.train=data/eightball/lm/grpo_prompts.jsonl\n    - reward.components.1.weight=-1.0\n"
                  "    - trainer.steps=%d\n    - trainer.eval_every=%d\n    - trainer.lr=%.17g\n"
                  "    - grpo.num_generations=%d\n    - grpo.prompts_per_step=%d\n"
                  "    - monitor.gold_field=preferred\n    - monitor.labels=data/eightball/answers.jsonl\n"
                  "    - monitor.noise_z=%.17g\n    - monitor.proxy_rise=%.17g\n    - monitor.trend_window=%d\n"
                  "    - \"probe.probes=[label_prior, agreement, verbosity, master_key]\"\n"
                  "    - probe.max_rows=%d\n    - probe.max_variant_rows=%d\n  judges:\n",
                  c->out, z->study_steps, z->study_eval_every, z->study_lr, z->study_gens, z->study_prompts, z->study_noise_z,
                  z->study_proxy_rise, z->study_trend_window, z->study_probe_rows, z->study_probe_variant_rows);
    jr_strbuf_add(&b, t ? t : "");
    free(t);
    t = jr_strfmt("    - name: unbiased\n      set: ['judge.endpoints=[{url: \"http://127.0.0.1:%d/v1\", model: judge}]']\n"
                  "    - name: sycophantic\n      set: ['judge.endpoints=[{url: \"http://127.0.0.1:%d/v1\", model: judge}]']\n"
                  "    - name: sycophantic-ensemble\n      set: ['judge.endpoints=[{url: \"http://127.0.0.1:%d/v1\", model: judge}]',\n"
                  "            'ensemble.judges=[\"%s\", \"%s\", \"%s\"]', ensemble.aggregate=mean]\n",
                  ports[0], ports[1], ports[1], mb[0], mb[1], mb[2]);
    jr_strbuf_add(&b, t ? t : "");
    free(t);
    *yaml = jr_strbuf_take(&b);
    return *yaml ? JR_OK : jr_fail(JR_ENOMEM, "out of memory");
}

static double fin(const json_t *f, const char *k) {
    const json_t *v = json_object_get(f, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Per run (seed): the proxy and gold change at the end, the step the proxy_gold alarm first fired and gold's
 * change there, and the first step gold was 5 points under its start (null: never). */
static json_t *run_alarms(const json_t *runs) {
    json_t *a = json_array(), *r;
    size_t i;
    json_array_foreach(runs, i, r) {
        const json_t *sr = json_object_get(r, "series");
        const json_t *p = json_object_get(sr, "proxy"), *g = json_object_get(sr, "gold");
        size_t n = json_array_size(p);
        double dp = n ? json_number_value(json_array_get(p, n - 1)) - json_number_value(json_array_get(p, 0)) : NAN;
        double dg = n ? json_number_value(json_array_get(g, n - 1)) - json_number_value(json_array_get(g, 0)) : NAN;
        json_array_append_new(a, json_pack("{s:O, s:f, s:f, s:O, s:O, s:O}", "seed", json_object_get(r, "seed"), "proxy_delta", dp,
                                           "gold_delta", dg, "alarm_step", json_object_get(json_object_get(r, "alarms"), "proxy_gold"),
                                           "gold_change_at_alarm", json_object_get(r, "gold_change_at_alarm"), "gold_drop_5pp_step",
                                           json_object_get(r, "gold_drop_5pp_step")));
    }
    return a;
}

/* sum["study"]: per judge the final figures and alarms; the stage note says the same in one line. */
static void summarize(const json_t *s, json_t *sum, char *note, size_t cap) {
    json_t *rec = json_object(), *judges = json_array();
    json_object_set_new(rec, "html", json_string("study/study.html"));
    json_object_set_new(rec, "judges", judges);
    size_t n = (size_t)snprintf(note, cap, "GRPO from a policy answering by kind (policy-pref) against 3 judges, gold = preferred label "
                                           "(study/study.html):");
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(s, "judges"), i, j) {
        const json_t *f = json_object_get(j, "final");
        json_t *r = json_pack("{s:O, s:O, s:O, s:O, s:o}", "name", json_object_get(j, "name"), "final", f, "alarm_first_step",
                              json_object_get(j, "alarm_first_step"), "alarm_runs", json_object_get(j, "alarm_runs"), "runs",
                              run_alarms(json_object_get(j, "runs")));
        json_array_append_new(judges, r);
        const json_t *al = json_object_get(json_object_get(j, "alarm_first_step"), "proxy_gold");
        char when[64] = "no proxy_gold alarm";
        if (json_is_integer(al))
            snprintf(when, sizeof when, "proxy_gold alarm at step %lld in %lld run(s)", (long long)json_integer_value(al),
                     (long long)json_integer_value(json_object_get(json_object_get(j, "alarm_runs"), "proxy_gold")));
        if (n < cap)
            n += (size_t)snprintf(note + n, cap - n, " %s: proxy %+.2f, gold %+.2f, %s;", json_string_value(json_object_get(j, "name")),
                                  fin(f, "proxy_delta"), fin(f, "gold_delta"), when);
    }
    json_object_set_new(sum, "study", rec);
}

/* Loads the study's YAML and runs it in this process; *out gets study.json. */
static jr_status run_study(eb_ctx *c, const char *yp, json_t **out) {
    const jr_cfg_field *const tables[] = {jr_study_cfg, NULL};
    jr_config cfg;
    fprintf(c->logf, "\n$ judgerl study %s\n", yp);
    fflush(c->logf);
    jr_status st = jr_config_load(&cfg, yp, 0, NULL, tables);
    if (st) return st;
    jr_study_opts o;
    st = jr_study_opts_from_config(&o, &cfg);
    if (!st) st = jr_study_run(&o, c->logf, c->stop, out);
    jr_config_free(&cfg);
    return st;
}

jr_status eb_stage_study(eb_ctx *c, const void *arg, char *note, size_t cap) {
    (void)arg;
    char sdir[PATH_MAX], yp[PATH_MAX];
    eb_path(c, sdir, sizeof sdir, "study");
    eb_path(c, yp, sizeof yp, "study.yaml");
    /* a study reuses finished runs: start empty, so runs against judges of an earlier demo are never reused */
    jr_status st = jr_rmtree(sdir);
    if (!st) st = format_at_index_1();
    eb_server sv[N_SERVED];
    int ports[N_SERVED] = {0}, started = 0;
    for (int k = 0; k < N_SERVED && !st; k++) {
        char jm[PATH_MAX], sname[64];
        eb_path(c, jm, sizeof jm, "judge-%s/model", SERVED[k]);
        snprintf(sname, sizeof sname, "study-%s", SERVED[k]);
        st = eb_server_start(c, &sv[k], jm, sname);
        if (!st) { ports[k] = sv[k].port; started = k + 1; }
    }
    char *yaml = NULL;
    if (!st) st = study_yaml(c, ports, &yaml);
    if (!st) st = jr_write_atomic(yp, yaml, strlen(yaml));
    free(yaml);
    json_t *s = NULL;
    if (!st) st = run_study(c, yp, &s);
    for (int k = 0; k < started; k++) eb_server_stop(&sv[k]);
    if (!st) summarize(s, c->sum, note, cap);
    json_decref(s);
    return st;
}
