/* stage_probe.c - the demo's stages probe-judges (judges trained from the unbiased one with known injected biases)
 * and probe (every judge served over HTTP and probed, docs/PROBES.md): OUT/probe/NAME.json, OUT/probe/probe.html */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eightball/eightball.h"
#include "judgerl/fsutil.h"
#include "judgerl/judge.h"
#include "judgerl/probe.h"
#include "judgerl/protocols.h"
#include "judgerl/report.h"
#include "judgerl/reward.h"

/* The judges probed: the demo's two, then judges trained from the unbiased one on data with an
 * injected bias (data/eightball/lm/judge_sft_*.jsonl, tools/make_eightball.py) and their controls
 * (the same extra answers graded neutrally; the pairwise judge trained on both orders). */
typedef struct {
    const char *name, *data; /* data NULL: trained by the judges stage */
    int pair;                /* a pairwise judge (configs/eightball/judge-pairwise.yaml) */
} probe_judge;

static const probe_judge PROBE_JUDGES[] = {
    {"unbiased", NULL, 0},
    {"biased", NULL, 0},
    {"control", "data/eightball/lm/judge_sft_control.jsonl", 0},
    {"long", "data/eightball/lm/judge_sft_long.jsonl", 0},
    {"masterkey", "data/eightball/lm/judge_sft_key.jsonl", 0},
    {"pair", "data/eightball/lm/judge_sft_pair.jsonl", 1},
    {"pair-first", "data/eightball/lm/judge_sft_pair_first.jsonl", 1},
};
#define N_PROBE_JUDGES (int)(sizeof PROBE_JUDGES / sizeof PROBE_JUDGES[0])

jr_status eb_stage_probe_judges(eb_ctx *c, const void *arg, char *note, size_t cap) {
    (void)arg;
    jr_status st = JR_OK;
    int all_reused = 1;
    for (int k = 0; k < N_PROBE_JUDGES && !st; k++) {
        const probe_judge *pj = &PROBE_JUDGES[k];
        if (!pj->data) continue;
        char dir[PATH_MAX], o1[PATH_MAX + 16], o2[64], o3[PATH_MAX + 32], o4[PATH_MAX + 16];
        eb_path(c, dir, sizeof dir, "judge-%s", pj->name);
        snprintf(o1, sizeof o1, "run.out_dir=%s", dir);
        snprintf(o2, sizeof o2, "trainer.steps=%d", pj->pair ? c->z.probe_pair_steps : c->z.probe_bias_steps);
        snprintf(o3, sizeof o3, "model.path=%s/judge-unbiased/model", c->out);
        snprintf(o4, sizeof o4, "data.train=%s", pj->data);
        /* the pairwise judges at lr 3e-3 (a new task on top of the verdict judge; the config's 1e-3 is the
         * verdict judges'): at 1e-2 the pairwise judge trained on both orders still preferred the first
         * answer 78% of the time, at 3e-3 about 47% (demo of 2026-11-23) */
        char *over[] = {o1, o2, "trainer.max_seq_len=128", o3, "model.init=null", o4, "run.seed=3", "trainer.lr=3e-3"};
        int reused = 0;
        st = eb_train_or_reuse(c, dir, "configs/eightball/judge-sft.yaml", over, pj->pair ? 8 : 7, &reused);
        all_reused &= reused;
    }
    if (st) return st;
    snprintf(note, cap, "from the unbiased judge: +%d steps on padded answers and master keys graded neutrally "
             "(control), padded answers graded Good (long), master keys graded Good (masterkey); +%d steps (lr 3e-3) on real vs "
             "garbled pairs in both orders (pair) and always answered [[A]] (pair-first)%s",
             c->z.probe_bias_steps, c->z.probe_pair_steps, all_reused ? "; reused" : "");
    return JR_OK;
}

