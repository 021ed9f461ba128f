/* test_reward.c - the reward registry: seed 2's shipped recipe on hand-computed rows, unscored and
 * optional components, config errors, custom reward functions, result JSON */
#include "harness.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "judgerl/protocols.h"
#include "judgerl/reward.h"
#include "judgerl/wfrl.h"

static const jr_cfg_field *const tables[] = {jr_judge_cfg, jr_protocols_cfg, jr_reward_cfg, NULL};

/* A loopback port that accepts connections into its backlog and never answers, while the socket is open:
 * every judge request times out (a transient failure). */
static int silent_port(int *fd) {
    *fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (*fd < 0 || bind(*fd, (struct sockaddr *)&a, sizeof a) || getsockname(*fd, (struct sockaddr *)&a, &len) || listen(*fd, 1))
        return -1;
    return ntohs(a.sin_port);
}

static int load_seed2(jr_config *cfg, int port, const char *extra) {
    if (jr_wf_reward_register()) return 0;
    char path[1024], url[128];
    snprintf(path, sizeof path, "%s/configs/seed2_reward.yaml", jt_root());
    snprintf(url, sizeof url, "judge.endpoints.0.url=http://127.0.0.1:%d/v1", port);
    char *over[] = {url, "judge.cache=false", "judge.max_attempts=1", "judge.parse_attempts=1", "judge.timeout_s=0.3",
                    "judge.connect_timeout_s=0.3", (char *)extra};
    return jr_config_load(cfg, path, extra ? 7 : 6, over, tables) == JR_OK;
}

static json_t *row(const char *json) {
    json_t *r = json_loads(json, 0, NULL);
    if (!r) printf("  bad test row: %s\n", json);
    return r;
}

