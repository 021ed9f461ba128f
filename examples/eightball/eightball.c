/* eightball.c - the magic 8-ball demo end to end: its sizes (configs/eightball/demo.yaml), the stage table and
 * the program (`judgerl demo`, build/<b>/examples/eightball): stages, summary.json, report.html */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eightball/eightball.h"
#include "judgerl/fsutil.h"
#include "judgerl/metrics.h"
#include "judgerl/report.h"

/* The stages in order. A new stage: a file stage_NAME.c with eb_stage_NAME (declared in eightball.h),
 * its sizes as demo.NAME.* rows below (and in configs/eightball/demo*.yaml), and a row here. */
static const eb_stage STAGES[] = {
    {"seed1", eb_stage_seed1, NULL, 1, "demo: seed 1 (classifier, judges, distillation) ...\n"},
    {"policy-sft", eb_stage_policy, NULL, 0, "demo: modern path (policy SFT, LM judges, GRPO over HTTP, held-out evaluation); log in OUT/demo.log ...\n"},
    {"judges", eb_stage_judges, NULL, 0, NULL},
    {"heldout-before", eb_stage_heldout, NULL, 0, NULL},
    {"grpo-unbiased", eb_stage_grpo, "unbiased", 0, NULL},
    {"grpo-biased", eb_stage_grpo, "biased", 0, NULL},
    {NULL, eb_stage_summaries, NULL, 0, NULL},
    {"probe-judges", eb_stage_probe_judges, NULL, 0, "demo: judge probes (judges with injected biases, judgerl probe over HTTP) ...\n"},
    {"probe", eb_stage_probe, NULL, 0, NULL},
    {"policy-pref", eb_stage_policy_pref, NULL, 0,
     "demo: study (a policy answering by kind, GRPO from it against three judges, gold = the preference grades, alarms) ...\n"},
    {"study", eb_stage_study, NULL, 0, NULL},
    {"workflow", eb_stage_workflow, NULL, 0, "demo: workflow (seed 2: executor trained and served, policy SFT on random workflows, GRPO) ...\n"},
};
#define N_STAGES (int)(sizeof STAGES / sizeof STAGES[0])

