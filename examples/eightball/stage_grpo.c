/* stage_grpo.c - the demo's stages grpo-unbiased and grpo-biased: the judge served over HTTP, its agreement with the
 * preference grades, GRPO from the SFT policy against it (in this process), the held-out answers before and after
 * graded by it, and the answer distributions (Yes / No / Maybe / other, and by kind of question) */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eightball/eightball.h"
#include "judgerl/fsutil.h"
#include "judgerl/train.h"

static const char *const LABEL3[3] = {"Yes", "No", "Maybe"};

/* Label of an 8-ball answer: the classic answer (c->answers) the text is, after trimming white space (issue 20's
 * definition); -1 ("garbled") for anything else, a classic answer with more text after it included. */
static int answer_label(const eb_ctx *c, const char *resp) {
    if (!resp) return -1;
    while (*resp == ' ' || *resp == '\t' || *resp == '\n' || *resp == '\r') resp++;
    size_t n = strlen(resp);
    while (n && (resp[n - 1] == ' ' || resp[n - 1] == '\t' || resp[n - 1] == '\n' || resp[n - 1] == '\r')) n--;
    for (size_t i = 0; i < json_array_size(c->answers); i++) {
        json_t *a = json_array_get(c->answers, i);
        const char *t = json_string_value(json_object_get(a, "text")), *l = json_string_value(json_object_get(a, "label"));
        if (t && l && strlen(t) == n && !strncmp(resp, t, n))
            for (int j = 0; j < 3; j++)
                if (!strcmp(l, LABEL3[j])) return j;
    }
    return -1;
}

/* Share of Yes / No / Maybe / other among generated rows. */
static json_t *gen_distribution(const eb_ctx *c, const json_t *rows) {
    double n4[4] = {0};
    size_t n = json_array_size(rows);
    for (size_t i = 0; i < n; i++) {
        int l = answer_label(c, json_string_value(json_object_get(json_array_get(rows, i), "response")));
        n4[l < 0 ? 3 : l]++;
    }
    json_t *o = json_object();
    const char *k[4] = {"Yes", "No", "Maybe", "other"};
    for (int j = 0; j < 4; j++) json_object_set_new(o, k[j], json_real(n ? n4[j] / (double)n : 0));
    return o;
}

/* Per kind of question (hopeful, risky, unsure): the share of each label among its rows, and
 * "preferred": the share of all rows whose label is the one preferred for their question. */
static json_t *kind_distribution(const eb_ctx *c, const json_t *rows) {
    static const char *const KINDS[3] = {"hopeful", "risky", "unsure"};
    double cnt[3][4] = {{0}}, nk[3] = {0}, pref = 0;
    size_t n = json_array_size(rows);
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(rows, i);
        const char *k = json_string_value(json_object_get(r, "kind")), *p = json_string_value(json_object_get(r, "preferred"));
        int l = answer_label(c, json_string_value(json_object_get(r, "response")));
        if (l >= 0 && p && !strcmp(p, LABEL3[l])) pref++;
        for (int j = 0; k && j < 3; j++)
            if (!strcmp(k, KINDS[j])) { cnt[j][l < 0 ? 3 : l]++; nk[j]++; }
    }
    json_t *o = json_object();
    const char *lab[4] = {"Yes", "No", "Maybe", "other"};
    for (int j = 0; j < 3; j++) {
        json_t *d = json_object();
        for (int m = 0; m < 4; m++) json_object_set_new(d, lab[m], json_real(nk[j] ? cnt[j][m] / nk[j] : 0));
        json_object_set_new(o, KINDS[j], d);
    }
    json_object_set_new(o, "preferred", json_real(n ? pref / (double)n : 0));
    return o;
}

/* The judge's agreement with the human preference on the held-out questions: each question with one
 * answer of each label, graded; accuracy = verdict Good exactly for the preferred label. Also the
 * share of "Yes" answers it calls Good and the majority class's share. */
static jr_status judge_accuracy(eb_ctx *c, int port, const char *name, double *acc, double *yes_good, double *majority) {
    json_t *probe = NULL, *rw = NULL;
    jr_status st = eb_load_jsonl("data/eightball/lm/judge_probe.jsonl", &probe);
    double m, u, l;
    char nm[64];
    snprintf(nm, sizeof nm, "probe-%s", name);
    if (!st) st = eb_grade(c, probe, port, nm, &m, &u, &l, &rw);
    int ok = 0, n = 0, ny = 0, yg = 0, nbad = 0;
    for (size_t i = 0; !st && i < json_array_size(rw); i++) {
        json_t *r = json_array_get(rw, i), *p = json_array_get(probe, i);
        const char *lab = json_string_value(json_object_get(p, "label")), *pref = json_string_value(json_object_get(p, "preferred"));
        if (!json_is_number(r) || !lab || !pref) continue;
        int good = json_number_value(r) > 0.5;
        ok += good == !strcmp(lab, pref);
        nbad += !!strcmp(lab, pref);
        n++;
        if (!strcmp(lab, "Yes")) { ny++; yg += good; }
    }
    *acc = n ? (double)ok / n : NAN;
    *yes_good = ny ? (double)yg / ny : NAN;
    *majority = n ? (double)(nbad > n - nbad ? nbad : n - nbad) / n : NAN;
    json_decref(rw);
    json_decref(probe);
    return st;
}

/* GRPO from the SFT policy into gdir (emptied first: a run against another judge must not be resumed),
 * judged over HTTP on port, in this process. */
