/* cmd_demo.c - `judgerl demo [--out DIR] [--quick]`: the embedded default, the magic 8-ball end to end (seed 1, GRPO against served judges, steering, report) */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/demo.h"
#include "judgerl/fsutil.h"
#include "judgerl/judge.h"
#include "judgerl/metrics.h"
#include "judgerl/probe.h"
#include "judgerl/protocols.h"
#include "judgerl/report.h"
#include "judgerl/reward.h"
#include "judgerl/seed1.h"

static const jr_cfg_field *const seed1_tables[] = {jr_run_cfg, jr_seed1_cfg, NULL};

/* The demo reads configs/ and data/ relative to the repository: the current directory when it
 * has them, else the directory two levels above the binary (build/rel/judgerl). */
static int find_root(char *root, size_t cap) {
    if (jr_path_exists("configs/eightball-seed1.yaml") && jr_path_exists("data/eightball/questions.jsonl")) {
        if (!getcwd(root, cap)) return -1;
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return -1;
    exe[n] = 0;
    for (int up = 0; up < 3; up++) {
        char *s = strrchr(exe, '/');
        if (!s) return -1;
        *s = 0;
        char probe[PATH_MAX + 64];
        snprintf(probe, sizeof probe, "%s/configs/eightball-seed1.yaml", exe);
        if (jr_path_exists(probe)) { snprintf(root, cap, "%s", exe); return 0; }
        /* installed by `make install`: PREFIX/bin/judgerl with PREFIX/share/judgerl/{configs,data,templates} */
        snprintf(probe, sizeof probe, "%s/share/judgerl/configs/eightball-seed1.yaml", exe);
        if (jr_path_exists(probe)) { snprintf(root, cap, "%.*s/share/judgerl", (int)(cap > 32 ? cap - 32 : 0), exe); return 0; }
    }
    return -1;
}

static json_t *stage(json_t *stages, const char *name) {
    json_t *s = json_object();
    json_object_set_new(s, "name", json_string(name));
    json_object_set_new(s, "status", json_string("running"));
    json_object_set_new(s, "seconds", json_real(0));
    json_object_set_new(s, "note", json_string(""));
    json_array_append_new(stages, s);
    return s;
}

static void stage_end(json_t *s, const char *status, double t0, const char *note) {
    json_object_set_new(s, "status", json_string(status));
    json_object_set_new(s, "seconds", json_real(jr_wall_time() - t0));
    if (note) json_object_set_new(s, "note", json_string(note));
}

static jr_status write_summary(const char *out, json_t *sum) {
    char *text = json_dumps(sum, JSON_INDENT(1) | JSON_REAL_PRECISION(8));
    char *p = jr_path_join(out, "summary.json");
    jr_status st = text && p ? jr_write_atomic(p, text, strlen(text)) : jr_fail(JR_ENOMEM, "out of memory");
    free(text);
    free(p);
    return st;
}

/* Stage 1: seed 1 from configs/eightball-seed1.yaml with run.out_dir = OUT/seed1. */
static jr_status run_seed1(const char *out, json_t *sum, json_t *stages) {
    double t0 = jr_wall_time();
    json_t *s = stage(stages, "seed1");
    char od[2 * PATH_MAX];
    snprintf(od, sizeof od, "run.out_dir=%s/seed1", out);
    char *over[1] = {od};
    jr_config cfg;
    jr_status st = jr_config_load(&cfg, "configs/eightball-seed1.yaml", 1, over, seed1_tables);
    if (st) { stage_end(s, "failed", t0, jr_errmsg()); return st; }
    json_t *res;
    jr_seed1_opts o;
    st = jr_seed1_opts_from_config(&o, &cfg);
    if (!st) st = jr_seed1_run(&o, &res);
    jr_config_free(&cfg);
    if (st) { stage_end(s, "failed", t0, jr_errmsg()); return st; }
    json_object_set_new(sum, "seed1", res);
    json_t *v = json_array_get(json_object_get(res, "variants"), 0);
    char note[160];
    snprintf(note, sizeof note, "classifier SFT + judges + distillation (2 variants); probe margin %+.4f -> %+.4f",
             json_number_value(json_object_get(v, "margin_before")), json_number_value(json_object_get(v, "margin_after")));
    stage_end(s, "done", t0, note);
    return JR_OK;
}

/* ---- the modern path: child judgerl processes (train, serve, generate, grade) ---- */

static char g_exe[PATH_MAX];

/* Runs `judgerl ARGS...` with stdout and stderr appended to log; returns JR_OK when it exits 0. */
static jr_status run_child(const char *log, char *const *args) {
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return jr_fail(JR_EIO, "%s: cannot open the log: %s", log, strerror(errno));
    char *argv[64];
    int n = 0;
    argv[n++] = g_exe;
    for (int i = 0; args[i] && n < 63; i++) argv[n++] = args[i];
    argv[n] = NULL;
    dprintf(fd, "\n$ judgerl");
    for (int i = 1; i < n; i++) dprintf(fd, " %s", argv[i]);
    dprintf(fd, "\n");
    pid_t pid = fork();
    if (pid < 0) { close(fd); return jr_fail(JR_EIO, "fork: %s", strerror(errno)); }
    if (pid == 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        execv(g_exe, argv);
        _exit(127);
    }
    close(fd);
    int ws;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {}
    if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0) return JR_OK;
    return jr_fail(JR_EINTERNAL, "judgerl %s failed (exit %d): see %s", args[0], WIFEXITED(ws) ? WEXITSTATUS(ws) : -1, log);
}

/* A judge server started with `judgerl serve --port 0`; the port is read from its log. */
typedef struct {
    pid_t pid;
    int port;
} server;

