/* reward_service_cfg.c - the reward service's options (service.*) */
#include <string.h>

#include "judgerl/reward_service.h"

const jr_cfg_field jr_reward_service_cfg[] = {
    {"service.on_unscored", JR_CFG_ENUM, "error", "OpenRLHF and slime cannot carry 'unscored': error = answer HTTP 503 with the reason (their retry or failure is visible); value = answer service.unscored_value (an explicit opt-in, each one logged). The batch API always answers null with the reason", "error|value", NULL, 0, 0},
    {"service.unscored_value", JR_CFG_ANY, "null", "the reward answered for an unscored row when on_unscored is value (a number)", NULL, NULL, 0, 0},
    {"service.openrlhf_path", JR_CFG_STRING, "/get_reward", "the route of OpenRLHF's remote reward protocol (--reward.remote_url http://HOST:PORT/get_reward)", NULL, NULL, 0, 0},
    {"service.slime_path", JR_CFG_STRING, "/slime", "the route of slime's remote_rm protocol (--rm-url http://HOST:PORT/slime)", NULL, NULL, 0, 0},
    {"service.slime_answer", JR_CFG_ENUM, "number", "what /slime answers: number = the reward as the body; object = {\"reward\": r, component: value, ...} for slime's --reward-key reward", "number|object", NULL, 0, 0},
    {"service.max_rows", JR_CFG_INT, "4096", "rows per request; a larger request gets 413", NULL, NULL, 1, 1 << 20},
    {"service.max_inflight_rows", JR_CFG_INT, "16384", "rows being scored at once over every request; past it a request gets 429", NULL, NULL, 1, 1 << 24},
    {"service.max_body", JR_CFG_INT, "67108864", "request body bytes; larger gets 413", NULL, NULL, 1024, 1 << 30},
    {"service.max_connections", JR_CFG_INT, "512", "HTTP connections at once", NULL, NULL, 1, 65536},
    {"service.header_timeout", JR_CFG_FLOAT, "10", "seconds to receive a request's headers", NULL, NULL, 0.1, 1e6},
    {"service.body_timeout", JR_CFG_FLOAT, "60", "seconds to receive a request's body once its headers are in", NULL, NULL, 0.1, 1e6},
    {"service.log_requests", JR_CFG_BOOL, "true", "one line per request on stderr: route, status, rows, unscored, milliseconds (never a body or a header)", NULL, NULL, 0, 0},
    {"service.allow_code", JR_CFG_BOOL, "false", "serve code-running rewards (code_tests) without an API key: any client that reaches the port then runs its code in the sandbox", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

jr_status jr_rsvc_opts_from_config(jr_rsvc_opts *o, const jr_config *c) {
    memset(o, 0, sizeof *o);
    o->host = "127.0.0.1";
    o->port = 8100;
    const char *mode = jr_cfg_str(c, "service.on_unscored");
    json_t *v = jr_cfg_json(c, "service.unscored_value");
    o->openrlhf_path = jr_cfg_str(c, "service.openrlhf_path");
    o->slime_path = jr_cfg_str(c, "service.slime_path");
    const char *sa = jr_cfg_str(c, "service.slime_answer");
    o->slime_object = sa && !strcmp(sa, "object");
    o->max_rows = (int)jr_cfg_int(c, "service.max_rows");
    o->max_inflight_rows = (int)jr_cfg_int(c, "service.max_inflight_rows");
    o->max_body = (size_t)jr_cfg_int(c, "service.max_body");
    o->max_connections = (int)jr_cfg_int(c, "service.max_connections");
    o->header_timeout = jr_cfg_float(c, "service.header_timeout");
    o->body_timeout = jr_cfg_float(c, "service.body_timeout");
    o->log_requests = jr_cfg_bool(c, "service.log_requests");
    o->allow_code = jr_cfg_bool(c, "service.allow_code");
    jr_status st = jr_cfg_check(c);
    if (st) return st;
    if (mode && !strcmp(mode, "value")) {
        if (!json_is_number(v))
            return jr_fail(JR_EINVAL, "%s: service.unscored_value: on_unscored is 'value', so a number is required (got %s)", c->source,
                           json_is_null(v) ? "null" : "a non-number");
        o->unscored_value_set = 1;
        o->unscored_value = json_number_value(v);
    } else if (!json_is_null(v)) {
        return jr_fail(JR_EINVAL, "%s: service.unscored_value is set but service.on_unscored is 'error': set on_unscored: value to answer it", c->source);
    }
    /* each protocol its own route: the service takes the first route that matches, so a clash would
     * send one protocol's requests to another's parser without a word */
    const char *taken[] = {"/health", "/metrics", "/v1/rewards", o->openrlhf_path};
    for (int k = 0; k < 2; k++) {
        const char *p = k ? o->slime_path : o->openrlhf_path, *name = k ? "slime_path" : "openrlhf_path";
        if (!p || p[0] != '/')
            return jr_fail(JR_EINVAL, "%s: service.%s: a route starting with '/' is required", c->source, name);
        for (int t = 0; t < 3 + k; t++)
            if (!strcmp(p, taken[t]))
                return jr_fail(JR_EINVAL, "%s: service.%s=%s is already the route of %s: give each protocol its own route", c->source, name,
                               p, t == 3 ? "service.openrlhf_path" : taken[t]);
    }
    return JR_OK;
}
