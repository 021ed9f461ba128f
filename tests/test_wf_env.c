/* test_wf_env.c - the workflow environment end to end against a scripted loopback executor + judge
 * (tests/wf_script_server.py), through the trainer's batch API: a right answer reaches the buffer
 * threshold with the shipped seed-2 reward, a wrong one is judged -5, a judge failure stays UNSCORED,
 * an unparseable / failing workflow gets its documented penalty, code is graded by hidden tests */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "harness.h"
#include "judgerl/fsutil.h"
#include "judgerl/judge.h"
#include "judgerl/protocols.h"
#include "judgerl/wfrl.h"

static pid_t srv_pid;
static int srv_port;

static int server_start(void) {
    char script[1024];
    snprintf(script, sizeof script, "%s/tests/wf_script_server.py", jt_root());
    int fds[2];
    if (pipe(fds)) return -1;
    srv_pid = fork();
    if (srv_pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl("/usr/bin/python3", "python3", script, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    if (!f || fscanf(f, "port %d", &srv_port) != 1) srv_port = 0;
    if (f) fclose(f);
    return srv_port ? 0 : -1;
}

static void server_stop(void) {
    if (srv_pid > 0) { kill(srv_pid, SIGTERM); waitpid(srv_pid, NULL, 0); }
    srv_pid = 0;
}

typedef struct {
    jr_config ecfg, rcfg, wcfg;
    jr_workflow_opts wo;
    jr_judge_opts jo;
    jr_wf_executor *ex;
    jr_reward *rw;
    jr_wf_env_opts eo;
    jr_env env;
} fixture;

static int fixture_open(fixture *fx) {
    memset(fx, 0, sizeof *fx);
    char url[128], tmpl[1024], yaml[2048];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", srv_port);
    snprintf(tmpl, sizeof tmpl, "%s/templates/workflow", jt_root());
    snprintf(yaml, sizeof yaml,
             "judge:\n  endpoints:\n    - {url: \"%s\", model: executor}\n  cache: false\n  max_attempts: 2\n"
             "  backoff_base_s: 0.01\n  backoff_max_s: 0.02\nworkflow:\n  templates: \"%s\"\n", url, tmpl);
    const jr_cfg_field *et[] = {jr_judge_cfg, jr_workflow_cfg, jr_sandbox_cfg, NULL};
    if (jr_config_load_string(&fx->ecfg, yaml, "executor.yaml", 0, NULL, et)) { printf("  %s\n", jr_errmsg()); return -1; }
    jr_workflow_opts_from_config(&fx->wo, &fx->ecfg);
    if (jr_judge_opts_from_config(&fx->jo, &fx->ecfg) || jr_wf_executor_open(&fx->ex, &fx->jo, NULL, &fx->wo)) {
        printf("  executor: %s\n", jr_errmsg());
        return -1;
    }
    char path[1024], over_url[160];
    snprintf(path, sizeof path, "%s/configs/seed2_reward.yaml", jt_root());
    snprintf(over_url, sizeof over_url, "judge.endpoints.0.url=%s", url);
    char *over[] = {over_url, "judge.cache=false", "judge.max_attempts=2", "judge.backoff_base_s=0.01",
                    "judge.backoff_max_s=0.02", "judge.parse_attempts=1"};
    const jr_cfg_field *rt[] = {jr_judge_cfg, jr_protocols_cfg, jr_reward_cfg, jr_sandbox_cfg, NULL};
    if (jr_wf_reward_register() || jr_config_load(&fx->rcfg, path, 6, over, rt) || jr_reward_open(&fx->rw, &fx->rcfg)) {
        printf("  reward: %s\n", jr_errmsg());
        return -1;
    }
    const jr_cfg_field *wt[] = {jr_wf_env_cfg, jr_wf_buffer_cfg, NULL};
    if (jr_config_load_string(&fx->wcfg, "{}\n", "wf.yaml", 0, NULL, wt)) { printf("  %s\n", jr_errmsg()); return -1; }
    jr_wf_env_opts_from_config(&fx->eo, &fx->wcfg);
    if (jr_env_from_workflow(&fx->env, fx->ex, fx->rw, &fx->wo, &fx->eo)) { printf("  env: %s\n", jr_errmsg()); return -1; }
    return 0;
}

static void fixture_close(fixture *fx) {
    jr_env_close(&fx->env);
    jr_reward_close(fx->rw);
    jr_wf_executor_close(fx->ex);
    jr_config_free(&fx->ecfg);
    jr_config_free(&fx->rcfg);
    jr_config_free(&fx->wcfg);
}

/* Scores n (row, workflow) samples through the trainer's batch. */
static int score(fixture *fx, const char *const *rws, const char *const *wfl, int n, jr_env_result *out) {
    jr_env_batch *b;
    jr_env_batch_opts o = {.max_in_flight = 0};
    if (jr_env_batch_open(&b, &fx->env, (size_t)n, out, &o)) return -1;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        json_t *r = json_loads(rws[i], 0, NULL);
        if (!r || jr_env_batch_submit(b, (size_t)i, r, wfl[i], strlen(wfl[i]))) bad = 1;
        json_decref(r);
    }
    if (jr_env_batch_finish(b)) { printf("  finish: %s\n", jr_errmsg()); bad = 1; }
    return bad ? -1 : 0;
}

typedef struct {
    double code_gold_errors, overall_gold_errors;
    double qa_op_ensemble, qa_op_answer, qa_ret_answer, qa_ret_ensemble, math_ret_answer, code_ret_codegen, ret_sum[4];
} stat_seen;
static void stat_put(void *ud, const char *key, double v) {
    stat_seen *s = ud;
    static const char *const doms[4] = {"math", "code", "qa", "overall"};
    if (!strcmp(key, "train/code/gold_errors")) s->code_gold_errors = v;
    if (!strcmp(key, "train/overall/gold_errors")) s->overall_gold_errors = v;
    if (!strcmp(key, "train/qa/op/ensemble")) s->qa_op_ensemble = v;
    if (!strcmp(key, "train/qa/op/answer")) s->qa_op_answer = v;
    if (!strcmp(key, "train/qa/ret/answer")) s->qa_ret_answer = v;
    if (!strcmp(key, "train/qa/ret/ensemble")) s->qa_ret_ensemble = v;
    if (!strcmp(key, "train/math/ret/answer")) s->math_ret_answer = v;
    if (!strcmp(key, "train/code/ret/codegen")) s->code_ret_codegen = v;
    for (int d = 0; d < 4; d++) {
        char pre[32];
        int n = snprintf(pre, sizeof pre, "train/%s/ret/", doms[d]);
        if (!strncmp(key, pre, (size_t)n)) s->ret_sum[d] += v;
    }
}

static const char *const rows[] = {
    "{\"id\": \"m1\", \"problem\": \"What is 6*7? say=42\", \"answer\": \"42\", \"type\": \"math\"}",
    "{\"id\": \"q1\", \"problem\": \"Who runs Zorb? say=Bob\", \"answer\": \"Alice\", \"type\": \"qa\"}",
    "{\"id\": \"q2\", \"problem\": \"Who runs Zorb? say=Bob judgefail\", \"answer\": \"Alice\", \"type\": \"qa\"}",
    "{\"id\": \"m2\", \"problem\": \"What is 6*7? say=42\", \"answer\": \"42\", \"type\": \"math\"}",
    "{\"id\": \"m3\", \"problem\": \"What is 6*7? execfail\", \"answer\": \"42\", \"type\": \"math\"}",
    "{\"id\": \"c1\", \"problem\": \"def add(a, b):\\n    \\\"\\\"\\\"Sum. CODE-ADD\\\"\\\"\\\"\\n\", \"type\": \"code\","
    " \"entry_point\": \"add\", \"public_tests\": [\"assert add(1, 2) == 3\"], \"hidden_tests\": \"assert add(2, 2) == 4\\nassert add(0, 5) == 5\"}",
    "{\"id\": \"c2\", \"problem\": \"def add(a, b):\\n    \\\"\\\"\\\"Sum. CODE-SUB\\\"\\\"\\\"\\n\", \"type\": \"code\","
    " \"entry_point\": \"add\", \"public_tests\": [\"assert add(1, 2) == 3\"], \"hidden_tests\": \"assert add(2, 2) == 4\\nassert add(0, 5) == 5\"}",
    "{\"id\": \"q3\", \"problem\": \"Who runs Zorb? say=Bob judge-correct\", \"answer\": \"Robert\", \"type\": \"qa\"}",
    "{\"id\": \"c3\", \"problem\": \"def add(a, b):\\n    \\\"\\\"\\\"Sum. CODE-ADD\\\"\\\"\\\"\\n\", \"type\": \"code\","
    " \"entry_point\": \"add\"}",
    "{\"id\": \"m4\", \"problem\": \"What is 6*7? say=42\", \"answer\": 42, \"type\": \"math\"}",
};
static const char *const wfs[] = {
    "a = answer(problem)\nreturn a\n",
    "a = answer(problem)\nreturn a\n",
    "a = answer(problem)\nreturn a\n",
    "a = progam(problem)\nreturn a\n",
    "a = answer(problem)\nreturn a\n",
    "c = codegen(problem)\nreturn c\n",
    "c = codegen(problem)\nreturn c\n",
    "xs = answer(problem) x3\nb = ensemble(xs)\nreturn b\n",
    "c = codegen(problem)\nreturn c\n",
    "a = answer(problem)\nreturn a\n",
};

static const char *dstr(const jr_env_result *r, const char *k) { return json_string_value(json_object_get(r->detail, k)); }

TEST(workflow_environment) {
    if (server_start()) { server_stop(); SKIP("cannot start tests/wf_script_server.py"); }
    fixture fx;
    if (fixture_open(&fx)) { fixture_close(&fx); server_stop(); CHECK(0); return; }
    CHECK(fx.env.n_parts == 5);
    CHECK_STR(fx.env.part_names[0], "correctness");
    CHECK_NEAR(fx.env.part_weights[0], 0.65, 0, 0);
    enum { N = 10 };
    jr_env_result res[N];
    CHECK_OK(score(&fx, rows, wfs, N, res));
    jr_wf_buffer_opts bo;
    jr_wf_buffer_opts_from_config(&bo, &fx.wcfg);
    CHECK_NEAR(bo.threshold, 8.0, 0, 0);
    /* a right one-operator answer: correctness 10 (normalised match, no judge call), simplicity 10,
     * format 10, no repetition, efficiency from 120 tokens at the default price and the wall time:
     * above the buffer threshold with the shipped defaults (the seed's best, 7.6, never was) */
    CHECK(res[0].scored);
    CHECK_NEAR(res[0].parts[0], 10, 0, 0);
    CHECK_NEAR(res[0].parts[2], 10, 0, 0);
    CHECK_NEAR(res[0].parts[3], 10, 0, 0);
    CHECK_NEAR(res[0].parts[4], 0, 0, 0);
    double eff = 10 * (0.5 * (1 - 0.120 * 0.002 / 0.01) + 0.5 * (1 - res[0].cost.seconds / 60));
    CHECK_NEAR(res[0].parts[1], eff, 0.05, 0);
    CHECK(res[0].parts[1] > 9); /* a priced local executor is not scored 0 */
    CHECK(res[0].reward >= bo.threshold);
    CHECK_NEAR(res[0].reward, 0.65 * 10 + 0.15 * res[0].parts[1] + 0.10 * 10 + 0.05 * 10, 1e-9, 0);
    CHECK(res[0].cost.tokens == 120 && res[0].cost.model_calls == 1);
    CHECK(json_is_true(json_object_get(res[0].detail, "gold_correct")));
    CHECK(json_object_get(res[0].detail, "trace") != NULL);
    CHECK_STR(dstr(&res[0], "outcome"), "answer");
    /* a wrong answer: the judge says INCORRECT -> -5, gold (verifier) wrong */
    CHECK(res[1].scored);
    CHECK_NEAR(res[1].parts[0], -5, 0, 0);
    CHECK(res[1].reward < 0);
    CHECK(json_is_false(json_object_get(res[1].detail, "gold_correct")));
    CHECK(res[1].cost.model_calls == 2); /* the executor call and the judge call */
    /* the judge fails: UNSCORED, never a score */
    CHECK(!res[2].scored && isnan(res[2].reward));
    CHECK(res[2].reason && strstr(res[2].reason, "correctness"));
    /* does not parse: the invalid penalty, the parser's message in the detail */
    CHECK(res[3].scored);
    CHECK_NEAR(res[3].reward, fx.eo.invalid_reward, 0, 0);
    CHECK(json_is_false(json_object_get(res[3].detail, "valid")));
    CHECK(dstr(&res[3], "reason") && strstr(dstr(&res[3], "reason"), "unknown operator 'progam'"));
    CHECK(res[3].cost.model_calls == 0);
    /* parses, the executor fails: the failed penalty (above the invalid one), never an answer */
    CHECK(res[4].scored);
    CHECK_NEAR(res[4].reward, fx.eo.failed_reward, 0, 0);
    CHECK(fx.eo.failed_reward > fx.eo.invalid_reward);
    CHECK_STR(dstr(&res[4], "outcome"), "failed");
    CHECK(json_object_get(res[4].detail, "answer") == NULL);
    /* the worst executed answer (-5 correctness, 0 elsewhere, full repetition) still beats both penalties */
    CHECK(0.65 * -5 + 0.05 * -10 > fx.eo.failed_reward);
    /* code: the hidden tests in the sandbox, no judge */
    CHECK(res[5].scored);
    CHECK_NEAR(res[5].parts[0], 10, 0, 0);
    CHECK(json_is_true(json_object_get(res[5].detail, "gold_correct")));
    CHECK(res[6].scored);
    CHECK_NEAR(res[6].parts[0], -5, 0, 0);
    CHECK(res[6].cost.model_calls == 1);
    CHECK(json_is_false(json_object_get(res[6].detail, "gold_correct")));
    /* the judge's word is the training reward; gold accuracy is the verifier's and disagrees here */
    CHECK(res[7].scored);
    CHECK_NEAR(res[7].parts[0], 10, 0, 0);
    CHECK(json_is_false(json_object_get(res[7].detail, "gold_correct")));
    CHECK(json_integer_value(json_object_get(res[7].detail, "n_operators")) == 2);
    CHECK_NEAR(res[7].parts[2], 10 * (8 - 2) / 7.0, 1e-9, 0);
    /* an answer the verifier cannot grade (a code row without hidden_tests): said, never a silent "wrong" */
    CHECK_STR(dstr(&res[8], "outcome"), "answer");
    CHECK(json_object_get(res[8].detail, "gold_correct") == NULL);
    CHECK(dstr(&res[8], "gold_error") && strstr(dstr(&res[8], "gold_error"), "hidden_tests"));
    /* a numeric reference: the reward and the gold grade read it alike (right on both counts) */
    CHECK(res[9].scored);
    CHECK_NEAR(res[9].parts[0], 10, 0, 0);
    CHECK(json_is_true(json_object_get(res[9].detail, "gold_correct")));
    stat_seen st = {0};
    double acc = jr_wf_env_stats_flush(&fx.env, 0, "train/", stat_put, &st);
    CHECK_NEAR(st.code_gold_errors, 1 / 3.0, 1e-12, 0); /* c1, c2, c3 */
    CHECK(st.overall_gold_errors > 0 && acc >= 0);
    /* operators used and returned (shares of the valid workflows): QA's `answer x3` + `ensemble` uses both and
     * returns answer's output; every valid workflow returns exactly one operator (or a mix) */
    CHECK_NEAR(st.qa_op_ensemble, 1 / 3.0, 1e-12, 0);
    CHECK_NEAR(st.qa_op_answer, 1, 1e-12, 0);
    CHECK_NEAR(st.qa_ret_answer, 1, 1e-12, 0);
    CHECK_NEAR(st.qa_ret_ensemble, 0, 0, 0);
    CHECK_NEAR(st.math_ret_answer, 1, 1e-12, 0); /* m1, m3, m4 (m2 does not parse) */
    CHECK_NEAR(st.code_ret_codegen, 1, 1e-12, 0);
    for (int d = 0; d < 4; d++) CHECK_NEAR(st.ret_sum[d], 1, 1e-12, 0);
    CHECK_STR(dstr(&res[7], "returned"), "answer");
    for (int i = 0; i < N; i++) jr_env_result_free(&res[i]);
    fixture_close(&fx);
    server_stop();
}

/* The buffer's entries (problem, workflow, reward) into e[], at most cap; returns the count, -1 on error. */
typedef struct { char problem[128], workflow[128]; double reward; } buf_entry;
static int buffer_entries(const char *path, buf_entry *e, int cap) {
    sqlite3 *db;
    sqlite3_stmt *q;
    if (sqlite3_open(path, &db) != SQLITE_OK) { sqlite3_close(db); return -1; }
    int n = 0;
    if (sqlite3_prepare_v2(db, "select problem, workflow, reward from entries", -1, &q, NULL) != SQLITE_OK) n = -1;
    while (n >= 0 && n < cap && sqlite3_step(q) == SQLITE_ROW) {
        snprintf(e[n].problem, sizeof e[n].problem, "%s", (const char *)sqlite3_column_text(q, 0));
        snprintf(e[n].workflow, sizeof e[n].workflow, "%s", (const char *)sqlite3_column_text(q, 1));
        e[n++].reward = sqlite3_column_double(q, 2);
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    return n;
}

/* jr_wf_env_shuffle_buffer (the shuffled-reward control): the buffer gets the scored samples with one another's
 * rewards, so it keeps wrong workflows too; without it every entry is a sample whose own reward reached the
 * threshold, with that reward. */
TEST(control_buffer_gets_shuffled_rewards) {
    if (server_start()) { server_stop(); SKIP("cannot start tests/wf_script_server.py"); }
    char *dir = jt_tmpdir("wfbuf");
    int wrong_kept = 0;
    for (int seed = 0; seed <= 8 && dir; seed++) { /* seed 0: no shuffle */
        fixture fx;
        if (fixture_open(&fx)) { fixture_close(&fx); CHECK(0); break; }
        char path[1024];
        snprintf(path, sizeof path, "%s/buffer-%d.sqlite", dir, seed);
        jr_wf_buffer_opts bo;
        jr_wf_buffer_opts_from_config(&bo, &fx.wcfg);
        bo.path = path;
        jr_wf_buffer *b = NULL;
        int64_t step = 1;
        CHECK_OK(jr_wf_buffer_open(&b, &bo));
        jr_wf_env_set_buffer(&fx.env, b, &step);
        if (seed) jr_wf_env_shuffle_buffer(&fx.env, (uint64_t)seed);
        enum { N = 10 };
        jr_env_result res[N];
        CHECK_OK(score(&fx, rows, wfs, N, res));
        jr_wf_buffer_close(b);
        buf_entry e[32];
        int n = buffer_entries(path, e, 32);
        CHECK(n > 0);
        for (int k = 0; k < n; k++) {
            /* the samples the entry is (m1 and m4 are the same problem and workflow, with their own wall times), the
             * best of their rewards, whether one of them has the entry's reward, whether a scored sample has it */
            int own = -1, own_reward = 0, reward_of_some = 0;
            for (int i = 0; i < N; i++) {
                json_t *r = json_loads(rows[i], 0, NULL);
                int same = !strcmp(json_string_value(json_object_get(r, "problem")), e[k].problem) && !strcmp(wfs[i], e[k].workflow);
                int has = res[i].scored && fabs(res[i].reward - e[k].reward) < 1e-9;
                if (same && (own < 0 || res[i].reward > res[own].reward)) own = i;
                own_reward |= same && has;
                reward_of_some |= has;
                json_decref(r);
            }
            CHECK(own >= 0 && reward_of_some && e[k].reward >= bo.threshold);
            if (!seed) CHECK_MSG(own_reward, "entry %d: reward %g is not its own (best %g)", k, e[k].reward, own >= 0 ? res[own].reward : NAN);
            else wrong_kept |= own >= 0 && res[own].reward < bo.threshold;
        }
        for (int i = 0; i < N; i++) jr_env_result_free(&res[i]);
        fixture_close(&fx);
    }
    CHECK_MSG(wrong_kept, "no shuffled buffer kept a workflow whose own reward is below the threshold");
    free(dir);
    server_stop();
}

/* A held-out sample with a "sample_index" draws from the executor by its problem and that index, wherever its
 * slot in the batch (a fixed workflow and the policy's k-th sample of a row get the same draws); a training
 * sample by its slot. The script server answers "say=seed" with the executor request's seed. */
TEST(heldout_samples_keyed_by_problem_and_index) {
    if (server_start()) { server_stop(); SKIP("cannot start tests/wf_script_server.py"); }
    fixture fx;
    if (fixture_open(&fx)) { fixture_close(&fx); server_stop(); CHECK(0); return; }
    static const char *const kr[] = {
        "{\"problem\": \"Echo. say=seed\", \"answer\": \"1\", \"type\": \"math\", \"split\": \"heldout\", \"sample_index\": 0}",
        "{\"problem\": \"Echo. say=seed\", \"answer\": \"1\", \"type\": \"math\", \"split\": \"heldout\", \"sample_index\": 1}",
        "{\"problem\": \"Echo. say=seed\", \"answer\": \"1\", \"type\": \"math\", \"split\": \"heldout\", \"sample_index\": 0}",
        "{\"problem\": \"Other. say=seed\", \"answer\": \"1\", \"type\": \"math\", \"split\": \"heldout\", \"sample_index\": 0}",
        "{\"problem\": \"Echo. say=seed\", \"answer\": \"1\", \"type\": \"math\", \"sample_index\": 0}",
        "{\"problem\": \"Echo. say=seed\", \"answer\": \"1\", \"type\": \"math\", \"sample_index\": 0}",
    };
    const char *w[6];
    for (int i = 0; i < 6; i++) w[i] = "a = answer(problem)\nreturn a\n";
    jr_env_result res[6];
    CHECK_OK(score(&fx, kr, w, 6, res));
    const char *a[6];
    for (int i = 0; i < 6; i++) {
        a[i] = dstr(&res[i], "answer");
        CHECK_MSG(a[i] && strcmp(a[i], "None") && *a[i], "sample %d: no seed echoed (%s)", i, a[i] ? a[i] : "null");
    }
    if (a[0] && a[1] && a[2] && a[3] && a[4] && a[5]) {
        CHECK_MSG(!strcmp(a[0], a[2]), "the same held-out problem and index in slots 0 and 2: seeds %s and %s", a[0], a[2]);
        CHECK(strcmp(a[0], a[1]) != 0); /* another index */
        CHECK(strcmp(a[0], a[3]) != 0); /* another problem */
        CHECK(strcmp(a[4], a[5]) != 0); /* training samples: by slot */
    }
    for (int i = 0; i < 6; i++) jr_env_result_free(&res[i]);
    fixture_close(&fx);
    server_stop();
}

/* jr_wf_grade runs a code answer's hidden tests once per answer, tests and sandbox options: the environment's
 * gold grading and the reward's correctness both ask, and the second ran the sandbox again, one run after
 * another. The answer appends a byte to a file each time it runs (sandbox.unsafe: the file is outside). */
TEST(grade_code_verdict_remembered) {
    /* under /tmp itself: the sandbox runs as another uid under root, and JR_TMP (mktemp -d) is the runner's 0700 */
    char tmpl[] = "/tmp/jr-wfgrade-XXXXXX", *dir = mkdtemp(tmpl);
    CHECK(dir != NULL);
    if (!dir) return;
    chmod(dir, 0777);
    char count[600], ans[1400], why[256];
    snprintf(count, sizeof count, "%s/runs.txt", dir);
    snprintf(ans, sizeof ans, "def add(a, b):\n    with open('%s', 'a') as f:\n        f.write('x')\n    return a + b\n", count);
    json_t *row = json_pack("{s:s,s:s,s:s}", "type", "code", "entry_point", "add", "hidden_tests", "assert add(1, 2) == 3\n");
    jr_sandbox_opts sb;
    jr_sandbox_opts_default(&sb);
    sb.unsafe = 1;
    int ok = 0;
    struct stat sst;
    CHECK_OK(jr_wf_grade(row, ans, &sb, &ok, why, sizeof why));
    CHECK_MSG(ok, "%s", why);
    ok = 0;
    CHECK_OK(jr_wf_grade(row, ans, &sb, &ok, why, sizeof why));
    CHECK_MSG(ok && strstr(why, "1 of 1 hidden asserts"), "%s", why);
    CHECK(stat(count, &sst) == 0 && sst.st_size == 1); /* the second verdict is the first's */
    sb.timeout_s += 1; /* other sandbox options: another key, run again */
    CHECK_OK(jr_wf_grade(row, ans, &sb, &ok, why, sizeof why));
    CHECK(stat(count, &sst) == 0 && sst.st_size == 2);
    json_decref(row);
    jr_rmtree(dir);
}

int main(void) {
    RUN(grade_code_verdict_remembered);
    RUN(workflow_environment);
    RUN(control_buffer_gets_shuffled_rewards);
    RUN(heldout_samples_keyed_by_problem_and_index);
    return jt_done();
}
