/* cmd_serve_reward.c - `judgerl serve-reward`: the reward registry of a config as an HTTP service
 * for verl, OpenRLHF, TRL and slime (docs/REWARD_SERVICE.md) */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/judge.h"
#include "judgerl/protocols.h"
#include "judgerl/reward.h"
#include "judgerl/reward_service.h"
#include "judgerl/sandbox.h"

static const char *usage_text =
    "usage: judgerl serve-reward --config REWARD.yaml [--host 127.0.0.1] [--port 8100] [--api-key-env NAME]\n"
    "         [--state-dir DIR] [--drain-timeout 60] [KEY=VALUE ...]\n"
    "  Serves the config's reward.components (rule verifiers and judge protocols, judge.* as for\n"
    "  judgerl grade) to distributed RL engines:\n"
    "    POST /get_reward   OpenRLHF (--reward.remote_url): {query, prompts, labels} -> {rewards, scores, extra_logs}\n"
    "    POST /slime        slime (--rm-type remote_rm): {prompt, response, label} -> the reward\n"
    "    POST /v1/rewards   batch API: {rows: [{prompt, response, reference?, ...}]} -> {results: [{reward|null, ...}]}\n"
    "    GET /health, GET /metrics (Prometheus text)\n"
    "  An unscored row is never a number: the batch API answers null with the reason; OpenRLHF and\n"
    "  slime get HTTP 503 with the reason unless service.on_unscored is 'value'. --api-key-env NAME\n"
    "  requires 'Authorization: Bearer $NAME' on the POST routes. The judge cache lives in --state-dir\n"
    "  (default: REWARD.state beside the config). --port 0 picks a free port (printed on stderr).\n"
    "  SIGTERM/SIGINT: new requests get 503, rows being scored finish (--drain-timeout s, then the judge's own\n"
    "  timeouts bound the last ones), exit 0.\n"
    "  KEY=VALUE overrides a config key (service.max_rows=64). See docs/REWARD_SERVICE.md.\n";

int cmd_serve_reward(int argc, char **argv) {
    const char *cmd = "serve-reward";
    if (cli_wants_help(argc, argv)) { fputs(usage_text, stdout); return CLI_OK; }
    const char *cfg_path = NULL, *host = "127.0.0.1", *key_env = NULL, *state_dir = NULL;
    long port = 8100;
    double drain = 60;
    const jr_arg spec[] = {JR_ARG_S("--config", &cfg_path), JR_ARG_S("--host", &host), JR_ARG_S("--api-key-env", &key_env),
                           JR_ARG_S("--state-dir", &state_dir), JR_ARG_L("--port", &port, 0, 65535),
                           JR_ARG_SEC("--drain-timeout", &drain, 0), JR_ARGS_END};
    jr_args args;
    int rc = cli_args(cmd, &args, spec, argc, argv, 0, 1, "unknown argument '%s' (see judgerl serve-reward --help)");
    const char *key = key_env ? getenv(key_env) : NULL;
    if (!rc && !cfg_path) rc = cli_usage(cmd, "--config REWARD.yaml is required (see judgerl serve-reward --help)");
    if (!rc && key_env && (!key || !*key))
        rc = cli_usage(cmd, "--api-key-env %s: the environment variable is unset or empty", key_env);
    if (rc) { jr_args_free(&args); return rc; }
    const jr_cfg_field *tables[] = {jr_judge_cfg, jr_protocols_cfg, jr_reward_cfg, jr_sandbox_cfg, jr_reward_service_cfg, NULL};
    jr_config cfg;
    jr_status st = jr_config_load(&cfg, cfg_path, args.n_over, args.over, tables);
    jr_args_free(&args);
    if (st) return cli_fail(cmd, st);
    jr_reward_opts ro;
    jr_rsvc_opts so;
    if ((st = jr_reward_opts_from_config(&ro, &cfg)) || (st = jr_rsvc_opts_from_config(&so, &cfg))) {
        jr_config_free(&cfg);
        return cli_fail(cmd, st);
    }
    so.host = host;
    so.port = (int)port;
    so.api_key = key;
    /* Signals are taken by sigwait below: block them before any thread starts. */
    sigset_t set;
    cli_block_stop_signals(&set);
    char sdir[4096];
    if (state_dir) snprintf(sdir, sizeof sdir, "%s", state_dir);
    else jr_rsvc_default_state_dir(cfg_path, sdir, sizeof sdir);
    jr_reward *r;
    jr_rsvc *s;
    if ((st = jr_rsvc_open(&s, &r, ro, &so, sdir, stderr))) { jr_config_free(&cfg); return cli_fail(cmd, st); }
    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "judgerl serve-reward: %s: finishing the rows being scored (up to %g s)\n", sig == SIGTERM ? "SIGTERM" : "SIGINT", drain);
    jr_rsvc_stop(s, drain);
    jr_reward_close(r);
    jr_config_free(&cfg);
    fprintf(stderr, "judgerl serve-reward: stopped\n");
    return CLI_OK;
}
