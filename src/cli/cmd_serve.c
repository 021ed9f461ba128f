/* cmd_serve.c - `judgerl serve`: an OpenAI-compatible server for a model directory */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/serve.h"

static const char *usage_text =
    "usage: judgerl serve --model DIR [--host 127.0.0.1] [--port 8000] [--api-key-env NAME] [--parallel N]\n"
    "         [--max-tokens N] [--served-model-name NAME [NAME...]] [--ctx POSITIONS] [--max-queue N] [--max-body BYTES]\n"
    "         [--tokenizer auto|byte|PATH] [--seed S] [--drain-timeout 60] [--request-timeout 0]\n"
    "         [--header-timeout 10] [--body-timeout 30] [--max-connections 512] [--max-per-client N]\n"
    "         [--compute auto|float32|bfloat16] [--kv-cache float32|bfloat16] [--deterministic 1|0]\n"
    "         [--prefill-chunk 256] [--itl-target 1.5] [--port-file PATH]\n"
    "  Serves POST /v1/chat/completions and /v1/completions (stream or not), GET /v1/models, /health\n"
    "  (503 while loading) and /metrics. --api-key-env NAME requires 'Authorization: Bearer $NAME' on\n"
    "  /v1/. --port 0 picks a free port; the address is printed on stderr, and --port-file PATH gets the\n"
    "  port (one line, written atomically once the model is loaded and requests are served). SIGTERM or SIGINT stop\n"
    "  taking requests (503), finish the running ones for up to --drain-timeout seconds, cancel the\n"
    "  rest and exit 0. --request-timeout S cancels a request S seconds after it arrived (504; 0 = no\n"
    "  limit). --max-tokens N caps a request's max_tokens (default: the context, as vLLM; a request\n"
    "  without max_tokens gets what fits, at most 512). A connection must send its headers within --header-timeout and its body within\n"
    "  --body-timeout seconds; one client address holds at most --max-per-client connections that\n"
    "  have not yet sent a complete request (default --max-connections / 2). See docs/SERVE.md.\n"
    "  --prefill-chunk N: prompt tokens prefilled per decode step when prompts are batched (bfloat16):\n"
    "  smaller keeps the running sequences' inter-token latency lower, larger prefills faster.\n"
    "  --itl-target R (default 1.5; 0 = off: always the chunk): while sequences decode, a step takes only\n"
    "  as many prompt tokens as keep it within about R x a decode-only step (both timed as it runs).\n" CLI_KV_USAGE;

int cmd_serve(int argc, char **argv) {
    const char *cmd = "serve";
    if (cli_wants_help(argc, argv)) { fputs(usage_text, stdout); return CLI_OK; }
    const char *model = NULL, *host = "127.0.0.1", *key_env = NULL, *tokenizer = "auto", *port_file = NULL, *names[17];
    long port = 8000, parallel = 4, max_tokens = 0, ctx = 0, max_queue = 64, max_body = 1 << 20, seed = 0, max_conn = 512,
         per_client = 0, chunk = JR_GEN_PREFILL_CHUNK;
    double drain = 60, req_timeout = 0, hdr_timeout = 10, body_timeout = 30, itl = 1.5;
    int n_names = 0;
    cli_kv_args kva = {0};
    const jr_arg spec[] = {
        JR_ARG_S("--model", &model), JR_ARG_S("--host", &host), JR_ARG_S("--api-key-env", &key_env),
        JR_ARG_M("--served-model-name", names, &n_names, 17, 1),
        JR_ARG_S("--tokenizer", &tokenizer), JR_ARG_S("--port-file", &port_file),
        JR_ARG_S("--compute", &kva.compute), JR_ARG_S("--kv-cache", &kva.kv_cache),
        JR_ARG_S("--deterministic", &kva.deterministic), JR_ARG_L("--port", &port, 0, 65535),
        JR_ARG_L("--parallel", &parallel, 1, 1024), JR_ARG_L("--max-tokens", &max_tokens, 1, 1 << 20),
        JR_ARG_L("--ctx", &ctx, 2, 1 << 20), JR_ARG_L("--max-queue", &max_queue, 1, 1 << 20),
        JR_ARG_L("--max-body", &max_body, 1024, 1L << 30), JR_ARG_L("--seed", &seed, 0, 1L << 62),
        JR_ARG_L("--max-connections", &max_conn, 1, 65536),
        JR_ARG_L("--max-per-client", &per_client, 1, 65536),
        JR_ARG_L("--prefill-chunk", &chunk, 1, 1 << 20), JR_ARG_D("--itl-target", &itl, 0, 100),
        JR_ARG_SEC("--drain-timeout", &drain, 0), JR_ARG_SEC("--request-timeout", &req_timeout, 0),
        JR_ARG_SEC("--header-timeout", &hdr_timeout, 0.1), JR_ARG_SEC("--body-timeout", &body_timeout, 0.1),
        JR_ARGS_END};
    int rc = cli_flags(cmd, spec, argc, argv, "unknown argument '%s' (see judgerl serve --help)");
    if (rc) return rc;
    if (itl != 0 && itl <= 1) return cli_usage(cmd, "--itl-target: expected 0 (off) or a ratio in (1, 100], got '%g'", itl);
    if (!model) return cli_usage(cmd, "--model DIR is required (see judgerl serve --help)");
    jr_serve_model_opts o = {.model = model, .tokenizer = tokenizer, .ctx = (int)ctx, .port_file = port_file,
                             .log = stderr, .prefix = "judgerl serve: "};
    if ((rc = cli_kv_opts(cmd, &kva, &o.kv))) return rc;
    const char *key = NULL;
    if (key_env) {
        key = getenv(key_env);
        if (!key || !*key) return cli_usage(cmd, "--api-key-env %s: the environment variable is unset or empty", key_env);
    }
    const char *slash = strrchr(model, '/');
    o.serve = (jr_serve_opts){.host = host, .port = (int)port, .api_key = key,
                              .model_name = n_names ? names[0] : slash && slash[1] ? slash + 1 : model,
                              .aliases = names + 1, .n_aliases = n_names ? n_names - 1 : 0, .parallel = (int)parallel,
                              .max_tokens = (int)max_tokens, .max_queue = (int)max_queue, .max_body = (size_t)max_body,
                              .seed = (uint64_t)seed, .prefill_chunk = (int)chunk, .itl_target = itl,
                              .max_connections = (int)max_conn, .max_per_client = (int)per_client,
                              .request_timeout = req_timeout, .header_timeout = hdr_timeout, .body_timeout = body_timeout};
    /* Signals are taken by sigwait below: block them before any thread starts. */
    sigset_t set;
    cli_block_stop_signals(&set);
    jr_serve_model *m;
    jr_status st = jr_serve_model_start(&m, &o);
    if (st) return cli_fail(cmd, st);
    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "judgerl serve: %s: finishing running requests (up to %g s)\n", sig == SIGTERM ? "SIGTERM" : "SIGINT", drain);
    jr_serve_model_stop(m, drain);
    fprintf(stderr, "judgerl serve: stopped\n");
    return CLI_OK;
}