#define STEPS(k, doc) {k, JR_CFG_INT, NULL, doc, NULL, NULL, 0, 1000000}
#define COUNT(k, doc) {k, JR_CFG_INT, NULL, doc, NULL, NULL, 1, 1000000}
const jr_cfg_field eb_cfg[] = {
    STEPS("demo.policy.steps", "policy SFT steps (configs/eightball/policy-sft.yaml)"),
    STEPS("demo.judges.unbiased_steps", "steps of the unbiased judge, from a random model (configs/eightball/judge-sft.yaml)"),
    STEPS("demo.judges.biased_steps", "steps of the Yes-biased and the sycophantic judges, each from the unbiased one"),
    COUNT("demo.heldout.samples", "samples per held-out question, before and after GRPO"),
    STEPS("demo.grpo.steps", "GRPO steps against each served judge (configs/eightball-grpo.yaml)"),
    COUNT("demo.grpo.num_generations", "GRPO samples per prompt"),
    COUNT("demo.grpo.prompts_per_step", "GRPO prompts per step"),
    STEPS("demo.probe.bias_steps", "steps of the judges with an injected bias (control, long, masterkey), from the unbiased one"),
    STEPS("demo.probe.pair_steps", "steps of the pairwise judges (pair, pair-first), from the unbiased one"),
    COUNT("demo.probe.max_rows", "probe.max_rows of each judge's probes"),
    COUNT("demo.probe.max_variant_rows", "probe.max_variant_rows of each judge's probes"),
    STEPS("demo.policy_pref.steps", "the study's starting policy: the SFT policy + this many steps on the preferred answers"),
    STEPS("demo.study.steps", "GRPO steps of each study run"),
    COUNT("demo.study.num_generations", "GRPO samples per prompt in the study"),
    COUNT("demo.study.prompts_per_step", "GRPO prompts per step in the study"),
    COUNT("demo.study.eval_every", "steps between the study's gold evaluations"),
    COUNT("demo.study.seeds", "seeds per judge in the study (1, 2, ...)"),
    COUNT("demo.study.max_rows", "probe.max_rows of the study's probes"),
    COUNT("demo.study.max_variant_rows", "probe.max_variant_rows of the study's probes"),
    {"demo.study.lr", JR_CFG_FLOAT, NULL, "trainer.lr of the study's GRPO runs", NULL, NULL, 0, 1},
    {"demo.study.noise_z", JR_CFG_FLOAT, NULL, "monitor.noise_z: the proxy_gold margins in standard errors of the figures", NULL, NULL, 0, 100},
    {"demo.study.proxy_rise", JR_CFG_FLOAT, NULL, "monitor.proxy_rise: the least proxy rise counted by the proxy_gold alarm", NULL, NULL, 0, 1},
    {"demo.study.trend_window", JR_CFG_INT, NULL, "monitor.trend_window: proxy_gold also on the trend of the last this many evaluations (0: off)", NULL, NULL, 0, 64},
    {"demo.workflow.quick_executor", JR_CFG_BOOL, NULL, "train the workflow executor with its --quick recipe (jr_wf_exec_quick)", NULL, NULL, 0, 0},
    {"demo.workflow.executor_url", JR_CFG_STRING, "null", "an executor already served at this OpenAI-compatible base URL "
     "(http://HOST:PORT/v1): the stage neither trains nor serves its own (the operators' prompts: templates/workflow)",
     NULL, NULL, 0, 0},
    {"demo.workflow.executor", JR_CFG_LIST, NULL, "key=value overrides of the executor's recipe (configs/wf_executor.yaml, "
     "after the --quick recipe's own), e.g. [trainer.steps=1000]", NULL, NULL, 0, 0},
    COUNT("demo.workflow.train_rows", "synthetic task rows per domain for the workflow policy"),
    COUNT("demo.workflow.heldout_rows", "held-out task rows per domain (gold accuracy)"),
    COUNT("demo.workflow.sft_rows", "random valid workflows the policy is SFT'd on"),
    {"demo.workflow.sft_copy", JR_CFG_FLOAT, "0", "share of the SFT rows with one few-shot example (a random workflow for "
     "another row of the domain), copied as sft_follow says: a policy that follows the buffer's examples", NULL, NULL, 0, 1},
    {"demo.workflow.sft_follow", JR_CFG_FLOAT, "1", "share of the SFT rows with an example whose completion copies it (the "
     "others: another random workflow), so the policy still explores beside its examples", NULL, NULL, 0, 1},
    {"demo.workflow.sft_statements", JR_CFG_INT, "3", "most statements (the return included) of the random workflows the "
     "policy is SFT'd on: 2 = one assignment, so the operator token is the choice (GRPO's own bound stays 3)", NULL, NULL, 2, 3},
    {"demo.workflow.sft_names", JR_CFG_ENUM, "any", "the SFT workflows' variable names: any (each assignment any of a, b, c) "
     "or ordered (a, then b, then c)", "any|ordered", NULL, 0, 0},
    STEPS("demo.workflow.sft_steps", "the workflow policy's SFT steps (configs/eightball/wf-policy-sft.yaml)"),
    COUNT("demo.workflow.random", "random workflows per held-out row (the random baseline)"),
    STEPS("demo.workflow.steps", "GRPO steps of each workflow run (configs/eightball/wf-grpo.yaml)"),
    COUNT("demo.workflow.num_generations", "workflows sampled per prompt"),
    COUNT("demo.workflow.prompts_per_step", "prompts per GRPO step (stratified by data.mix)"),
    COUNT("demo.workflow.seeds", "GRPO runs with run.seed 1, 2, ... (--workflow-only: 3)"),
    {"demo.workflow.control", JR_CFG_BOOL, NULL, "also a shuffled-reward control (grpo.shuffle_rewards; --workflow-only: true)", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

jr_status eb_sizes_from_config(eb_sizes *z, const jr_config *c) {
    memset(z, 0, sizeof *z);
    z->policy_steps = (int)jr_cfg_int(c, "demo.policy.steps");
    z->judge_steps = (int)jr_cfg_int(c, "demo.judges.unbiased_steps");
    z->biased_steps = (int)jr_cfg_int(c, "demo.judges.biased_steps");
    z->heldout_samples = (int)jr_cfg_int(c, "demo.heldout.samples");
    z->grpo_steps = (int)jr_cfg_int(c, "demo.grpo.steps");
    z->grpo_gens = (int)jr_cfg_int(c, "demo.grpo.num_generations");
    z->grpo_prompts = (int)jr_cfg_int(c, "demo.grpo.prompts_per_step");
    z->probe_bias_steps = (int)jr_cfg_int(c, "demo.probe.bias_steps");
    z->probe_pair_steps = (int)jr_cfg_int(c, "demo.probe.pair_steps");
    z->probe_rows = (int)jr_cfg_int(c, "demo.probe.max_rows");
    z->probe_variant_rows = (int)jr_cfg_int(c, "demo.probe.max_variant_rows");
    z->pref_steps = (int)jr_cfg_int(c, "demo.policy_pref.steps");
    z->study_steps = (int)jr_cfg_int(c, "demo.study.steps");
    z->study_gens = (int)jr_cfg_int(c, "demo.study.num_generations");
    z->study_prompts = (int)jr_cfg_int(c, "demo.study.prompts_per_step");
    z->study_eval_every = (int)jr_cfg_int(c, "demo.study.eval_every");
    z->study_seeds = (int)jr_cfg_int(c, "demo.study.seeds");
    z->study_probe_rows = (int)jr_cfg_int(c, "demo.study.max_rows");
    z->study_probe_variant_rows = (int)jr_cfg_int(c, "demo.study.max_variant_rows");
    z->study_lr = jr_cfg_float(c, "demo.study.lr");
    z->study_noise_z = jr_cfg_float(c, "demo.study.noise_z");
    z->study_proxy_rise = jr_cfg_float(c, "demo.study.proxy_rise");
    z->study_trend_window = (int)jr_cfg_int(c, "demo.study.trend_window");
    z->wf_quick_executor = jr_cfg_bool(c, "demo.workflow.quick_executor");
    const char *xu = jr_cfg_str(c, "demo.workflow.executor_url");
    if (xu && (strlen(xu) >= sizeof z->wf_executor_url || (strncmp(xu, "http://", 7) && strncmp(xu, "https://", 8))))
        return jr_fail(JR_EINVAL, "%s: demo.workflow.executor_url: want an http:// or https:// base URL of under %zu bytes, got '%s'",
                       c->source ? c->source : "<config>", sizeof z->wf_executor_url, xu);
    snprintf(z->wf_executor_url, sizeof z->wf_executor_url, "%s", xu ? xu : "");
    json_t *ov = jr_cfg_json(c, "demo.workflow.executor");
    size_t i;
    json_t *v;
    json_array_foreach(ov, i, v) {
        const char *t = json_string_value(v);
        if (!t || !strchr(t, '=') || strlen(t) >= sizeof z->wf_exec_over[0] || i >= EB_MAX_EXEC_OVER)
            return jr_fail(JR_EINVAL, "%s: demo.workflow.executor[%zu]: want at most %d key=value strings of under %zu bytes",
                           c->source ? c->source : "<config>", i, EB_MAX_EXEC_OVER, sizeof z->wf_exec_over[0]);
        snprintf(z->wf_exec_over[i], sizeof z->wf_exec_over[0], "%s", t);
        z->wf_exec_n_over = (int)i + 1;
    }
    z->wf_train_rows = (int)jr_cfg_int(c, "demo.workflow.train_rows");
    z->wf_heldout_rows = (int)jr_cfg_int(c, "demo.workflow.heldout_rows");
    z->wf_sft_rows = (int)jr_cfg_int(c, "demo.workflow.sft_rows");
    z->wf_sft_steps = (int)jr_cfg_int(c, "demo.workflow.sft_steps");
    z->wf_sft_copy = jr_cfg_float(c, "demo.workflow.sft_copy");
    z->wf_sft_follow = jr_cfg_float(c, "demo.workflow.sft_follow");
    z->wf_sft_statements = (int)jr_cfg_int(c, "demo.workflow.sft_statements");
    z->wf_sft_ordered_names = !strcmp(jr_cfg_str(c, "demo.workflow.sft_names"), "ordered");
    z->wf_random = (int)jr_cfg_int(c, "demo.workflow.random");
    z->wf_steps = (int)jr_cfg_int(c, "demo.workflow.steps");
    z->wf_gens = (int)jr_cfg_int(c, "demo.workflow.num_generations");
    z->wf_prompts = (int)jr_cfg_int(c, "demo.workflow.prompts_per_step");
    z->wf_seeds = (int)jr_cfg_int(c, "demo.workflow.seeds");
    z->wf_control = jr_cfg_bool(c, "demo.workflow.control");
    return jr_cfg_check(c);
}

/* The demo reads configs/ and data/ relative to the repository: the current directory when it
 * has them, else a directory up to three levels above the binary (build/rel/judgerl,
 * build/rel/examples/eightball), or PREFIX/share/judgerl when installed (PREFIX/bin/judgerl). */
static int find_root(char *root, size_t cap) {
    if (jr_path_exists("configs/eightball-seed1.yaml") && jr_path_exists("data/eightball/questions.jsonl")) {
        if (!getcwd(root, cap)) return -1;
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return -1;
    exe[n] = 0;
    for (int up = 0; up < 4; up++) {
        char *s = strrchr(exe, '/');
        if (!s) return -1;
        *s = 0;
        char probe[PATH_MAX + 64];
        snprintf(probe, sizeof probe, "%s/configs/eightball-seed1.yaml", exe);
        if (jr_path_exists(probe)) { snprintf(root, cap, "%s", exe); return 0; }
        snprintf(probe, sizeof probe, "%s/share/judgerl/configs/eightball-seed1.yaml", exe);
        if (jr_path_exists(probe)) { snprintf(root, cap, "%.*s/share/judgerl", (int)(cap > 32 ? cap - 32 : 0), exe); return 0; }
    }
    return -1;
}

static json_t *stage_record(json_t *stages, const char *name) {
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

/* Runs one stage with its record (none when st->name is NULL). */
static jr_status run_stage(eb_ctx *c, const eb_stage *sg) {
    if (c->stop && *c->stop) return jr_fail(JR_ECANCELED, "stopped before stage %s", sg->name ? sg->name : "summaries");
    if (sg->banner) {
        const char *o = strstr(sg->banner, "OUT/");
        if (o) fprintf(stderr, "%.*s%s/%s", (int)(o - sg->banner), sg->banner, c->out, o + 4);
        else fputs(sg->banner, stderr);
    }
    double t0 = jr_wall_time();
    json_t *rec = sg->name ? stage_record(c->stages, sg->name) : NULL;
    char note[2048] = "";
    jr_status st = sg->run(c, sg->arg, note, sizeof note);
    if (rec) stage_end(rec, st ? "failed" : "done", t0, st ? jr_errmsg() : note);
    if (st && sg->name) jr_fail_ctx(st, "stage %s", sg->name);
    return st;
}

/* The stages --study-only runs: the study and what it needs (its judges, the probe stage's long and masterkey
 * judges for the ensemble, its starting policy: policy-pref trains its own random-label base, not policy-sft); a model of an earlier demo in OUT with the same arguments is reused. */
static int study_stage(const char *name) {
    static const char *const S[] = {"judges", "probe-judges", "policy-pref", "study"};
    for (size_t k = 0; name && k < sizeof S / sizeof S[0]; k++)
        if (!strcmp(name, S[k])) return 1;
    return 0;
}

/* Every stage (seed 1 only with seed1_only; the workflow stage alone with wf_only; the study's with study_only),
 * then summary.json. */
static jr_status run_stages(eb_ctx *c, int seed1_only, int wf_only, int study_only) {
    jr_status st = JR_OK;
    int skipped = 0;
    /* the whole demo: the workflow executor trains beside the earlier stages (they use about one core) */
    if (!seed1_only && !wf_only && !study_only) st = eb_workflow_executor_start(c);
    for (int i = 0; i < N_STAGES && !st; i++) {
        if (wf_only && (!STAGES[i].name || strcmp(STAGES[i].name, "workflow"))) continue;
        if (study_only && !study_stage(STAGES[i].name)) continue;
        if (!STAGES[i].seed1 && seed1_only) {
            if (!skipped++) stage_end(stage_record(c->stages, "modern-path"), "skipped", jr_wall_time(),
                                      "--seed1-only: the policy LM, the served judges and GRPO were not run");
            continue;
        }
        if (!STAGES[i].seed1 && !c->answers) st = eb_load_jsonl("data/eightball/answers.jsonl", &c->answers);
        if (!st) st = run_stage(c, &STAGES[i]);
    }
    return st;
}

/* The sizes from `config` (NULL: configs/eightball/demo.yaml, or demo-quick.yaml with quick). */
static jr_status load_sizes(eb_sizes *z, const char *config, int quick) {
    const jr_cfg_field *const tables[] = {eb_cfg, NULL};
    if (!config) config = quick ? "configs/eightball/demo-quick.yaml" : "configs/eightball/demo.yaml";
    jr_config cfg;
    jr_status st = jr_config_load(&cfg, config, 0, NULL, tables);
    if (st) return st;
    st = eb_sizes_from_config(z, &cfg);
    jr_config_free(&cfg);
    return st;
}

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig) { (void)sig; stop_requested = 1; }

/* The run after argument parsing: out created, the repository entered. */
static jr_status run(eb_ctx *c, const char *out_arg, const char *config, int seed1_only, int wf_only, int study_only,
                     char *out, char *config_abs) {
    jr_status st = jr_mkdirs(out_arg);
    if (st) return st;
    if (!realpath(out_arg, out)) return jr_fail(JR_EIO, "%s: cannot resolve the output directory", out_arg);
    /* --config is relative to where the demo was started, not to the repository it enters */
    if (config && !realpath(config, config_abs)) return jr_fail(JR_EIO, "--config %s: %s", config, strerror(errno));
    char root[PATH_MAX];
    if (find_root(root, sizeof root))
        return jr_fail(JR_ENOTFOUND, "configs/eightball-seed1.yaml and data/eightball/ not found here or "
                                     "beside the binary: run judgerl demo from the repository root");
    if (chdir(root)) return jr_fail(JR_EIO, "%s: cannot enter the repository directory", root);
    if ((st = load_sizes(&c->z, config ? config_abs : NULL, c->quick))) return st;
    if (wf_only) { c->z.wf_seeds = 3; c->z.wf_control = 1; } /* the learning check: seeds 1-3 and the control */
    c->out = out;
    snprintf(c->log, sizeof c->log, "%s/demo.log", out);
    c->logf = fopen(c->log, "a");
    if (!c->logf) return jr_fail(JR_EIO, "%s: %s", c->log, strerror(errno));
    setvbuf(c->logf, NULL, _IOLBF, 0);
    json_object_set_new(c->sum, "run_dir", json_string(out));
    return run_stages(c, seed1_only, wf_only, study_only);
}

int eb_main(const char *cmd, int argc, char **argv, const char *judgerl) {
    const char *usage = "[--out DIR] [--quick] [--seed1-only] [--workflow-only] [--study-only] [--config FILE]";
    const char *out_arg = "runs/demo", *config = NULL;
    int quick = 0, seed1_only = 0, wf_only = 0, study_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--workflow-only")) wf_only = 1;
        else if (!strcmp(argv[i], "--seed1-only")) seed1_only = 1;
        else if (!strcmp(argv[i], "--study-only")) study_only = 1;
        else if (!strcmp(argv[i], "--out") && i + 1 < argc) out_arg = argv[++i];
        else if (!strncmp(argv[i], "--out=", 6)) out_arg = argv[i] + 6;
        else if (!strcmp(argv[i], "--config") && i + 1 < argc) config = argv[++i];
        else if (!strncmp(argv[i], "--config=", 9)) config = argv[i] + 9;
        else { fprintf(stderr, "%s: unexpected argument '%s'; usage: %s %s\n", cmd, argv[i], cmd, usage); return 2; }
    }
    if (!*out_arg) { fprintf(stderr, "%s: --out needs a directory\n", cmd); return 2; }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    double t0 = jr_wall_time();
    eb_ctx c = {.judgerl = judgerl, .quick = quick, .stop = &stop_requested};
    c.sum = json_object();
    c.stages = json_array();
    json_object_set_new(c.sum, "version", json_integer(1));
    json_object_set_new(c.sum, "run_dir", json_string(out_arg)); /* made absolute once the directory exists */
    json_object_set_new(c.sum, "quick", json_boolean(quick));
    json_object_set_new(c.sum, "stages", c.stages);
    char out[PATH_MAX], config_abs[PATH_MAX];
    jr_status st = run(&c, out_arg, config, seed1_only, wf_only, study_only, out, config_abs);
    eb_stop_child(&c.wf_exec_pid); /* a stage failed before the workflow stage waited for it */
    if (c.out) {
        json_object_set_new(c.sum, "total_seconds", json_real(jr_wall_time() - t0));
        jr_status st2 = write_summary(c.out, c.sum);
        if (!st) st = st2;
    }
    if (!st) {
        json_t *loaded;
        st = jr_report_write(c.out, &loaded);
        if (!st) json_decref(loaded);
    }
    if (!st) jr_report_text(stdout, c.sum);
    if (st) fprintf(stderr, "%s: %s\n", cmd, jr_errmsg());
    if (c.logf) fclose(c.logf);
    json_decref(c.answers);
    json_decref(c.before);
    json_decref(c.sum);
    return st ? 1 : 0;
}