TEST(seed2_recipe_hand_computed) {
    int fd, port = silent_port(&fd);
    if (port < 0) SKIP("cannot bind a loopback socket");
    jr_config cfg;
    if (!load_seed2(&cfg, port, NULL)) { CHECK_OK(JR_EINVAL); close(fd); return; }
    jr_reward *r;
    CHECK_OK(jr_reward_open(&r, &cfg));
    if (!r) { jr_config_free(&cfg); close(fd); return; }
    CHECK(jr_reward_n_parts(r) == 5);
    CHECK_STR(jr_reward_part_name(r, 0), "correctness");
    CHECK_NEAR(jr_reward_part_weight(r, 0), 0.65, 0, 0);
    json_t *rows[5] = {
        /* every component but correctness x10 (scale: 10); no workflow: repetition (optional) left out:
         * 0.65*10 + 0.15*10*(.5*(1-.5) + .5*(1-.5)) + 0.10*10*(8-3)/7 + 0.05*10*1 */
        row("{\"id\": \"r1\", \"problem\": \"1/2?\", \"response\": \"We divide one by two: \\\\boxed{\\\\frac{1}{2}}\","
            " \"answer\": \"0.5\", \"type\": \"math\", \"cost\": 0.005, \"latency\": 30, \"operator_count\": 3}"),
        /* 0.65*10 + 0.15*10*(.5*0 + .5*(1-6/60)) + 0.10*0 + 0.05*10*1 */
        row("{\"id\": \"r2\", \"problem\": \"Capital?\", \"response\": \"The answer is Paris\", \"answer\": \"paris\","
            " \"type\": \"qa\", \"cost\": 0.02, \"latency\": 6, \"operator_count\": 8}"),
        /* latency only: eff = 1 - 20/60; two operators (a list); the workflow "so so so so so \boxed{4}":
         * 2 distinct trigrams of 4 -> repetition -0.5 x 10 */
        row("{\"id\": \"r3\", \"problem\": \"2+2\", \"response\": \"so so so so so \\\\boxed{4}\", \"answer\": 4,"
            " \"type\": \"math\", \"latency\": 20, \"operator_count\": [\"custom\", \"review\"],"
            " \"workflow\": \"so so so so so \\\\boxed{4}\"}"),
        /* a wrong answer needs the judge, which never answers: unscored, never 0 */
        row("{\"id\": \"r4\", \"problem\": \"2+2\", \"response\": \"\\\\boxed{5}\", \"answer\": \"4\", \"type\": \"math\","
            " \"cost\": 0.001, \"latency\": 1, \"operator_count\": 1}"),
        /* no cost and no latency: efficiency unscored -> the row is unscored */
        row("{\"id\": \"r5\", \"problem\": \"1+1\", \"response\": \"\\\\boxed{2}\", \"answer\": \"2\", \"type\": \"math\","
            " \"operator_count\": 1}"),
    };
    jr_reward_result res[5];
    CHECK_OK(jr_reward_score(r, (const json_t *const *)rows, 5, res));
    CHECK(res[0].scored);
    CHECK_NEAR(res[0].reward, 0.65 * 10 + 0.15 * 5 + 0.10 * 50.0 / 7 + 0.5, 1e-12, 0);
    CHECK(res[0].judge_calls == 0);
    CHECK(res[1].scored);
    CHECK_NEAR(res[1].reward, 0.65 * 10 + 0.15 * 4.5 + 0.5, 1e-12, 0);
    CHECK(res[2].scored);
    CHECK_NEAR(res[2].reward, 0.65 * 10 + 0.15 * (20.0 / 3) + 0.10 * 60.0 / 7 + 0.5 - 0.05 * 5, 1e-12, 0);
    CHECK_NEAR(res[2].parts[4].value, -5, 1e-12, 0);
    CHECK(!res[3].scored && isnan(res[3].reward));
    CHECK(res[3].reason && strstr(res[3].reason, "component 'correctness'"));
    CHECK(!res[3].parts[0].scored && res[3].parts[1].scored); /* the others are still reported */
    CHECK(!res[4].scored && res[4].reason && strstr(res[4].reason, "component 'efficiency'"));
    CHECK(res[4].parts[0].scored && res[4].parts[0].value == 10);
    /* The JSON view. */
    json_t *j = jr_reward_result_json(r, &res[0]);
    CHECK(j && json_is_true(json_object_get(j, "scored")));
    json_t *c = json_object_get(json_object_get(j, "components"), "simplicity");
    CHECK_NEAR(json_number_value(json_object_get(c, "value")), 50.0 / 7, 1e-12, 0);
    CHECK_NEAR(json_number_value(json_object_get(c, "weight")), 0.10, 0, 0);
    json_decref(j);
    j = jr_reward_result_json(r, &res[3]);
    CHECK(j && json_is_null(json_object_get(j, "reward")) && json_is_string(json_object_get(j, "reason")));
    json_decref(j);
    for (int i = 0; i < 5; i++) jr_reward_result_free(&res[i]);
    jr_reward_close(r);
    jr_config_free(&cfg);
    /* Efficiency made optional: r5 is scored without it. */
    if (load_seed2(&cfg, port, "reward.components.1.optional=true")) {
        CHECK_OK(jr_reward_open(&r, &cfg));
        if (r) {
            CHECK_OK(jr_reward_score(r, (const json_t *const *)&rows[4], 1, res));
            CHECK(res[0].scored);
            CHECK_NEAR(res[0].reward, 0.65 * 10 + 0.10 * 10 + 0.5, 1e-12, 0);
            CHECK(!res[0].parts[1].scored);
            jr_reward_result_free(&res[0]);
            jr_reward_close(r);
        }
        jr_config_free(&cfg);
    }
    for (int i = 0; i < 5; i++) json_decref(rows[i]);
    close(fd);
}

static jr_status open_yaml(const char *yaml, jr_reward **r, jr_config *cfg) {
    *r = NULL;
    jr_status st = jr_config_load_string(cfg, yaml, "t.yaml", 0, NULL, tables);
    if (st) return st;
    st = jr_reward_open(r, cfg);
    if (st) jr_config_free(cfg);
    return st;
}

static void expect_open_error(const char *yaml, const char *needle) {
    jr_reward *r;
    jr_config cfg;
    jr_status st = open_yaml(yaml, &r, &cfg);
    CHECK_MSG(st != JR_OK, "expected an error with '%s'", needle);
    CHECK_MSG(strstr(jr_errmsg(), needle) != NULL, "message '%s' lacks '%s'", jr_errmsg(), needle);
    if (!st) { jr_reward_close(r); jr_config_free(&cfg); }
}

