/* cmd_demo.c - `judgerl demo [--out DIR] [--quick]`: the embedded default, the magic 8-ball end to end (seed 1, GRPO against served judges, steering, report) */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "judgerl/fsutil.h"
#include "judgerl/metrics.h"
#include "judgerl/report.h"
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
    char od[PATH_MAX + 32];
    snprintf(od, sizeof od, "run.out_dir=%s/seed1", out);
    char *over[1] = {od};
    jr_config cfg;
    jr_status st = jr_config_load(&cfg, "configs/eightball-seed1.yaml", 1, over, seed1_tables);
    if (st) { stage_end(s, "failed", t0, jr_errmsg()); return st; }
    json_t *res;
    st = jr_seed1_run(&cfg, &res);
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

int cmd_demo(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl demo [--out DIR] [--quick]\n"
               "The embedded default, offline: seed 1 reproduced (configs/eightball-seed1.yaml), then the\n"
               "modern path (configs/eightball-grpo.yaml): a tiny causal LM policy, LM judges served by\n"
               "judgerl serve on a loopback port, GRPO against the unbiased and the Yes-biased judge, the\n"
               "held-out answer distributions, and the report (DIR/report.html). DIR defaults to runs/demo.\n"
               "--quick runs fewer steps (the test suite's end-to-end check). Valid trained models in DIR are\n"
               "reused; running it again is safe.\n");
        return CLI_OK;
    }
    const char *out_arg = "runs/demo";
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) out_arg = argv[++i];
        else if (!strncmp(argv[i], "--out=", 6)) out_arg = argv[i] + 6;
        else return cli_usage("demo", "unexpected argument '%s'; usage: judgerl demo [--out DIR] [--quick]", argv[i]);
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
    fprintf(stderr, "demo: seed 1 (classifier, judges, distillation) ...\n");
    st = run_seed1(out, sum, stages);
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