static jr_status grpo_train(eb_ctx *c, const char *gdir, int port) {
    char ep[160], od[PATH_MAX + 16], mp[PATH_MAX + 32], stp[48], gen[48], pps[48];
    snprintf(od, sizeof od, "run.out_dir=%s", gdir);
    snprintf(mp, sizeof mp, "model.path=%s/policy-sft/model", c->out);
    snprintf(stp, sizeof stp, "trainer.steps=%d", c->z.grpo_steps);
    snprintf(gen, sizeof gen, "grpo.num_generations=%d", c->z.grpo_gens);
    snprintf(pps, sizeof pps, "grpo.prompts_per_step=%d", c->z.grpo_prompts);
    char *over[] = {od, mp, eb_endpoint(ep, sizeof ep, port), stp, gen, pps};
    jr_status st = jr_rmtree(gdir);
    if (st) return st;
    fprintf(c->logf, "\n$ judgerl train configs/eightball-grpo.yaml %s %s %s %s %s %s\n", od, mp, ep, stp, gen, pps);
    fflush(c->logf);
    jr_config cfg;
    if ((st = jr_config_load(&cfg, "configs/eightball-grpo.yaml", 6, over, jr_train_tables))) return st;
    jr_train_result res;
    st = jr_train_run(&cfg, c->logf, c->stop, &res);
    jr_config_free(&cfg);
    return st;
}

static double mean_metric(const char *path, const char *key) {
    json_t *rows = NULL;
    if (eb_load_jsonl(path, &rows)) return NAN;
    double s = 0;
    int n = 0;
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *v = json_object_get(json_array_get(rows, i), key);
        if (json_is_number(v)) { s += json_number_value(v); n++; }
    }
    json_decref(rows);
    return n ? s / n : NAN;
}

/* The stage's figures into r (c->sum["grpo"][k]). */
static void record(eb_ctx *c, json_t *r, const char *name, const char *gdir, const double *m0u0, const double *m1u1l1,
                   const json_t *after) {
    char mpath[PATH_MAX + 32], rel[96];
    snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", gdir);
    snprintf(rel, sizeof rel, "grpo-%s/metrics.jsonl", name);
    json_object_set_new(r, "metrics", json_string(rel));
    json_object_set_new(r, "reward_before", json_real(m0u0[0]));
    json_object_set_new(r, "reward_after", json_real(m1u1l1[0]));
    json_object_set_new(r, "unscored_before", json_real(m0u0[1]));
    json_object_set_new(r, "unscored_share", json_real(m1u1l1[1]));
    json_object_set_new(r, "grade_latency_s", json_real(m1u1l1[2]));
    json_object_set_new(r, "judge_latency_p50", json_real(mean_metric(mpath, "judge/latency_p50")));
    json_object_set_new(r, "train_unscored_frac", json_real(mean_metric(mpath, "unscored_frac")));
    json_object_set_new(r, "dist_before", gen_distribution(c, c->before));
    json_object_set_new(r, "dist_after", gen_distribution(c, after));
    json_object_set_new(r, "kinds_before", kind_distribution(c, c->before));
    json_object_set_new(r, "kinds_after", kind_distribution(c, after));
}

jr_status eb_stage_grpo(eb_ctx *c, const void *arg, char *note, size_t cap) {
    const char *name = arg;
    json_t *grpo = json_object_get(c->sum, "grpo");
    if (!grpo) json_object_set_new(c->sum, "grpo", grpo = json_array());
    char jm[PATH_MAX], gdir[PATH_MAX], sname[64], an[64], pm[PATH_MAX + 8], ap[PATH_MAX];
    eb_path(c, jm, sizeof jm, "judge-%s/model", name);
    eb_path(c, gdir, sizeof gdir, "grpo-%s", name);
    snprintf(sname, sizeof sname, "%s", name);
    eb_server sv;
    jr_status st = eb_server_start(c, &sv, jm, sname);
    if (st) return st;
    json_t *r = json_object();
    json_array_append_new(grpo, r);
    json_object_set_new(r, "judge", json_string(name));
    json_object_set_new(r, "port", json_integer(sv.port));
    double b[2] = {NAN, NAN}, a[3] = {NAN, NAN, NAN}, lat0, jacc = NAN, jyes = NAN, jmaj = NAN;
    st = judge_accuracy(c, sv.port, name, &jacc, &jyes, &jmaj);
    json_object_set_new(r, "judge_accuracy", json_real(jacc));
    json_object_set_new(r, "judge_majority_class", json_real(jmaj));
    json_object_set_new(r, "judge_yes_good", json_real(jyes));
    if (!st) st = eb_grade(c, c->before, sv.port, name, &b[0], &b[1], &lat0, NULL);
    if (!st) st = grpo_train(c, gdir, sv.port);
    json_t *after = NULL;
    snprintf(pm, sizeof pm, "%s/model", gdir);
    eb_path(c, ap, sizeof ap, "eval/after-%s.jsonl", name);
    if (!st) st = eb_generate(c, pm, ap, c->z.heldout_samples, &after);
    snprintf(an, sizeof an, "%s-after", name);
    if (!st) st = eb_grade(c, after, sv.port, an, &a[0], &a[1], &a[2], NULL);
    eb_server_stop(&sv);
    if (!st) record(c, r, name, gdir, b, a, after);
    json_decref(after);
    if (st) return st;
    snprintf(note, cap, "%d steps against judge-%s on port %d; its mean held-out reward %.3f -> %.3f", c->z.grpo_steps, name,
             sv.port, b[0], a[0]);
    return JR_OK;
}