TEST(config_errors) {
    expect_open_error("reward: {components: []}\n", "reward.components is empty");
    expect_open_error("reward: {components: [{fn: bogus}]}\n", "reward.components.0.fn: unknown reward function 'bogus'");
    expect_open_error("reward: {components: [{fn: exact}, {fn: exact}]}\n", "'exact' is used twice");
    expect_open_error("reward: {components: [{fn: format, params: {pattern: '(('}}]}\n", "reward.components.0 (format) params");
    expect_open_error("reward: {components: [{fn: length, params: {unit: lines}}]}\n", "unit 'lines'");
    expect_open_error("reward: {components: [{fn: repetition, params: {n: 2.5}}]}\n", "n=2.5");
    expect_open_error("reward: {components: [{fn: efficiency, params: {cost_wieght: 1}}]}\n", "unknown key 'cost_wieght'");
    expect_open_error("reward: {components: [{fn: rule, params: {rule: nope}}]}\n", "unknown rule 'nope'");
    /* A judge component without endpoints: the judge client's own message. */
    jr_reward *r;
    jr_config cfg;
    jr_status st = open_yaml("reward: {components: [{fn: reference}]}\n", &r, &cfg);
    CHECK(st != JR_OK);
    CHECK(strlen(jr_errmsg()) > 0);
    if (!st) { jr_reward_close(r); jr_config_free(&cfg); }
}

/* reward.components[].gate: the gated component adds its value only in rows where the gate is scored and > 0. */
TEST(gated_component_counts_only_when_its_gate_is_positive) {
    jr_reward *r;
    jr_config cfg;
    CHECK_OK(open_yaml("reward:\n  components:\n"
                       "    - {name: ok, fn: exact, weight: 2}\n"
                       "    - {name: fmt, fn: format, weight: 0.5, gate: ok, params: {pattern: '^[0-9]+$'}}\n",
                       &r, &cfg));
    if (!r) return;
    json_t *rows[2] = {row("{\"response\": \"4\", \"answer\": \"4\"}"), row("{\"response\": \"5\", \"answer\": \"4\"}")};
    jr_reward_result res[2];
    CHECK_OK(jr_reward_score(r, (const json_t *const *)rows, 2, res));
    CHECK(res[0].scored && res[1].scored);
    CHECK_NEAR(res[0].reward, 2 * 1 + 0.5 * 1, 1e-12, 0);
    /* wrong: the format part is still scored and reported (1), but adds nothing */
    CHECK_NEAR(res[1].reward, 0, 1e-12, 0);
    CHECK(res[1].parts[1].scored && res[1].parts[1].value == 1);
    for (int i = 0; i < 2; i++) { jr_reward_result_free(&res[i]); json_decref(rows[i]); }
    jr_reward_close(r);
    jr_config_free(&cfg);
    expect_open_error("reward: {components: [{fn: exact}, {fn: length, gate: nope}]}\n", "no other component is named 'nope'");
    expect_open_error("reward: {components: [{fn: exact, gate: exact}]}\n", "no other component is named 'exact'");
    expect_open_error("reward: {components: [{fn: exact, gate: length}, {fn: length, gate: exact}]}\n", "is gated itself");
}

static jr_rw_rc eval_chars(const jr_reward_opts *ro, const json_t *params, const json_t *row, jr_rw_out *out) {
    const char *s = json_string_value(json_object_get(row, "response"));
    if (!s) {
        out->reason = strdup("no response");
        return JR_RW_UNSCORED;
    }
    out->value = (double)strlen(s);
    return JR_RW_SCORED;
}

static const jr_reward_fn chars_fn = {"chars", NULL, "length in bytes", NULL, eval_chars};

TEST(custom_function_and_rules_without_judge) {
    CHECK_OK(jr_reward_fn_register(&chars_fn));
    CHECK(jr_reward_fn_register(&chars_fn) == JR_EINVAL);
    jr_reward *r;
    jr_config cfg;
    CHECK_OK(open_yaml("reward:\n  components:\n"
                       "    - {fn: chars, weight: 0.5}\n"
                       "    - {name: ok, fn: math_verify, weight: 2}\n"
                       "    - {name: fmt, fn: format, weight: 1, optional: true, params: {by_domain: {math: 'boxed'}}}\n"
                       "    - {name: ifev, fn: ifeval, weight: 1, params: {reduce: pass_rate}}\n",
                       &r, &cfg));
    if (!r) return;
    CHECK(jr_reward_judge(r) == NULL);
    json_t *rows[2] = {
        row("{\"response\": \"is \\\\boxed{3}\", \"answer\": \"3\", \"domain\": \"math\", \"instruction_id_list\": "
            "[\"punctuation:no_comma\", \"keywords:existence\"], \"kwargs\": [{}, {\"keywords\": [\"boxed\"]}]}"),
        /* no pattern for qa: the optional fmt is left out; no instruction ids: ifeval unscored */
        row("{\"response\": \"3\", \"answer\": \"4\", \"domain\": \"qa\"}"),
    };
    jr_reward_result res[2];
    CHECK_OK(jr_reward_score(r, (const json_t *const *)rows, 2, res));
    /* 0.5 * strlen("is \boxed{3}") + 2*1 + 1*1 + 1*(2/2) */
    CHECK(res[0].scored);
    CHECK_NEAR(res[0].reward, 0.5 * 12 + 2 + 1 + 1, 1e-12, 0);
    CHECK(!res[1].scored);
    CHECK(res[1].reason && strstr(res[1].reason, "component 'ifev'"));
    CHECK(!res[1].parts[2].scored && strstr(res[1].parts[2].reason, "domain 'qa'"));
    CHECK(res[1].parts[1].scored && res[1].parts[1].value == 0);
    for (int i = 0; i < 2; i++) { jr_reward_result_free(&res[i]); json_decref(rows[i]); }
    jr_reward_close(r);
    jr_config_free(&cfg);
}

