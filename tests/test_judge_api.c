/* test_judge_api.c - the judge library API the trainer calls (submit as samples are generated, collect
 * as scores arrive) against real loopback servers (tests/judge_server.py): overlap, per-endpoint
 * concurrency, least-in-flight routing around a dead endpoint, rpm bucket, extra protocols, stats */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "judgerl/fsutil.h"
#include "judgerl/judge.h"

typedef struct { pid_t pid; int port; char log[512]; } server;

/* Starts tests/judge_server.py with a request log; 0 on success. */
static int server_start(server *s, const char *tag, int latency_ms, const char *dir) {
    snprintf(s->log, sizeof s->log, "%s/%s.log", dir, tag);
    char script[1024], lat[32];
    snprintf(script, sizeof script, "%s/tests/judge_server.py", jt_root());
    snprintf(lat, sizeof lat, "%d", latency_ms);
    int fds[2];
    if (pipe(fds)) return -1;
    s->pid = fork();
    if (s->pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execl("/usr/bin/python3", "python3", script, "--latency-ms", lat, "--log", s->log, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    s->port = 0;
    if (!f || fscanf(f, "port %d", &s->port) != 1) s->port = 0;
    if (f) fclose(f);
    return s->port ? 0 : -1;
}

static void server_stop(server *s) {
    if (s->pid > 0) { kill(s->pid, SIGTERM); waitpid(s->pid, NULL, 0); }
    s->pid = 0;
}

/* Requests the server logged and the most it had in flight at once. */
static int server_log(const server *s, int *max_inflight) {
    char *text = NULL;
    *max_inflight = 0;
    if (jr_read_file(s->log, &text, NULL)) return 0;
    int n = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        json_t *o = json_loads(line, 0, NULL);
        if (o) {
            n++;
            int in = (int)json_integer_value(json_object_get(o, "inflight"));
            if (in > *max_inflight) *max_inflight = in;
            json_decref(o);
        }
    }
    free(text);
    return n;
}

static jr_judge *open_judge(const char *yaml, jr_config *cfg) {
    const jr_cfg_field *tabs[] = {jr_judge_cfg, NULL};
    if (jr_config_load_string(cfg, yaml, "test.yaml", 0, NULL, tabs)) { printf("  config: %s\n", jr_errmsg()); return NULL; }
    jr_judge *j = NULL;
    if (jr_judge_open(&j, cfg)) printf("  open: %s\n", jr_errmsg());
    return j;
}

static json_t *row(int i, const char *extra) {
    char resp[128];
    snprintf(resp, sizeof resp, "answer %d score=%d %s", i, 1 + i % 5, extra);
    return json_pack("{s:i,s:s,s:s}", "id", i, "prompt", "api test", "response", resp);
}

static char *dir;

TEST(submit_while_collecting) {
    server s;
    if (server_start(&s, "overlap", 30, dir)) SKIP("cannot start /usr/bin/python3 tests/judge_server.py");
    char yaml[512];
    snprintf(yaml, sizeof yaml, "judge:\n  endpoints: [{url: 'http://127.0.0.1:%d/v1', model: m}]\n  cache: false\n  concurrency: 3\n", s.port);
    jr_config cfg;
    jr_judge *j = open_judge(yaml, &cfg);
    CHECK(j != NULL);
    if (!j) { server_stop(&s); jr_config_free(&cfg); return; }
    int got[40] = {0}, n_got = 0, early = 0;
    uint64_t tickets[40];
    jr_judge_result r[8];
    for (int i = 0; i < 40; i++) {
        json_t *rw = row(i, "");
        CHECK_OK(jr_judge_submit(j, rw, (void *)(intptr_t)(i + 1), &tickets[i]));
        json_decref(rw);
        /* a trainer keeps generating; here: a short pause per sample, collecting what is ready */
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
        int n = jr_judge_collect(j, r, 8, 0);
        for (int k = 0; k < n; k++) {
            int idx = (int)(intptr_t)r[k].user - 1;
            if (idx >= 0 && idx < 40) got[idx]++;
            CHECK(r[k].status == JR_SCORE_OK && r[k].reward == 1 + idx % 5 && r[k].ticket == tickets[idx]);
            n_got++;
            jr_judge_result_free(&r[k]);
        }
        if (i < 39) early = n_got;
    }
    CHECK_MSG(early > 0, "no score arrived while samples were still being submitted");
    while (jr_judge_pending(j) > 0) {
        int n = jr_judge_collect(j, r, 8, -1);
        for (int k = 0; k < n; k++) {
            int idx = (int)(intptr_t)r[k].user - 1;
            if (idx >= 0 && idx < 40) got[idx]++;
            CHECK(r[k].status == JR_SCORE_OK && r[k].reward == 1 + idx % 5);
            n_got++;
            jr_judge_result_free(&r[k]);
        }
    }
    for (int i = 0; i < 40; i++) CHECK_MSG(got[i] == 1, "sample %d collected %d times", i, got[i]);
    jr_judge_stats st;
    jr_judge_stats_get(j, &st);
    CHECK(st.submitted == 40 && st.done == 40 && st.scored == 40 && st.unscored == 0 && st.requests == 40);
    jr_judge_close(j);
    jr_config_free(&cfg);
    server_stop(&s);
    int maxin, n = server_log(&s, &maxin);
    CHECK_MSG(n == 40 && maxin <= 3 && maxin >= 2, "requests %d, most in flight %d (concurrency 3)", n, maxin);
}

TEST(routing_two_endpoints_and_a_dead_one) {
    server a, b;
    if (server_start(&a, "ep_a", 20, dir)) SKIP("cannot start the test server");
    if (server_start(&b, "ep_b", 20, dir)) { server_stop(&a); SKIP("cannot start the test server"); }
    char yaml[768];
    snprintf(yaml, sizeof yaml,
             "judge:\n  endpoints: [{url: 'http://127.0.0.1:%d/v1', model: m}, {url: 'http://127.0.0.1:%d/v1', model: m, concurrency: 2},"
             " {url: 'http://127.0.0.1:1/v1', model: m}]\n  cache: false\n  concurrency: 4\n  max_attempts: 4\n  backoff_base_s: 0.01\n"
             "  backoff_max_s: 0.05\n",
             a.port, b.port);
    jr_config cfg;
    jr_judge *j = open_judge(yaml, &cfg);
    CHECK(j != NULL);
    if (!j) { server_stop(&a); server_stop(&b); jr_config_free(&cfg); return; }
    for (int i = 0; i < 60; i++) {
        json_t *rw = row(i, "");
        CHECK_OK(jr_judge_submit(j, rw, NULL, NULL));
        json_decref(rw);
    }
    int ok = 0, unscored = 0;
    jr_judge_result r[16];
    while (jr_judge_pending(j) > 0) {
        int n = jr_judge_collect(j, r, 16, -1);
        for (int k = 0; k < n; k++) {
            if (r[k].status == JR_SCORE_OK) ok++;
            else { unscored++; printf("  unscored %s: %s\n", r[k].id, r[k].error); }
            CHECK(r[k].status != JR_SCORE_OK || r[k].reward >= 1);
            jr_judge_result_free(&r[k]);
        }
    }
    CHECK_MSG(ok == 60 && unscored == 0, "ok %d unscored %d", ok, unscored);
    jr_judge_close(j);
    jr_config_free(&cfg);
    server_stop(&a);
    server_stop(&b);
    int ma, mb, na = server_log(&a, &ma), nb = server_log(&b, &mb);
    CHECK_MSG(na + nb == 60 && na > 0 && nb > 0, "endpoint a %d, b %d requests", na, nb);
    CHECK_MSG(ma <= 4 && mb <= 2, "most in flight: a %d (limit 4), b %d (limit 2)", ma, mb);
}

TEST(rpm_bucket_and_second_protocol) {
    server s;
    if (server_start(&s, "rpm", 0, dir)) SKIP("cannot start the test server");
    char yaml[512];
    /* 600 rpm = 10 requests/s with a burst of 10: 25 requests need at least 1.5 s */
    snprintf(yaml, sizeof yaml, "judge:\n  endpoints: [{url: 'http://127.0.0.1:%d/v1', model: m}]\n  cache: false\n  rpm: 600\n"
                                "  pointwise: {scale: 10}\n", s.port);
    jr_config cfg;
    jr_judge *j = open_judge(yaml, &cfg);
    CHECK(j != NULL);
    if (!j) { server_stop(&s); jr_config_free(&cfg); return; }
    int h = -1;
    CHECK_OK(jr_judge_add_protocol(j, "pointwise", &h));
    CHECK(h == 1);
    CHECK(jr_judge_add_protocol(j, "no-such-protocol", &h) != JR_OK);
    CHECK(strstr(jr_errmsg(), "pointwise") != NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 25; i++) {
        json_t *rw = row(i, i == 3 ? "fault=noverdict*all" : "");
        json_object_set_new(rw, "response", json_string(i == 3 ? "x fault=noverdict*all" : "x score=9"));
        json_object_set_new(rw, "id", json_integer(i));
        CHECK_OK(jr_judge_submit_proto(j, i % 2, rw, NULL, NULL));
        json_decref(rw);
    }
    json_t *bad = json_pack("{s:i,s:s}", "id", 99, "prompt", "no response field");
    CHECK(jr_judge_submit(j, bad, NULL, NULL) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "response") != NULL);
    json_decref(bad);
    int ok = 0, uns = 0;
    jr_judge_result r[8];
    while (jr_judge_pending(j) > 0) {
        int n = jr_judge_collect(j, r, 8, -1);
        for (int k = 0; k < n; k++) {
            if (r[k].status == JR_SCORE_OK) { ok++; CHECK(r[k].reward == 9); }
            else { uns++; CHECK(isnan(r[k].reward) && r[k].error && strstr(r[k].error, "[RESULT]")); }
            jr_judge_result_free(&r[k]);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double el = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    CHECK(ok == 24 && uns == 1);
    jr_judge_stats st;
    jr_judge_stats_get(j, &st);
    CHECK(st.unscored == 1 && fabs(st.unscored_frac - 1.0 / 25) < 1e-9 && st.requests == 27);
    /* 27 requests at 10/s after a burst of 10: a lower bound only (the test never asserts speed) */
    CHECK_MSG(el >= 1.5, "27 requests at rpm 600 took %.2fs", el);
    jr_judge_close(j);
    jr_config_free(&cfg);
    server_stop(&s);
}

TEST(close_with_work_in_flight) {
    server s;
    if (server_start(&s, "close", 500, dir)) SKIP("cannot start the test server");
    char yaml[512];
    snprintf(yaml, sizeof yaml, "judge:\n  endpoints: [{url: 'http://127.0.0.1:%d/v1', model: m}]\n  cache: false\n  concurrency: 2\n", s.port);
    jr_config cfg;
    jr_judge *j = open_judge(yaml, &cfg);
    CHECK(j != NULL);
    for (int i = 0; j && i < 10; i++) {
        json_t *rw = row(i, "");
        CHECK_OK(jr_judge_submit(j, rw, NULL, NULL));
        json_decref(rw);
    }
    jr_judge_result r[4];
    CHECK(j && jr_judge_collect(j, r, 4, 0) == 0);
    jr_judge_close(j); /* abandons queued and in-flight work without leaks (ASan checks) */
    jr_config_free(&cfg);
    server_stop(&s);
}

/* A protocol written for this test: two calls per sample (the second asks for top log-probs),
 * then a second round of one more call; combine sums the three verdicts. */
static jr_status tp_open(const jr_judge_opts *o, const char *dir, void **state) { (void)o; (void)dir; *state = NULL; return JR_OK; }
static void tp_close(void *state) { (void)state; }
static json_t *user_msg(const char *prefix, const json_t *row) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s %s", prefix, json_string_value(json_object_get(row, "response")));
    return json_pack("[{s:s,s:s}]", "role", "user", "content", buf);
}
static jr_status tp_build(void *state, const json_t *row, jr_judge_calls *calls) {
    (void)state;
    if (!json_is_string(json_object_get(row, "response"))) return jr_fail(JR_EINVAL, "field 'response': expected a string");
    jr_status st = jr_judge_calls_add(calls, user_msg("A", row), NULL, "a", NULL);
    if (!st) st = jr_judge_calls_add(calls, user_msg("B", row), json_pack("{s:b,s:i,s:i}", "logprobs", 1, "top_logprobs", 2, "max_tokens", 1), "b", NULL);
    return st;
}
static jr_parse_rc tp_parse(void *state, const json_t *row, const jr_judge_call *call, int index, const jr_judge_response *resp,
                            double *value, json_t **detail, char *why, size_t why_len) {
    (void)state; (void)row; (void)call;
    int n;
    if (!jr_judge_parse_result(resp->text, 1, 5, &n, why, why_len)) return JR_PARSE_RETRY;
    if (index == 1) {
        json_t *top = json_object_get(json_array_get(resp->logprobs, 0), "top_logprobs");
        if (json_array_size(top) < 2) { snprintf(why, why_len, "no top log-probs"); return JR_PARSE_GIVE_UP; }
        *detail = json_pack("{s:f}", "second", json_real_value(json_object_get(json_array_get(top, 1), "logprob")));
    }
    *value = n;
    return JR_PARSE_OK;
}
static jr_verdict tp_combine(void *state, const json_t *row, jr_judge_calls *calls, const jr_call_result *res, int n, jr_judge_outcome *out) {
    (void)state;
    for (int i = 0; i < n; i++)
        if (!res[i].ok) {
            char buf[600];
            snprintf(buf, sizeof buf, "call %s failed: %s", calls->v[i].tag, res[i].error);
            out->reason = strdup(buf);
            return JR_VERDICT_UNSCORED;
        }
    if (n == 2) return jr_judge_calls_add(calls, user_msg("C", row), NULL, "c", NULL) ? JR_VERDICT_UNSCORED : JR_VERDICT_MORE;
    out->reward = res[0].value + res[1].value + res[2].value;
    out->scores = json_pack("{s:f,s:f,s:f}", "a", res[0].value, "b", res[1].value, "c", res[2].value);
    out->detail = json_incref(res[1].detail);
    return JR_VERDICT_SCORED;
}
static const jr_protocol test_proto = {"test-multi", tp_open, tp_close, tp_build, tp_parse, tp_combine};

TEST(custom_protocol_calls_rounds_logprobs) {
    server s;
    if (server_start(&s, "multi", 0, dir)) SKIP("cannot start the test server");
    char yaml[512];
    snprintf(yaml, sizeof yaml, "judge:\n  endpoints: [{url: 'http://127.0.0.1:%d/v1', model: m}]\n  cache: false\n  max_attempts: 2\n"
                                "  backoff_base_s: 0.01\n", s.port);
    jr_config cfg;
    jr_judge *j = open_judge(yaml, &cfg);
    CHECK(j != NULL);
    if (!j) { server_stop(&s); jr_config_free(&cfg); return; }
    int h = -1;
    CHECK_OK(jr_judge_add_protocol_impl(j, &test_proto, &h));
    for (int i = 0; i < 6; i++) {
        char resp[64];
        snprintf(resp, sizeof resp, "x%d score=%d%s", i, 1 + i % 5, i == 5 ? " fault=400*all" : "");
        json_t *rw = json_pack("{s:i,s:s}", "id", i, "response", resp);
        CHECK_OK(jr_judge_submit_proto(j, h, rw, NULL, NULL));
        json_decref(rw);
    }
    jr_judge_result r[8];
    int seen = 0;
    while (jr_judge_pending(j) > 0) {
        int n = jr_judge_collect(j, r, 8, -1);
        for (int k = 0; k < n; k++) {
            int i = atoi(r[k].id);
            seen++;
            if (i == 5) {
                CHECK(r[k].status == JR_SCORE_UNSCORED && isnan(r[k].reward) && r[k].error && strstr(r[k].error, "call a failed") &&
                      strstr(r[k].error, "HTTP 400"));
                CHECK(r[k].n_calls == 2 && r[k].attempts == 2); /* 400 is not retried: one request per call */
            } else {
                CHECK_MSG(r[k].status == JR_SCORE_OK && r[k].reward == 3 * (1 + i % 5), "id %d: %s", i, r[k].error ? r[k].error : "");
                CHECK(r[k].n_calls == 3 && r[k].attempts == 3);
                CHECK_NEAR(json_real_value(json_object_get(r[k].detail, "second")), -2.4, 1e-12, 0);
                CHECK(json_real_value(json_object_get(r[k].scores, "c")) == 1 + i % 5);
            }
            jr_judge_result_free(&r[k]);
        }
    }
    CHECK(seen == 6);
    jr_judge_close(j);
    jr_config_free(&cfg);
    server_stop(&s);
    /* the B calls carried their own request fields */
    char *text = NULL;
    int with_lp = 0;
    if (!jr_read_file(s.log, &text, NULL)) {
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
            json_t *o = json_loads(line, 0, NULL);
            json_t *b = json_object_get(o, "body");
            const char *c = json_string_value(json_object_get(json_array_get(json_object_get(b, "messages"), 0), "content"));
            if (c && c[0] == 'B') with_lp += json_is_true(json_object_get(b, "logprobs")) && json_integer_value(json_object_get(b, "top_logprobs")) == 2 &&
                                             json_integer_value(json_object_get(b, "max_tokens")) == 1;
            else if (json_object_get(b, "logprobs")) with_lp = -100;
            json_decref(o);
        }
        free(text);
    }
    CHECK_MSG(with_lp == 6, "B calls with their params: %d of 6", with_lp);
}

int main(void) {
    dir = jt_tmpdir("judge-api");
    RUN(submit_while_collecting);
    RUN(routing_two_endpoints_and_a_dead_one);
    RUN(rpm_bucket_and_second_protocol);
    RUN(close_with_work_in_flight);
    RUN(custom_protocol_calls_rounds_logprobs);
    free(dir);
    return jt_done();
}
