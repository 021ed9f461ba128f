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

/* The command line of `judgerl serve`, with its defaults. */
typedef struct {
    const char *model, *host, *key_env, *name, *tokenizer, *port_file;
    long port, parallel, max_tokens, ctx, max_queue, max_body, seed, max_conn, per_client, chunk;
    const char *alias[16];
    int n_alias;
    double drain, req_timeout, hdr_timeout, body_timeout, itl;
    cli_kv_args kva;
} serve_args;

/* --served-model-name NAME [NAME...] as vLLM's: the first answers, all are accepted; *i moves past them. */
static int parse_names(const char *cmd, int argc, char **argv, int *i, serve_args *x) {
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    int cap = (int)(sizeof x->alias / sizeof *x->alias);
    if (!v || v[0] == '-') return cli_usage(cmd, "%s needs a value", a);
    for (;;) {
        if (!x->name) x->name = v;
        else if (x->n_alias < cap) x->alias[x->n_alias++] = v;
        else return cli_usage(cmd, "%s: at most %d names", a, cap + 1);
        if (*i + 2 >= argc || argv[*i + 2][0] == '-') break;
        v = argv[++*i + 1];
    }
    ++*i;
    return 0;
}

static int parse_args(const char *cmd, int argc, char **argv, serve_args *x) {
    *x = (serve_args){.host = "127.0.0.1", .tokenizer = "auto", .port = 8000, .parallel = 4, .max_queue = 64,
                      .max_body = 1 << 20, .max_conn = 512, .chunk = JR_GEN_PREFILL_CHUNK, .itl = 1.5, .drain = 60,
                      .hdr_timeout = 10, .body_timeout = 30};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--model")) x->model = v;
        else if (!strcmp(a, "--host")) x->host = v;
        else if (!strcmp(a, "--api-key-env")) x->key_env = v;
        else if (!strcmp(a, "--served-model-name")) {
            if ((bad = parse_names(cmd, argc, argv, &i, x))) return bad;
            continue;
        }
        else if (!strcmp(a, "--tokenizer")) x->tokenizer = v;
        else if (!strcmp(a, "--port-file")) x->port_file = v;
        else if (!strcmp(a, "--compute")) x->kva.compute = v;
        else if (!strcmp(a, "--kv-cache")) x->kva.kv_cache = v;
        else if (!strcmp(a, "--deterministic")) x->kva.deterministic = v;
        else if (!strcmp(a, "--port")) bad = cli_int_arg(cmd, a, v, 0, 65535, &x->port);
        else if (!strcmp(a, "--parallel")) bad = cli_int_arg(cmd, a, v, 1, 1024, &x->parallel);
        else if (!strcmp(a, "--max-tokens")) bad = cli_int_arg(cmd, a, v, 1, 1 << 20, &x->max_tokens);
        else if (!strcmp(a, "--ctx")) bad = cli_int_arg(cmd, a, v, 2, 1 << 20, &x->ctx);
        else if (!strcmp(a, "--max-queue")) bad = cli_int_arg(cmd, a, v, 1, 1 << 20, &x->max_queue);
        else if (!strcmp(a, "--max-body")) bad = cli_int_arg(cmd, a, v, 1024, 1L << 30, &x->max_body);
        else if (!strcmp(a, "--seed")) bad = cli_int_arg(cmd, a, v, 0, 1L << 62, &x->seed);
        else if (!strcmp(a, "--max-connections")) bad = cli_int_arg(cmd, a, v, 1, 65536, &x->max_conn);
        else if (!strcmp(a, "--max-per-client")) bad = cli_int_arg(cmd, a, v, 1, 65536, &x->per_client);
        else if (!strcmp(a, "--prefill-chunk")) bad = cli_int_arg(cmd, a, v, 1, 1 << 20, &x->chunk);
        else if (!strcmp(a, "--itl-target")) {
            char *end;
            x->itl = v ? strtod(v, &end) : -1;
            if (!v || *end || !(x->itl == 0 || (x->itl > 1 && x->itl <= 100)))
                return cli_usage(cmd, "%s: expected 0 (off) or a ratio in (1, 100], got '%s'", a, v ? v : "");
        }
        else if (!strcmp(a, "--drain-timeout")) bad = cli_seconds_arg(cmd, a, v, 0, &x->drain);
        else if (!strcmp(a, "--request-timeout")) bad = cli_seconds_arg(cmd, a, v, 0, &x->req_timeout);
        else if (!strcmp(a, "--header-timeout")) bad = cli_seconds_arg(cmd, a, v, 0.1, &x->hdr_timeout);
        else if (!strcmp(a, "--body-timeout")) bad = cli_seconds_arg(cmd, a, v, 0.1, &x->body_timeout);
        else return cli_usage(cmd, "unknown argument '%s' (see judgerl serve --help)", a);
        if (bad) return CLI_USAGE;
        if (!v) return cli_usage(cmd, "%s needs a value", a);
        i++;
    }
    return 0;
}

int cmd_serve(int argc, char **argv) {
    const char *cmd = "serve";
    if (cli_wants_help(argc, argv)) { fputs(usage_text, stdout); return CLI_OK; }
    serve_args x;
    int rc = parse_args(cmd, argc, argv, &x);
    if (rc) return rc;
    if (!x.model) return cli_usage(cmd, "--model DIR is required (see judgerl serve --help)");
    jr_serve_model_opts o = {.model = x.model, .tokenizer = x.tokenizer, .ctx = (int)x.ctx, .port_file = x.port_file,
                             .log = stderr, .prefix = "judgerl serve: "};
    if ((rc = cli_kv_opts(cmd, &x.kva, &o.kv))) return rc;
    const char *key = NULL;
    if (x.key_env) {
        key = getenv(x.key_env);
        if (!key || !*key) return cli_usage(cmd, "--api-key-env %s: the environment variable is unset or empty", x.key_env);
    }
    const char *slash = strrchr(x.model, '/');
    o.serve = (jr_serve_opts){.host = x.host, .port = (int)x.port, .api_key = key,
                              .model_name = x.name ? x.name : slash && slash[1] ? slash + 1 : x.model,
                              .aliases = x.alias, .n_aliases = x.n_alias, .parallel = (int)x.parallel,
                              .max_tokens = (int)x.max_tokens, .max_queue = (int)x.max_queue, .max_body = (size_t)x.max_body,
                              .seed = (uint64_t)x.seed, .prefill_chunk = (int)x.chunk, .itl_target = x.itl,
                              .max_connections = (int)x.max_conn, .max_per_client = (int)x.per_client,
                              .request_timeout = x.req_timeout, .header_timeout = x.hdr_timeout, .body_timeout = x.body_timeout};
    /* Signals are taken by sigwait below: block them before any thread starts. */
    sigset_t set;
    cli_block_stop_signals(&set);
    jr_serve_model *m;
    jr_status st = jr_serve_model_start(&m, &o);
    if (st) return cli_fail(cmd, st);
    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "judgerl serve: %s: finishing running requests (up to %g s)\n", sig == SIGTERM ? "SIGTERM" : "SIGINT", x.drain);
    jr_serve_model_stop(m, x.drain);
    fprintf(stderr, "judgerl serve: stopped\n");
    return CLI_OK;
}