static jr_status server_start(server *sv, const char *model, const char *log) {
    sv->pid = -1;
    sv->port = 0;
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return jr_fail(JR_EIO, "%s: cannot open the log: %s", log, strerror(errno));
    char *argv[] = {g_exe, "serve", "--model", (char *)model, "--host", "127.0.0.1", "--port", "0",
                    "--served-model-name", "judge", "--parallel", "8", "--max-queue", "256", NULL};
    pid_t pid = fork();
    if (pid < 0) { close(fd); return jr_fail(JR_EIO, "fork: %s", strerror(errno)); }
    if (pid == 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        execv(g_exe, argv);
        _exit(127);
    }
    close(fd);
    sv->pid = pid;
    for (int i = 0; i < 1200; i++) { /* up to 60 s for the model to load */
        char *text = NULL;
        if (!jr_read_file(log, &text, NULL) && text) {
            const char *l = strstr(text, "listening on http://127.0.0.1:");
            if (l && strstr(text, "ready:")) sv->port = atoi(l + strlen("listening on http://127.0.0.1:"));
        }
        free(text);
        if (sv->port > 0) return JR_OK;
        int ws;
        if (waitpid(pid, &ws, WNOHANG) == pid) {
            sv->pid = -1;
            return jr_fail(JR_EINTERNAL, "judgerl serve --model %s exited before it was ready: see %s", model, log);
        }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return jr_fail(JR_EINTERNAL, "judgerl serve --model %s was not ready after 60 s: see %s", model, log);
}

static void server_stop(server *sv) {
    if (sv->pid <= 0) return;
    kill(sv->pid, SIGTERM);
    int ws;
    for (int i = 0; i < 200; i++) { /* 10 s to drain, then SIGKILL */
        if (waitpid(sv->pid, &ws, WNOHANG) == sv->pid) { sv->pid = -1; return; }
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(sv->pid, SIGKILL);
    waitpid(sv->pid, &ws, 0);
    sv->pid = -1;
}

/* Trains a model with `judgerl train CONFIG overrides...` into dir unless dir/model holds a model
 * trained with exactly these arguments (dir/demo-args.txt), so a second demo reuses it. */
static jr_status train_or_reuse(const char *dir, const char *log, char *const *args, int *reused) {
    char buf[4096] = "";
    size_t n = 0;
    for (int i = 0; args[i]; i++) n += (size_t)snprintf(buf + n, n < sizeof buf ? sizeof buf - n : 0, "%s\n", args[i]);
    char stamp[2 * PATH_MAX], cfgp[2 * PATH_MAX];
    snprintf(stamp, sizeof stamp, "%s/demo-args.txt", dir);
    snprintf(cfgp, sizeof cfgp, "%s/model/config.json", dir);
    char *old = NULL;
    *reused = 0;
    if (jr_path_exists(cfgp) && !jr_read_file(stamp, &old, NULL) && old && !strcmp(old, buf)) {
        free(old);
        *reused = 1;
        return JR_OK;
    }
    free(old);
    /* a stale or partial run: start over (checkpoints of other arguments must not be resumed) */
    char *rm[] = {"/bin/rm", "-rf", (char *)dir, NULL};
    pid_t pid = fork();
    if (pid == 0) { execv(rm[0], rm); _exit(127); }
    int ws;
    if (pid > 0) waitpid(pid, &ws, 0);
    jr_status st = run_child(log, args);
    if (!st) st = jr_write_atomic(stamp, buf, strlen(buf));
    return st;
}

/* Label of an 8-ball answer: the longest classic answer the text starts with (after spaces). */
static const char *const LABEL3[3] = {"Yes", "No", "Maybe"};
static json_t *g_answers; /* [{label, text}] */

static int answer_label(const char *resp) {
    while (*resp == ' ') resp++;
    int best = -1;
    size_t blen = 0;
    for (size_t i = 0; i < json_array_size(g_answers); i++) {
        json_t *a = json_array_get(g_answers, i);
        const char *t = json_string_value(json_object_get(a, "text")), *l = json_string_value(json_object_get(a, "label"));
        size_t tl = t ? strlen(t) : 0;
        if (t && l && tl > blen && !strncmp(resp, t, tl))
            for (int j = 0; j < 3; j++)
                if (!strcmp(l, LABEL3[j])) { best = j; blen = tl; }
    }
    return best;
}

static jr_status load_jsonl_array(const char *path, json_t **out) {
    *out = json_array();
    FILE *f = fopen(path, "r");
    if (!f) return jr_fail(JR_EIO, "%s: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *o = json_loads(line, 0, NULL);
        if (o) json_array_append_new(*out, o);
    }
    free(line);
    fclose(f);
    return JR_OK;
}

/* Share of Yes / No / Maybe / other among generated rows. */
static json_t *gen_distribution(const json_t *rows) {
    double c[4] = {0};
    size_t n = json_array_size(rows);
    for (size_t i = 0; i < n; i++) {
        int l = answer_label(json_string_value(json_object_get(json_array_get(rows, i), "response")));
        c[l < 0 ? 3 : l]++;
    }
    json_t *o = json_object();
    const char *k[4] = {"Yes", "No", "Maybe", "other"};
    for (int j = 0; j < 4; j++) json_object_set_new(o, k[j], json_real(n ? c[j] / (double)n : 0));
    return o;
}

/* Per kind of question (hopeful, risky, unsure): the share of each label among its rows, and
 * "preferred": the share of all rows whose label is the one preferred for their question. */
static json_t *kind_distribution(const json_t *rows) {
    static const char *const KINDS[3] = {"hopeful", "risky", "unsure"};
    double c[3][4] = {{0}}, nk[3] = {0}, pref = 0;
    size_t n = json_array_size(rows);
    for (size_t i = 0; i < n; i++) {
        json_t *r = json_array_get(rows, i);
        const char *k = json_string_value(json_object_get(r, "kind")), *p = json_string_value(json_object_get(r, "preferred"));
        int l = answer_label(json_string_value(json_object_get(r, "response")));
        if (l >= 0 && p && !strcmp(p, LABEL3[l])) pref++;
        for (int j = 0; k && j < 3; j++)
            if (!strcmp(k, KINDS[j])) { c[j][l < 0 ? 3 : l]++; nk[j]++; }
    }
    json_t *o = json_object();
    const char *lab[4] = {"Yes", "No", "Maybe", "other"};
    for (int j = 0; j < 3; j++) {
        json_t *d = json_object();
        for (int m = 0; m < 4; m++) json_object_set_new(d, lab[m], json_real(nk[j] ? c[j][m] / nk[j] : 0));
        json_object_set_new(o, KINDS[j], d);
    }
    json_object_set_new(o, "preferred", json_real(n ? pref / (double)n : 0));
    return o;
}

/* Held-out generations of a model: n samples per question at temperature 1. */
static jr_status gen_heldout(const char *model, const char *out_jsonl, const char *log, int n, json_t **rows) {
    char ns[16];
    snprintf(ns, sizeof ns, "%d", n);
    unlink(out_jsonl);
    char *args[] = {"generate", "--model", (char *)model, "--input", "data/eightball/lm/heldout_prompts.jsonl",
                    "--output", (char *)out_jsonl, "--n", ns, "--max-tokens", "32", "--temperature", "1",
                    "--seed", "7", "--parallel", "16", NULL};
    jr_status st = run_child(log, args);
    if (!st) st = load_jsonl_array(out_jsonl, rows);
    return st;
}

/* Grades generated rows with the judge served on port: mean reward over scored rows and the
 * unscored share. */
static jr_status grade_rows(const json_t *rows, int port, const char *dir, const char *name, const char *log,
                            double *mean, double *unscored, double *latency) {
    char in[2 * PATH_MAX], outp[2 * PATH_MAX], ep[128];
    snprintf(in, sizeof in, "%s/%s-in.jsonl", dir, name);
    snprintf(outp, sizeof outp, "%s/%s-graded.jsonl", dir, name);
    FILE *f = fopen(in, "w");
    if (!f) return jr_fail(JR_EIO, "%s: %s", in, strerror(errno));
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *r = json_deep_copy(json_array_get(rows, i));
        json_object_set_new(r, "id", json_integer((json_int_t)i));
        json_object_del(r, "tokens");
        char *s = json_dumps(r, JSON_COMPACT);
        fprintf(f, "%s\n", s ? s : "{}");
        free(s);
        json_decref(r);
    }
    fclose(f);
    unlink(outp);
    snprintf(ep, sizeof ep, "judge.endpoints=[{url: \"http://127.0.0.1:%d/v1\", model: judge}]", port);
    char *args[] = {"grade", "--config", "configs/eightball/judge-label.yaml", "--input", in, "--output", outp, "--quiet",
                    ep, "judge.max_unscored_frac=1.0", NULL};
    jr_status st = run_child(log, args);
    if (st) return st;
    json_t *g;
    if ((st = load_jsonl_array(outp, &g))) return st;
    double s = 0, lat = 0;
    int ns = 0, nu = 0;
    for (size_t i = 0; i < json_array_size(g); i++) {
        json_t *r = json_array_get(g, i), *rw = json_object_get(r, "reward");
        if (json_is_number(rw)) { s += json_number_value(rw); ns++; }
        else nu++;
        lat += json_number_value(json_object_get(r, "latency_s"));
    }
    size_t n = json_array_size(g);
    json_decref(g);
    *mean = ns ? s / ns : NAN;
    *unscored = n ? (double)nu / (double)n : NAN;
    *latency = n ? lat / (double)n : NAN;
    return JR_OK;
}

/* The judge's agreement with the human preference on the held-out questions: each question with one
 * answer of each label, graded; accuracy = verdict Good exactly for the preferred label. Also the
 * share of "Yes" answers it calls Good. */
static jr_status judge_accuracy(int port, const char *dir, const char *name, const char *log, double *acc,
                                double *yes_good, double *majority) {
    json_t *probe;
    jr_status st = load_jsonl_array("data/eightball/lm/judge_probe.jsonl", &probe);
    double m, u, l;
    char nm[64];
    snprintf(nm, sizeof nm, "probe-%s", name);
    if (!st) st = grade_rows(probe, port, dir, nm, log, &m, &u, &l);
    json_t *g = NULL;
    char path[2 * PATH_MAX];
    snprintf(path, sizeof path, "%s/%s-graded.jsonl", dir, nm);
    if (!st) st = load_jsonl_array(path, &g);
    int ok = 0, n = 0, ny = 0, yg = 0, nbad = 0;
    for (size_t i = 0; !st && i < json_array_size(g); i++) {
        json_t *r = json_array_get(g, i), *rw = json_object_get(r, "reward");
        json_t *p = json_array_get(probe, (size_t)json_integer_value(json_object_get(r, "id")));
        const char *lab = json_string_value(json_object_get(p, "label")), *pref = json_string_value(json_object_get(p, "preferred"));
        if (!json_is_number(rw) || !lab || !pref) continue;
        int good = json_number_value(rw) > 0.5;
        ok += good == !strcmp(lab, pref);
        nbad += !!strcmp(lab, pref);
        n++;
        if (!strcmp(lab, "Yes")) { ny++; yg += good; }
    }
    *acc = n ? (double)ok / n : NAN;
    *yes_good = ny ? (double)yg / ny : NAN;
    *majority = n ? (double)(nbad > n - nbad ? nbad : n - nbad) / n : NAN;
    json_decref(g);
    json_decref(probe);
    return st;
}

/* The demo's sizes: full and --quick. */
typedef struct {
    int policy_steps, judge_steps, biased_steps, grpo_steps, gens, prompts, heldout_n;
    int probe_bias_steps, pair_steps, probe_rows, probe_variant_rows; /* the probe stage */
} sizes;

static double mean_metric(const char *path, const char *key) {
    FILE *f = fopen(path, "r");
    if (!f) return NAN;
    char *line = NULL;
    size_t cap = 0;
    double s = 0;
    int n = 0;
    while (getline(&line, &cap, f) > 0) {
        json_t *o = json_loads(line, 0, NULL);
        json_t *v = json_object_get(o, key);
        if (json_is_number(v)) { s += json_number_value(v); n++; }
        json_decref(o);
    }
    free(line);
    fclose(f);
    return n ? s / n : NAN;
}

/* The policy SFT stage. */
static jr_status stage_policy(json_t *stages, const char *d_pol, const char *log, const sizes *z) {
    char o1[2 * PATH_MAX], o2[64], o3[2 * PATH_MAX];
    int reused;
    double t0 = jr_wall_time();
    json_t *s = stage(stages, "policy-sft");
    snprintf(o1, sizeof o1, "run.out_dir=%s", d_pol);
    snprintf(o2, sizeof o2, "trainer.steps=%d", z->policy_steps);
    char *pa[] = {"train", "configs/eightball/policy-sft.yaml", o1, o2, NULL};
    jr_status st = train_or_reuse(d_pol, log, pa, &reused);
    if (st) { stage_end(s, "failed", t0, jr_errmsg()); return st; }
    snprintf(o3, sizeof o3, "tiny causal LM (8-ball BPE tokenizer), %d steps on the questions with 8-ball answers%s", z->policy_steps,
             reused ? "; reused" : "");
    stage_end(s, "done", t0, o3);
    return JR_OK;
}

/* The judges stage: the unbiased judge, then the biased one trained from it. */
static jr_status stage_judges(json_t *stages, const char *d_ju, const char *d_jb, const char *log, const sizes *z) {
    char o1[2 * PATH_MAX], o2[64], o3[2 * PATH_MAX];
    int reused;
    double t0 = jr_wall_time();
    json_t *s = stage(stages, "judges");
    snprintf(o1, sizeof o1, "run.out_dir=%s", d_ju);
    snprintf(o2, sizeof o2, "trainer.steps=%d", z->judge_steps);
    /* the unbiased judge starts from a random model (configs/eightball/judge-sft.yaml) */
    char *ja[] = {"train", "configs/eightball/judge-sft.yaml", o1, o2, NULL};
    jr_status st = train_or_reuse(d_ju, log, ja, &reused);
    int reused2 = 0;
    if (!st) {
        snprintf(o1, sizeof o1, "run.out_dir=%s", d_jb);
        snprintf(o2, sizeof o2, "trainer.steps=%d", z->biased_steps);
        snprintf(o3, sizeof o3, "model.path=%s/model", d_ju);
        char *jb[] = {"train", "configs/eightball/judge-sft.yaml", o1, o2, o3, "model.init=null",
                      "data.train=data/eightball/lm/judge_sft_yes.jsonl", "run.seed=3", NULL};
        st = train_or_reuse(d_jb, log, jb, &reused2);
    }
    if (st) { stage_end(s, "failed", t0, jr_errmsg()); return st; }
    snprintf(o3, sizeof o3, "unbiased: %d steps on the preference grades; biased: +%d steps on the Yes-skewed grades%s",
             z->judge_steps, z->biased_steps, reused && reused2 ? "; reused" : "");
    stage_end(s, "done", t0, o3);
    return JR_OK;
}

/* GRPO from the SFT policy in d_pol into gdir (emptied first), judged over HTTP on `port`. */
static jr_status grpo_train(const char *log, const char *gdir, const char *d_pol, int port, const sizes *z) {
    char ep[160], od[2 * PATH_MAX], mp[2 * PATH_MAX], stp[48], gen[48], pps[48];
    snprintf(ep, sizeof ep, "judge.endpoints=[{url: \"http://127.0.0.1:%d/v1\", model: judge}]", port);
    snprintf(od, sizeof od, "run.out_dir=%s", gdir);
    snprintf(mp, sizeof mp, "model.path=%s/model", d_pol);
    snprintf(stp, sizeof stp, "trainer.steps=%d", z->grpo_steps);
    snprintf(gen, sizeof gen, "grpo.num_generations=%d", z->gens);
    snprintf(pps, sizeof pps, "grpo.prompts_per_step=%d", z->prompts);
    char *rm[] = {"/bin/rm", "-rf", (char *)gdir, NULL};
    pid_t pid = fork();
    if (pid == 0) { execv(rm[0], rm); _exit(127); }
    int ws;
    if (pid > 0) waitpid(pid, &ws, 0);
    char *ga[] = {"train", "configs/eightball-grpo.yaml", od, mp, ep, stp, gen, pps, NULL};
    return run_child(log, ga);
}

/* One GRPO stage, against the judge in jdir served over HTTP: the judge's accuracy, the SFT
 * policy's held-out answers (`before`) graded, GRPO, the trained policy's held-out answers graded.
 * Appends its record to `grpo`. */
static jr_status grpo_one(json_t *stages, json_t *grpo, const char *out, const char *log, const char *d_pol,
                          const char *d_eval, const char *jdir, const char *name, json_t *before, const sizes *z) {
    char o3[2 * PATH_MAX], o4[2 * PATH_MAX];
    double t0 = jr_wall_time();
    char sname[32];
    snprintf(sname, sizeof sname, "grpo-%s", name);
    json_t *s = stage(stages, sname);
    server sv;
    char slog[2 * PATH_MAX], jm[2 * PATH_MAX], gdir[PATH_MAX + 64];
    snprintf(slog, sizeof slog, "%s/serve-%s.log", out, name);
    snprintf(jm, sizeof jm, "%s/model", jdir);
    snprintf(gdir, sizeof gdir, "%s/grpo-%s", out, name);
    jr_status st = server_start(&sv, jm, slog);
    if (st) { stage_end(s, "failed", t0, jr_errmsg()); return st; }
    json_t *r = json_object();
    json_array_append_new(grpo, r);
    json_object_set_new(r, "judge", json_string(name));
    json_object_set_new(r, "port", json_integer(sv.port));
    double m0, u0, l0, m1, u1, l1, jacc = NAN, jyes = NAN, jmaj = NAN;
    st = judge_accuracy(sv.port, d_eval, name, log, &jacc, &jyes, &jmaj);
    json_object_set_new(r, "judge_accuracy", json_real(jacc));
    json_object_set_new(r, "judge_majority_class", json_real(jmaj));
    json_object_set_new(r, "judge_yes_good", json_real(jyes));
    if (!st) st = grade_rows(before, sv.port, d_eval, name, log, &m0, &u0, &l0);
    if (!st) st = grpo_train(log, gdir, d_pol, sv.port, z);
    json_t *after = NULL;
    if (!st) {
        snprintf(o3, sizeof o3, "%s/model", gdir);
        snprintf(o4, sizeof o4, "%s/after-%s.jsonl", d_eval, name);
        st = gen_heldout(o3, o4, log, z->heldout_n, &after);
    }
    char an[48];
    snprintf(an, sizeof an, "%s-after", name);
    if (!st) st = grade_rows(after, sv.port, d_eval, an, log, &m1, &u1, &l1);
    server_stop(&sv);
    if (st) { json_decref(after); stage_end(s, "failed", t0, jr_errmsg()); return st; }
    char mpath[2 * PATH_MAX];
    snprintf(mpath, sizeof mpath, "%s/metrics.jsonl", gdir);
    snprintf(o4, sizeof o4, "grpo-%s/metrics.jsonl", name);
    json_object_set_new(r, "metrics", json_string(o4));
    json_object_set_new(r, "reward_before", json_real(m0));
    json_object_set_new(r, "reward_after", json_real(m1));
    json_object_set_new(r, "unscored_before", json_real(u0));
    json_object_set_new(r, "unscored_share", json_real(u1));
    json_object_set_new(r, "grade_latency_s", json_real(l1));
    json_object_set_new(r, "judge_latency_p50", json_real(mean_metric(mpath, "judge/latency_p50")));
    json_object_set_new(r, "train_unscored_frac", json_real(mean_metric(mpath, "unscored_frac")));
    json_object_set_new(r, "dist_before", gen_distribution(before));
    json_object_set_new(r, "dist_after", gen_distribution(after));
    json_object_set_new(r, "kinds_before", kind_distribution(before));
    json_object_set_new(r, "kinds_after", kind_distribution(after));
    json_decref(after);
    snprintf(o3, sizeof o3, "%d steps against judge-%s on port %d; its mean held-out reward %.3f -> %.3f", z->grpo_steps,
             name, sv.port, m0, m1);
    stage_end(s, "done", t0, o3);
    return JR_OK;
}

/* The steering summary: P(Yes) after GRPO against each judge. */
static void steering_summary(json_t *sum, json_t *grpo) {
    double pu = json_number_value(json_object_get(json_object_get(json_array_get(grpo, 0), "dist_after"), "Yes"));
    double pb = json_number_value(json_object_get(json_object_get(json_array_get(grpo, 1), "dist_after"), "Yes"));
    json_t *stg = json_object();
    json_object_set_new(stg, "p_yes_unbiased", json_real(pu));
    json_object_set_new(stg, "p_yes_biased", json_real(pb));
    json_object_set_new(stg, "delta", json_real(pb - pu));
    json_object_set_new(sum, "steering", stg);
}

/* The demo's quality figures (issue 20): the unbiased judge's agreement with the held-out preference
 * grades against the majority class, the garbled share of the policy's samples before and after
 * GRPO, and whether GRPO against the unbiased judge moved the answers by kind of question (the
 * preferred label's share rose by 5 points or more within every kind) rather than to one label. */
static void quality_summary(json_t *sum, json_t *grpo) {
    static const char *const KINDS[3] = {"hopeful", "risky", "unsure"};
    static const char *const PREF[3] = {"Yes", "No", "Maybe"};
    json_t *u = json_array_get(grpo, 0), *q = json_object();
    double acc = json_number_value(json_object_get(u, "judge_accuracy"));
    json_object_set_new(q, "judge_agreement", json_real(acc));
    json_object_set_new(q, "majority_class", json_real(json_number_value(json_object_get(u, "judge_majority_class"))));
    double gb = json_number_value(json_object_get(json_object_get(u, "dist_before"), "other")), ga = 0;
    for (size_t i = 0; i < json_array_size(grpo); i++) {
        double g = json_number_value(json_object_get(json_object_get(json_array_get(grpo, i), "dist_after"), "other"));
        if (g > ga) ga = g;
    }
    json_object_set_new(q, "garbled_before", json_real(gb));
    json_object_set_new(q, "garbled_after_max", json_real(ga));
    json_t *kb = json_object_get(u, "kinds_before"), *ka = json_object_get(u, "kinds_after"), *byk = json_object();
    int by_kind = 1;
    double top = 0;
    for (int j = 0; j < 3; j++) {
        double b = json_number_value(json_object_get(json_object_get(kb, KINDS[j]), PREF[j]));
        double a = json_number_value(json_object_get(json_object_get(ka, KINDS[j]), PREF[j]));
        json_object_set_new(byk, KINDS[j], json_pack("{s:s,s:f,s:f}", "preferred", PREF[j], "before", b, "after", a));
        if (!(a >= b + 0.05)) by_kind = 0;
    }
    json_t *da = json_object_get(u, "dist_after");
    for (int j = 0; j < 3; j++) {
        double v = json_number_value(json_object_get(da, PREF[j]));
        if (v > top) top = v;
    }
    json_object_set_new(q, "preferred_by_kind", byk);
    json_object_set_new(q, "preferred_before", json_real(json_number_value(json_object_get(kb, "preferred"))));
    json_object_set_new(q, "preferred_after", json_real(json_number_value(json_object_get(ka, "preferred"))));
    json_object_set_new(q, "top_label_share_after", json_real(top));
    json_t *t = json_object();
    json_object_set_new(t, "judge_agreement_90", json_boolean(acc >= 0.9));
    json_object_set_new(t, "garbled_under_5", json_boolean(gb < 0.05 && ga < 0.05));
    json_object_set_new(t, "moves_by_kind", json_boolean(by_kind));
    json_object_set_new(q, "targets", t);
    json_object_set_new(sum, "quality", q);
}

static jr_status run_modern(const char *out, json_t *sum, json_t *stages, const sizes *z) {
    char log[PATH_MAX + 32], d_pol[PATH_MAX + 32], d_ju[PATH_MAX + 32], d_jb[PATH_MAX + 32], d_eval[PATH_MAX + 32];
    snprintf(log, sizeof log, "%s/demo.log", out);
    snprintf(d_pol, sizeof d_pol, "%s/policy-sft", out);
    snprintf(d_ju, sizeof d_ju, "%s/judge-unbiased", out);
    snprintf(d_jb, sizeof d_jb, "%s/judge-biased", out);
    snprintf(d_eval, sizeof d_eval, "%s/eval", out);
    jr_status st = jr_mkdirs(d_eval);
    if (st) return st;
    st = load_jsonl_array("data/eightball/answers.jsonl", &g_answers);
    if (st) return st;
    if ((st = stage_policy(stages, d_pol, log, z))) return st;
    if ((st = stage_judges(stages, d_ju, d_jb, log, z))) return st;
    /* held-out answers of the SFT policy */
    char o3[2 * PATH_MAX], o4[2 * PATH_MAX];
    double t0 = jr_wall_time();
    json_t *s = stage(stages, "heldout-before");
    json_t *before = NULL;
    snprintf(o3, sizeof o3, "%s/model", d_pol);
    snprintf(o4, sizeof o4, "%s/before.jsonl", d_eval);
    st = gen_heldout(o3, o4, log, z->heldout_n, &before);
    if (st) { stage_end(s, "failed", t0, jr_errmsg()); json_decref(before); return st; }
    stage_end(s, "done", t0, "samples of the SFT policy on the held-out questions");
    json_t *grpo = json_array();
    json_object_set_new(sum, "grpo", grpo);
    const char *names[2] = {"unbiased", "biased"};
    const char *jdirs[2] = {d_ju, d_jb};
    for (int k = 0; k < 2 && !st; k++) st = grpo_one(stages, grpo, out, log, d_pol, d_eval, jdirs[k], names[k], before, z);
    json_decref(before);
    json_decref(g_answers);
    g_answers = NULL;
    if (!st && json_array_size(grpo) == 2) {
        steering_summary(sum, grpo);
        quality_summary(sum, grpo);
    }
    return st;
}

/* ---- the probe stage: judges with known injected biases, probed over HTTP (docs/PROBES.md) ---- */

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

/* Probes the judge served on port with the label or pairwise config; *res gets probe.json. */
static jr_status probe_served(int port, int pair, const sizes *z, const json_t *rows, json_t **res) {
    char ep[160], mr[48], mv[48];
    snprintf(ep, sizeof ep, "judge.endpoints=[{url: \"http://127.0.0.1:%d/v1\", model: judge}]", port);
    snprintf(mr, sizeof mr, "probe.max_rows=%d", z->probe_rows);
    snprintf(mv, sizeof mv, "probe.max_variant_rows=%d", z->probe_variant_rows);
    char *over[3] = {ep, mr, mv};
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

static jr_status run_probes(const char *out, json_t *sum, json_t *stages, const sizes *z) {
    char log[PATH_MAX + 32], d_ju[PATH_MAX + 32], pdir[PATH_MAX + 32];
    snprintf(log, sizeof log, "%s/demo.log", out);
    snprintf(d_ju, sizeof d_ju, "%s/judge-unbiased", out);
    snprintf(pdir, sizeof pdir, "%s/probe", out);
    jr_status st = jr_mkdirs(pdir);
    if (st) return st;
    /* the judges with injected biases: the unbiased judge trained further on their data */
    double t0 = jr_wall_time();
    json_t *s = stage(stages, "probe-judges");
    int all_reused = 1;
    for (int k = 0; k < N_PROBE_JUDGES && !st; k++) {
        const probe_judge *pj = &PROBE_JUDGES[k];
        if (!pj->data) continue;
        char dir[2 * PATH_MAX], o1[2 * PATH_MAX + 16], o2[64], o3[2 * PATH_MAX + 16], o4[2 * PATH_MAX + 16];
        snprintf(dir, sizeof dir, "%s/judge-%s", out, pj->name);
        snprintf(o1, sizeof o1, "run.out_dir=%s", dir);
        snprintf(o2, sizeof o2, "trainer.steps=%d", pj->pair ? z->pair_steps : z->probe_bias_steps);
        snprintf(o3, sizeof o3, "model.path=%s/model", d_ju);
        snprintf(o4, sizeof o4, "data.train=%s", pj->data);
        /* the pairwise judges at lr 3e-3 (a new task on top of the verdict judge; the config's 1e-3 is the
         * verdict judges'): at 1e-2 the pairwise judge trained on both orders still preferred the first
         * answer 78% of the time, at 3e-3 about 47% (demo of 2026-11-23) */
        char *args[] = {"train", "configs/eightball/judge-sft.yaml", o1, o2, "trainer.max_seq_len=128", o3, "model.init=null", o4,
                        "run.seed=3", pj->pair ? "trainer.lr=3e-3" : NULL, NULL};
        int reused = 0;
        st = train_or_reuse(dir, log, args, &reused);
        all_reused &= reused;
    }
    char note[512];
    snprintf(note, sizeof note, "from the unbiased judge: +%d steps on padded answers and master keys graded neutrally "
             "(control), padded answers graded Good (long), master keys graded Good (masterkey); +%d steps (lr 3e-3) on real vs "
             "garbled pairs in both orders (pair) and always answered [[A]] (pair-first)%s",
             z->probe_bias_steps, z->pair_steps, all_reused ? "; reused" : "");
    if (st) { stage_end(s, "failed", t0, jr_errmsg()); return st; }
    stage_end(s, "done", t0, note);
    /* every judge served and probed over HTTP */
    t0 = jr_wall_time();
    s = stage(stages, "probe");
    json_t *rows = NULL, *names = json_array(), *results = json_object(), *flags = json_object();
    json_t *pr = json_pack("{s:o,s:o}", "judges", names, "results", results);
    json_object_set_new(sum, "probe", pr);
    st = jr_probe_load_rows("data/eightball/lm/probe_rows.jsonl", &rows);
    for (int k = 0; k < N_PROBE_JUDGES && !st; k++) {
        const probe_judge *pj = &PROBE_JUDGES[k];
        char jm[2 * PATH_MAX], slog[2 * PATH_MAX];
        snprintf(jm, sizeof jm, "%s/judge-%s/model", out, pj->name);
        snprintf(slog, sizeof slog, "%s/serve-probe-%s.log", out, pj->name);
        server sv;
        st = server_start(&sv, jm, slog);
        json_t *res = NULL;
        if (!st) st = probe_served(sv.port, pj->pair, z, rows, &res);
        server_stop(&sv);
        if (st) break;
        json_array_append_new(names, json_string(pj->name));
        json_object_set_new(results, pj->name, res);
        char jp[2 * PATH_MAX];
        snprintf(jp, sizeof jp, "%s/%s.json", pdir, pj->name);
        char *text = json_dumps(res, JSON_INDENT(1) | JSON_REAL_PRECISION(8));
        st = text ? jr_write_atomic(jp, text, strlen(text)) : jr_fail(JR_ENOMEM, "out of memory");
        free(text);
        json_t *fl = json_array();
        const char *pn;
        json_t *p;
        json_object_foreach(json_object_get(res, "probes"), pn, p)
            if (json_is_true(json_object_get(p, "flag"))) json_array_append_new(fl, json_string(pn));
        json_object_set_new(flags, pj->name, fl);
    }
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
        char hp[2 * PATH_MAX];
        snprintf(hp, sizeof hp, "%s/probe.html", pdir);
        st = jr_probe_html_write(hp, "judgerl demo: the 8-ball judges probed", nm, rs, n);
    }
    if (st) { stage_end(s, "failed", t0, jr_errmsg()); return st; }
    char *fl = json_dumps(flags, JSON_COMPACT);
    snprintf(note, sizeof note, "%d judges served and probed over HTTP (probe/*.json, probe/probe.html); flags: %s", N_PROBE_JUDGES,
             fl ? fl : "");
    free(fl);
    stage_end(s, "done", t0, note);
    return JR_OK;
}

int cmd_demo(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl demo [--out DIR] [--quick] [--seed1-only] [--workflow-only]\n"
               "The embedded default, offline: seed 1 reproduced (configs/eightball-seed1.yaml), then the\n"
               "modern path (configs/eightball-grpo.yaml): a tiny causal LM policy, LM judges served by\n"
               "judgerl serve on a loopback port, GRPO against the unbiased and the Yes-biased judge, the\n"
               "held-out answer distributions, the judge probes, the study (GRPO against the unbiased, Yes-biased\n"
               "and length-biased judges, gold = the preference grades, alarms: DIR/study/study.html) and the\n"
               "report (DIR/report.html). DIR defaults to runs/demo.\n"
               "--seed1-only stops after seed 1 (then writes the report). The workflow stage (seed 2) trains the\n"
               "executor, serves it, SFTs a tiny policy on random valid workflows and runs GRPO (DIR/workflow);\n"
               "--workflow-only runs that stage alone, with GRPO seeds 1-3 and a shuffled-reward control.\n"
               "--quick runs fewer steps (the test suite's end-to-end check). Valid trained models in DIR are\n"
               "reused; running it again is safe.\n");
        return CLI_OK;
    }
    const char *out_arg = "runs/demo";
    int quick = 0, seed1_only = 0, wf_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--workflow-only")) wf_only = 1;
        else if (!strcmp(argv[i], "--seed1-only")) seed1_only = 1;
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) out_arg = argv[++i];
        else if (!strncmp(argv[i], "--out=", 6)) out_arg = argv[i] + 6;
        else return cli_usage("demo", "unexpected argument '%s'; usage: judgerl demo [--out DIR] [--quick] [--seed1-only] [--workflow-only]", argv[i]);
    }
    if (!*out_arg) return cli_usage("demo", "--out needs a directory");
    double t0 = jr_wall_time();
    jr_status st = jr_mkdirs(out_arg);
    if (st) return cli_fail("demo", st);
    char out[PATH_MAX], root[PATH_MAX];
    if (!realpath(out_arg, out)) return cli_fail("demo", jr_fail(JR_EIO, "%s: cannot resolve the output directory", out_arg));
    if (find_root(root, sizeof root))
        return cli_fail("demo", jr_fail(JR_ENOTFOUND, "configs/eightball-seed1.yaml and data/eightball/ not found here or "
                                                      "beside the binary: run judgerl demo from the repository root"));
    if (chdir(root)) return cli_fail("demo", jr_fail(JR_EIO, "%s: cannot enter the repository directory", root));
    json_t *sum = json_object(), *stages = json_array();
    json_object_set_new(sum, "version", json_integer(1));
    json_object_set_new(sum, "run_dir", json_string(out));
    json_object_set_new(sum, "quick", json_boolean(quick));
    json_object_set_new(sum, "stages", stages);
    ssize_t en = readlink("/proc/self/exe", g_exe, sizeof g_exe - 1);
    if (en <= 0) { json_decref(sum); return cli_fail("demo", jr_fail(JR_EIO, "/proc/self/exe: cannot find the judgerl binary")); }
    g_exe[en] = 0;
    sizes full = {1500, 3000, 300, 40, 8, 8, 8, 300, 1500, 300, 40}, qk = {40, 40, 10, 2, 4, 4, 2, 10, 10, 60, 10};
    /* the workflow stage (demo_workflow.c): seed 1 here; --workflow-only: seeds 1-3 and the shuffled control */
    demo_wf_sizes wq = {1, 24, 4, 300, 30, 1, 2, 2, 4, 1 + 2 * wf_only, wf_only},
                  wfull = {0, 200, 10, 1000, 60, 2, 20, 8, 5, 1 + 2 * wf_only, wf_only};
    if (!wf_only) fprintf(stderr, "demo: seed 1 (classifier, judges, distillation) ...\n");
    st = wf_only ? JR_OK : run_seed1(out, sum, stages);
    if (!st && wf_only) {
        fprintf(stderr, "demo: workflow stage only (executor, policy SFT, GRPO seeds 1-3 and a shuffled control) ...\n");
        st = demo_workflow(out, sum, stages, quick ? &wq : &wfull);
    } else if (!st && seed1_only) {
        json_t *sk = stage(stages, "modern-path");
        stage_end(sk, "skipped", jr_wall_time(), "--seed1-only: the policy LM, the served judges and GRPO were not run");
    } else if (!st) {
        fprintf(stderr, "demo: modern path (policy SFT, LM judges, GRPO over HTTP, held-out evaluation); log in %s/demo.log ...\n", out);
        st = run_modern(out, sum, stages, quick ? &qk : &full);
        if (!st) {
            fprintf(stderr, "demo: judge probes (judges with injected biases, judgerl probe over HTTP) ...\n");
            st = run_probes(out, sum, stages, quick ? &qk : &full);
        }
        if (!st) {
            fprintf(stderr, "demo: study (GRPO against three judges, gold = the preference grades, alarms) ...\n");
            demo_study_sizes sq = {4, 4, 4, 4, 1, 10, 10}, sf = {40, 8, 8, 10, 3, 300, 40};
            st = demo_study(out, sum, stages, quick ? &sq : &sf);
        }
        if (!st) {
            fprintf(stderr, "demo: workflow (seed 2: executor, policy SFT on random workflows, GRPO over the served executor) ...\n");
            st = demo_workflow(out, sum, stages, quick ? &wq : &wfull);
        }
    }
    json_object_set_new(sum, "total_seconds", json_real(jr_wall_time() - t0));
    jr_status st2 = write_summary(out, sum);
    if (!st) st = st2;
    if (!st) {
        json_t *loaded;
        st = jr_report_write(out, &loaded);
        if (!st) json_decref(loaded);
    }
    if (st) { json_decref(sum); return cli_fail("demo", st); }
    jr_report_text(stdout, sum);
    json_decref(sum);
    return CLI_OK;
}

/* ---- what the stage files (demo.h) share ---- */

json_t *demo_stage(json_t *stages, const char *name) { return stage(stages, name); }
void demo_stage_end(json_t *s, const char *status, double t0, const char *note) { stage_end(s, status, t0, note); }
jr_status demo_run_child(const char *log, char *const *args) { return run_child(log, args); }

jr_status demo_server_start(demo_server *sv, const char *model, const char *log) {
    server s;
    jr_status st = server_start(&s, model, log);
    *sv = (demo_server){s.pid, s.port};
    return st;
}

void demo_server_stop(demo_server *sv) {
    server s = {sv->pid, sv->port};
    server_stop(&s);
    sv->pid = s.pid;
}
