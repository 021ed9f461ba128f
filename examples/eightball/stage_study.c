/* stage_study.c - the demo's stage study: GRPO from the SFT policy against the unbiased judge, the Yes-biased one
 * and the length-biased one (each served over HTTP), gold = the preference grades of the held-out questions, run
 * in this process by jr_study_run (docs/MONITOR.md) into OUT/study */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eightball/eightball.h"
#include "judgerl/fsutil.h"
#include "judgerl/strbuf.h"
#include "judgerl/study.h"

/* The judges studied: the demo's model directories OUT/judge-DIR. */
static const char *const STUDY_JUDGES[][2] = {{"unbiased", "unbiased"}, {"yes-biased", "biased"}, {"length-biased", "long"}};
#define N_STUDY_JUDGES 3

/* The study's YAML: the demo's GRPO config from the SFT policy, the held-out questions with their preferred
 * label as gold (answers mapped to Yes / No / Maybe by data/eightball/answers.jsonl), one judge per port. */
static char *study_yaml(const eb_ctx *c, const int *ports) {
    const eb_sizes *z = &c->z;
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
                  "    - model.path=%s/policy-sft/model\n"
                  "    - data.validation=data/eightball/lm/heldout_prompts.jsonl\n"
                  "    - trainer.steps=%d\n    - trainer.eval_every=%d\n"
                  "    - grpo.num_generations=%d\n    - grpo.prompts_per_step=%d\n"
                  "    - monitor.gold_field=preferred\n    - monitor.labels=data/eightball/answers.jsonl\n"
                  "    - \"probe.probes=[label_prior, agreement, verbosity, master_key]\"\n"
                  "    - probe.max_rows=%d\n    - probe.max_variant_rows=%d\n  judges:\n",
                  c->out, z->study_steps, z->study_eval_every, z->study_gens, z->study_prompts, z->study_probe_rows,
                  z->study_probe_variant_rows);
    jr_strbuf_add(&b, t ? t : "");
    free(t);
    for (int k = 0; k < N_STUDY_JUDGES; k++) {
        t = jr_strfmt("    - name: %s\n      set: ['judge.endpoints=[{url: \"http://127.0.0.1:%d/v1\", model: judge}]']\n",
                      STUDY_JUDGES[k][0], ports[k]);
        jr_strbuf_add(&b, t ? t : "");
        free(t);
    }
    return jr_strbuf_take(&b);
}

static double fin(const json_t *f, const char *k) {
    const json_t *v = json_object_get(f, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* sum["study"]: per judge the final figures and alarms; the stage note says the same in one line. */
static void summarize(const json_t *s, json_t *sum, char *note, size_t cap) {
    json_t *rec = json_object(), *judges = json_array();
    json_object_set_new(rec, "html", json_string("study/study.html"));
    json_object_set_new(rec, "judges", judges);
    size_t n = (size_t)snprintf(note, cap, "GRPO against 3 judges, gold = preferred label (study/study.html):");
    size_t i;
    json_t *j;
    json_array_foreach(json_object_get(s, "judges"), i, j) {
        const json_t *f = json_object_get(j, "final");
        json_t *r = json_pack("{s:O, s:O, s:O, s:O, s:I}", "name", json_object_get(j, "name"), "final", f, "alarm_first_step",
                              json_object_get(j, "alarm_first_step"), "alarm_runs", json_object_get(j, "alarm_runs"), "runs",
                              (json_int_t)json_array_size(json_object_get(j, "runs")));
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
    eb_server sv[N_STUDY_JUDGES];
    int ports[N_STUDY_JUDGES] = {0}, started = 0;
    for (int k = 0; k < N_STUDY_JUDGES && !st; k++) {
        char jm[PATH_MAX], sname[64];
        eb_path(c, jm, sizeof jm, "judge-%s/model", STUDY_JUDGES[k][1]);
        snprintf(sname, sizeof sname, "study-%s", STUDY_JUDGES[k][0]);
        st = eb_server_start(c, &sv[k], jm, sname);
        if (!st) { ports[k] = sv[k].port; started = k + 1; }
    }
    char *yaml = st ? NULL : study_yaml(c, ports);
    if (!st) st = yaml ? jr_write_atomic(yp, yaml, strlen(yaml)) : jr_fail(JR_ENOMEM, "out of memory");
    free(yaml);
    json_t *s = NULL;
    if (!st) st = run_study(c, yp, &s);
    for (int k = 0; k < started; k++) eb_server_stop(&sv[k]);
    if (!st) summarize(s, c->sum, note, cap);
    json_decref(s);
    return st;
}