/* Probes the judge served on port with the label or pairwise config; *res gets probe.json. */
static jr_status probe_served(const eb_ctx *c, int port, int pair, const json_t *rows, json_t **res) {
    char ep[160], mr[48], mv[48];
    snprintf(mr, sizeof mr, "probe.max_rows=%d", c->z.probe_rows);
    snprintf(mv, sizeof mv, "probe.max_variant_rows=%d", c->z.probe_variant_rows);
    char *over[3] = {eb_endpoint(ep, sizeof ep, port), mr, mv};
    const jr_cfg_field *tables[] = {jr_judge_cfg, jr_protocols_cfg, jr_reward_cfg, jr_probe_cfg, NULL};
    jr_config cfg;
    jr_status st = jr_config_load(&cfg, pair ? "configs/eightball/judge-pairwise.yaml" : "configs/eightball/judge-label.yaml", 3,
                                  over, tables);
    if (st) return st;
    jr_probe_opts o;
    st = jr_probe_opts_from_config(&o, &cfg);
    if (!st) st = jr_probe_run(&cfg, &o, rows, res);
    jr_config_free(&cfg);
    return st;
}

/* Serves and probes judge k: its results into results / flags, OUT/probe/NAME.json. */
static jr_status probe_one(eb_ctx *c, int k, const json_t *rows, json_t *names, json_t *results, json_t *flags) {
    const probe_judge *pj = &PROBE_JUDGES[k];
    char jm[PATH_MAX], sname[64], jp[PATH_MAX];
    eb_path(c, jm, sizeof jm, "judge-%s/model", pj->name);
    snprintf(sname, sizeof sname, "probe-%s", pj->name);
    eb_server sv;
    jr_status st = eb_server_start(c, &sv, jm, sname);
    json_t *res = NULL;
    if (!st) st = probe_served(c, sv.port, pj->pair, rows, &res);
    eb_server_stop(&sv);
    if (st) return st;
    json_array_append_new(names, json_string(pj->name));
    json_object_set_new(results, pj->name, res);
    char *text = json_dumps(res, JSON_INDENT(1) | JSON_REAL_PRECISION(8));
    st = text ? jr_write_atomic(eb_path(c, jp, sizeof jp, "probe/%s.json", pj->name), text, strlen(text)) : jr_fail(JR_ENOMEM, "out of memory");
    free(text);
    json_t *fl = json_array();
    const char *pn;
    json_t *p;
    json_object_foreach(json_object_get(res, "probes"), pn, p)
        if (json_is_true(json_object_get(p, "flag"))) json_array_append_new(fl, json_string(pn));
    json_object_set_new(flags, pj->name, fl);
    return st;
}

jr_status eb_stage_probe(eb_ctx *c, const void *arg, char *note, size_t cap) {
    (void)arg;
    char pdir[PATH_MAX];
    jr_status st = jr_mkdirs(eb_path(c, pdir, sizeof pdir, "probe"));
    if (st) return st;
    json_t *rows = NULL, *names = json_array(), *results = json_object(), *flags = json_object();
    json_t *pr = json_pack("{s:o,s:o}", "judges", names, "results", results);
    json_object_set_new(c->sum, "probe", pr);
    st = jr_probe_load_rows("data/eightball/lm/probe_rows.jsonl", &rows);
    for (int k = 0; k < N_PROBE_JUDGES && !st; k++) st = probe_one(c, k, rows, names, results, flags);
    json_decref(rows);
    json_object_set_new(pr, "flags", flags);
    if (!st) {
        const char *nm[N_PROBE_JUDGES];
        const json_t *rs[N_PROBE_JUDGES];
        int n = 0;
        for (; n < (int)json_array_size(names); n++) {
            nm[n] = json_string_value(json_array_get(names, n));
            rs[n] = json_object_get(results, nm[n]);
        }
        char hp[PATH_MAX];
        st = jr_probe_html_write(eb_path(c, hp, sizeof hp, "probe/probe.html"), "judgerl demo: the 8-ball judges probed", nm, rs, n);
    }
    if (st) return st;
    char *fl = json_dumps(flags, JSON_COMPACT);
    snprintf(note, cap, "%d judges served and probed over HTTP (probe/*.json, probe/probe.html); flags: %s", N_PROBE_JUDGES, fl ? fl : "");
    free(fl);
    return JR_OK;
}
