/* test_opts.c - typed options: a misspelt or missing key is an error naming it (never an abort),
 * opts filled from a config equal the tables' defaults, and a judge opens from opts built in C */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

#include "judgerl/config.h"
#include "judgerl/judge.h"
#include "judgerl/model.h"
#include "judgerl/protocols.h"
#include "judgerl/reward.h"
#include "eightball/seed1.h"
#include "judgerl/tokenizer.h"

TEST(misspelt_key_is_an_error_naming_it) {
    const jr_cfg_field *const tables[] = {jr_judge_cfg, NULL};
    jr_config c;
    CHECK_OK(jr_config_load_string(&c, "", "t.yaml", 0, NULL, tables));
    CHECK_OK(jr_cfg_check(&c));
    CHECK(jr_cfg_int(&c, "judge.max_tokenz") == 0); /* used to abort() */
    CHECK(jr_cfg_str(&c, "judge.protocl") == NULL);
    CHECK(jr_cfg_check(&c) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "judge.max_tokenz") != NULL);
    CHECK(strstr(jr_errmsg(), "t.yaml") != NULL);
    CHECK_OK(jr_cfg_check(&c)); /* reported once */
    CHECK(jr_cfg_int(&c, "judge.protocol") == 0); /* a string read as an integer */
    CHECK(jr_cfg_check(&c) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "judge.protocol: expected an integer") != NULL);
    jr_config_free(&c);
}

TEST(opts_from_a_config_without_the_table_fail_naming_the_key) {
    const jr_cfg_field *const tables[] = {jr_run_cfg, NULL};
    jr_config c;
    CHECK_OK(jr_config_load_string(&c, "", "run.yaml", 0, NULL, tables));
    jr_judge_opts jo;
    CHECK(jr_judge_opts_from_config(&jo, &c) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "judge.protocol") != NULL);
    jr_model_opts mo;
    CHECK(jr_model_opts_from_config(&mo, &c) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "model.path") != NULL);
    eb_seed1_opts so;
    CHECK(eb_seed1_opts_from_config(&so, &c) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "seed1.") != NULL);
    jr_tok_opts to;
    CHECK(jr_tok_opts_from_config(&to, &c) == JR_EINVAL);
    CHECK_OK(jr_cfg_check(&c));
    jr_config_free(&c);
}

TEST(judge_opts_follow_the_config_and_default_to_the_tables) {
    const jr_cfg_field *const tables[] = {jr_judge_cfg, jr_protocols_cfg, jr_reward_cfg, NULL};
    jr_config c;
    CHECK_OK(jr_config_load_string(&c,
                                   "judge:\n  endpoints: [{url: 'http://127.0.0.1:1/v1', model: j, concurrency: 3}]\n"
                                   "  api: completions\n  cache: /tmp/x.sqlite\n  label: {threshold: 0.7}\n"
                                   "  rubric: {mode: batched}\nreward:\n  components: [{fn: format, weight: 0.5}]\n",
                                   "j.yaml", 0, NULL, tables));
    jr_reward_opts ro;
    CHECK_OK(jr_reward_opts_from_config(&ro, &c));
    CHECK(ro.n_components == 1 && !strcmp(ro.components[0].fn, "format") && ro.components[0].weight == 0.5);
    const jr_judge_opts *o = &ro.judge;
    CHECK(o->n_endpoints == 1 && o->endpoints[0].concurrency == 3 && !strcmp(o->endpoints[0].model, "j"));
    CHECK(o->chat == 0);
    CHECK(o->cache == 1 && o->cache_path && !strcmp(o->cache_path, "/tmp/x.sqlite"));
    CHECK_NEAR(o->label.threshold, 0.7, 0, 0);
    CHECK(o->rubric.batched == 1);
    CHECK_STR(o->protocol, "pointwise");
    jr_config_free(&c);
    /* defaults, and the protocol fields when the config did not load jr_protocols_cfg */
    jr_judge_opts d;
    jr_judge_opts_init(&d);
    /* concurrency 0 and stream -1: decided by each endpoint's kind at open (docs/JUDGE.md, "Servers") */
    CHECK(d.pointwise.scale == 5 && d.max_attempts == 5 && d.concurrency == 0 && d.cache == 1 && !d.cache_path);
    CHECK(d.stream == -1 && d.constraint == NULL && d.label.accept_unreliable == 0);
    CHECK_NEAR(d.label.max_logprob_gap, 3.0, 0, 0);
    CHECK_NEAR(d.label.threshold, 0.4, 0, 0);
    CHECK(d.pairwise.swap == 1 && json_array_size(d.label.labels) == 3);
    const jr_cfg_field *const judge_only[] = {jr_judge_cfg, NULL};
    CHECK_OK(jr_config_load_string(&c, "judge: {max_tokens: 7}\n", "k.yaml", 0, NULL, judge_only));
    jr_judge_opts k;
    CHECK_OK(jr_judge_opts_from_config(&k, &c));
    CHECK(k.max_tokens == 7 && k.pairwise.swap == 1 && !strcmp(k.pairwise.other_field, "response_b"));
    jr_config_free(&c);
}

/* A loopback port nothing listens on (bound, then closed). */
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof a) && !getsockname(fd, (struct sockaddr *)&a, &len) ? ntohs(a.sin_port) : -1;
    if (fd >= 0) close(fd);
    return port;
}

TEST(judge_opens_from_opts_built_in_c) {
    /* a silent server (accepts, never answers): the open probes it, times out, and still opens */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &len) || listen(fd, 4)) {
        if (fd >= 0) close(fd);
        SKIP("cannot bind a loopback socket");
    }
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", ntohs(a.sin_port));
    jr_judge_opts o;
    jr_judge_opts_init(&o);
    o.n_endpoints = 1;
    o.endpoints[0].url = url;
    o.endpoints[0].model = "m";
    o.cache = 0;
    o.timeout_s = 0.2;
    jr_judge *j = NULL;
    CHECK_OK(jr_judge_open_opts(&j, &o));
    CHECK(j != NULL);
    jr_judge_close(j);
    o.protocol = "nope";
    CHECK(jr_judge_open_opts(&j, &o) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "nope") != NULL && j == NULL);
    close(fd);
    /* nothing listening: a configuration error at open, naming the URL */
    int port = free_port();
    if (port < 0) return;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", port);
    o.protocol = "pointwise";
    CHECK(jr_judge_open_opts(&j, &o) == JR_EIO && j == NULL);
    CHECK(strstr(jr_errmsg(), url) != NULL && strstr(jr_errmsg(), "is the judge server running") != NULL);
}

int main(void) {
    RUN(misspelt_key_is_an_error_naming_it);
    RUN(opts_from_a_config_without_the_table_fail_naming_the_key);
    RUN(judge_opts_follow_the_config_and_default_to_the_tables);
    RUN(judge_opens_from_opts_built_in_c);
    return jt_done();
}