/* jr_reward_shared_score from 8 threads at once (rows repeated across threads, so identical rows
 * are in flight together) gives each caller exactly what jr_reward_score gives. */
enum { N_THREADS = 8, N_ROWS = 40 };
struct shared_job { jr_reward *r; json_t **rows; jr_reward_result res[N_ROWS]; jr_status st; };

static void *shared_worker(void *arg) {
    struct shared_job *j = arg;
    j->st = jr_reward_shared_score(j->r, (const json_t *const *)j->rows, N_ROWS, j->res);
    return NULL;
}

TEST(shared_scoring_from_threads_matches_serial) {
    const char *yaml = "reward:\n  components:\n"
                       "    - {name: ok, fn: exact, weight: 2}\n"
                       "    - {name: len, fn: length, weight: 1, params: {min: 1, max: 2, unit: chars}}\n";
    jr_reward *serial, *shared;
    jr_config c1, c2;
    CHECK_OK(open_yaml(yaml, &serial, &c1));
    CHECK_OK(open_yaml(yaml, &shared, &c2));
    if (!serial || !shared) return;
    json_t *rows[N_ROWS];
    for (int i = 0; i < N_ROWS; i++) {
        char b[200];
        if (i % 10 == 9) snprintf(b, sizeof b, "{\"id\": %d, \"response\": \"r%d\"}", i, i % 7); /* no reference: unscored */
        else snprintf(b, sizeof b, "{\"id\": %d, \"response\": \"%s%d\", \"reference\": \"a%d\"}", i, i % 3 ? "a" : "b", i % 7, i % 7);
        rows[i] = row(b);
    }
    jr_reward_result want[N_ROWS];
    CHECK_OK(jr_reward_score(serial, (const json_t *const *)rows, N_ROWS, want));
    CHECK(jr_reward_shared_score(shared, (const json_t *const *)rows, 1, want) == JR_EINVAL); /* not started: refused */
    CHECK_OK(jr_reward_shared_start(shared));
    static struct shared_job jobs[N_THREADS];
    pthread_t th[N_THREADS];
    for (int t = 0; t < N_THREADS; t++) {
        jobs[t].r = shared;
        jobs[t].rows = rows;
        pthread_create(&th[t], NULL, shared_worker, &jobs[t]);
    }
    for (int t = 0; t < N_THREADS; t++) pthread_join(th[t], NULL);
    int n_unscored = 0;
    for (int t = 0; t < N_THREADS; t++) {
        CHECK_OK(jobs[t].st);
        for (int i = 0; i < N_ROWS; i++) {
            jr_reward_result *g = &jobs[t].res[i], *w = &want[i];
            CHECK_MSG(g->scored == w->scored, "thread %d row %d", t, i);
            if (w->scored) CHECK_NEAR(g->reward, w->reward, 0, 0);
            else { CHECK_STR(g->reason, w->reason); n_unscored += t == 0; }
            CHECK(g->n_parts == 2 && g->parts[1].scored == w->parts[1].scored);
            jr_reward_result_free(g);
        }
    }
    CHECK(n_unscored == N_ROWS / 10);
    for (int i = 0; i < N_ROWS; i++) { jr_reward_result_free(&want[i]); json_decref(rows[i]); }
    jr_reward_close(serial);
    jr_reward_close(shared);
    jr_config_free(&c1);
    jr_config_free(&c2);
}

int main(void) {
    RUN(seed2_recipe_hand_computed);
    RUN(config_errors);
    RUN(custom_function_and_rules_without_judge);
    RUN(gated_component_counts_only_when_its_gate_is_positive);
    RUN(shared_scoring_from_threads_matches_serial);
    return jt_done();
}
