/* demo_study.c - the demo's study stage: `judgerl study` with GRPO from the SFT policy against the unbiased
 * judge, the Yes-biased one and the length-biased one (each served over HTTP), gold = the preference grades
 * of the held-out questions (docs/MONITOR.md) */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/demo.h"
#include "judgerl/fsutil.h"
#include "judgerl/metrics.h"
#include "judgerl/strbuf.h"

/* The judges studied: the demo's model directories OUT/judge-DIR. */
static const char *const STUDY_JUDGES[][2] = {{"unbiased", "unbiased"}, {"yes-biased", "biased"}, {"length-biased", "long"}};
#define N_STUDY_JUDGES 3

/* The study's YAML: the demo's GRPO config from the SFT policy, the held-out questions with their preferred
 * label as gold (answers mapped to Yes / No / Maybe by data/eightball/answers.jsonl), one judge per port. */
static char *study_yaml(const char *out, const int *ports, const demo_study_sizes *z) {
    jr_strbuf b = {0};
    char *t = jr_strfmt("study:\n  train: configs/eightball-grpo.yaml\n  out_dir: %s/study\n  seeds: [", out);
    jr_strbuf_add(&b, t ? t : "");
    free(t);
    for (int s = 0; s < z->n_seeds; s++) {
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
                  out, z->steps, z->eval_every, z->gens, z->prompts, z->probe_rows, z->probe_variant_rows);
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
static jr_status summarize(const char *out, json_t *sum, char *note, size_t cap) {
    char *path = jr_strfmt("%s/study/study.json", out);
    json_t *s = path ? json_load_file(path, 0, NULL) : NULL;
    if (!s) {
        jr_status st = jr_fail(JR_EFORMAT, "%s: not written or not JSON", path ? path : "study.json");
        free(path);
        return st;
    }
    free(path);
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
    json_decref(s);
    return JR_OK;
}

jr_status demo_study(const char *out, json_t *sum, json_t *stages, const demo_study_sizes *z) {
    double t0 = jr_wall_time();
    json_t *s = demo_stage(stages, "study");
    char log[PATH_MAX + 32], sdir[PATH_MAX + 32], yp[PATH_MAX + 48];
    snprintf(log, sizeof log, "%s/demo.log", out);
    snprintf(sdir, sizeof sdir, "%s/study", out);
    snprintf(yp, sizeof yp, "%s/study.yaml", out);
    /* a study reuses finished runs: start empty, so runs against judges of an earlier demo are never reused */
    char *rm[] = {"/bin/rm", "-rf", sdir, NULL};
    pid_t pid = fork();
    if (pid == 0) { execv(rm[0], rm); _exit(127); }
    int ws;
    if (pid > 0) waitpid(pid, &ws, 0);
    demo_server sv[N_STUDY_JUDGES];
    int ports[N_STUDY_JUDGES] = {0};
    jr_status st = JR_OK;
    int started = 0;
    for (int k = 0; k < N_STUDY_JUDGES && !st; k++) {
        char jm[PATH_MAX + 64], slog[PATH_MAX + 64];
        snprintf(jm, sizeof jm, "%s/judge-%s/model", out, STUDY_JUDGES[k][1]);
        snprintf(slog, sizeof slog, "%s/serve-study-%s.log", out, STUDY_JUDGES[k][0]);
        st = demo_server_start(&sv[k], jm, slog);
        if (!st) { ports[k] = sv[k].port; started = k + 1; }
    }
    char *yaml = st ? NULL : study_yaml(out, ports, z);
    if (!st) st = yaml ? jr_write_atomic(yp, yaml, strlen(yaml)) : jr_fail(JR_ENOMEM, "out of memory");
    free(yaml);
    char *args[] = {"study", yp, NULL};
    if (!st) st = demo_run_child(log, args);
    for (int k = 0; k < started; k++) demo_server_stop(&sv[k]);
    char note[1024] = "";
    if (!st) st = summarize(out, sum, note, sizeof note);
    demo_stage_end(s, st ? "failed" : "done", t0, st ? jr_errmsg() : note);
    return st;
}
