/* cmd_serve.c - `judgerl serve`: an OpenAI-compatible server for a model directory */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/fsutil.h"
#include "judgerl/serve.h"
#include "judgerl/textgen.h"

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

static jr_status tg_encode(void *tok, const char *text, size_t len, int32_t **ids, int *n) {
    return jr_textgen_encode(tok, text, len, ids, n);
}

static jr_status tg_chat(void *tok, int n, const char *const *roles, const char *const *contents, int32_t **ids, int *n_ids) {
    return jr_textgen_encode_chat(tok, n, roles, contents, ids, n_ids);
}

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
    const char *model = x.model, *host = x.host, *key_env = x.key_env, *name = x.name, *tokenizer = x.tokenizer;
    cli_kv_args kva = x.kva;
    if (!model) return cli_usage(cmd, "--model DIR is required (see judgerl serve --help)");
    jr_kv_opts kvo;
    int kvrc = cli_kv_opts(cmd, &kva, &kvo);
    if (kvrc) return kvrc;
    const char *key = NULL;
    if (key_env) {
        key = getenv(key_env);
        if (!key || !*key) return cli_usage(cmd, "--api-key-env %s: the environment variable is unset or empty", key_env);
    }
    if (!name) {
        const char *slash = strrchr(model, '/');
        name = slash && slash[1] ? slash + 1 : model;
    }
    /* A missing model is reported before anything listens (one error line). */
    char *cfgp = jr_path_join(model, "config.json");
    int have = cfgp && jr_path_exists(cfgp);
    free(cfgp);
    if (!have) return cli_fail(cmd, jr_fail(JR_ENOTFOUND, "%s: no config.json (not a model directory)", model));
    /* Signals are taken by sigwait below: block them before any thread starts. */
    sigset_t set;
    cli_block_stop_signals(&set);

    jr_serve_opts o = {0};
    o.host = host;
    o.port = (int)x.port;
    o.api_key = key;
    o.model_name = name;
    o.aliases = x.alias;
    o.n_aliases = x.n_alias;
    o.parallel = (int)x.parallel;
    o.max_tokens = (int)x.max_tokens;
    o.max_queue = (int)x.max_queue;
    o.max_body = (size_t)x.max_body;
    o.seed = (uint64_t)x.seed;
    o.prefill_chunk = (int)x.chunk;
    o.itl_target = x.itl;
    o.max_connections = (int)x.max_conn;
    o.max_per_client = (int)x.per_client;
    o.request_timeout = x.req_timeout;
    o.header_timeout = x.hdr_timeout;
    o.body_timeout = x.body_timeout;
    jr_server *s;
    jr_status st = jr_server_start(&s, &o);
    if (st) return cli_fail(cmd, st);
    fprintf(stderr, "judgerl serve: listening on http://%s:%d (loading %s)\n", host, jr_server_port(s), model);
    jr_textgen t;
    char mdesc[1024];
    if ((st = jr_textgen_open_dir_kv(&t, model, tokenizer, (int)x.parallel, (int)x.ctx, &kvo, mdesc, sizeof mdesc))) {
        jr_server_stop(s, 0);
        return cli_fail(cmd, st);
    }
    if (strcmp(mdesc, model)) fprintf(stderr, "judgerl serve: model: %s\n", mdesc);
    fprintf(stderr, "judgerl serve: tokenizer: %s\n", t.tok_desc);
    char fingerprint[65];
    jr_textgen_fingerprint(&t, fingerprint);
    jr_serve_backend b = {0};
    b.fingerprint = fingerprint;
    b.lm = &t.lm;
    b.vocab = t.vocab;
    b.tok = &t;
    b.encode = tg_encode;
    b.encode_chat = tg_chat;
    if ((st = jr_server_set_backend(s, &b))) {
        jr_server_stop(s, 0);
        jr_textgen_close(&t);
        return cli_fail(cmd, st);
    }
    char kdesc[160];
    fprintf(stderr, "judgerl serve: ready: model '%s' (fingerprint %.16s), %d slots of %d positions, %s\n", name, fingerprint,
            t.lm.n_slots, t.lm.max_ctx, jr_kv_lm_describe(&t.lm, kdesc, sizeof kdesc));
    if (x.port_file) { /* written once ready, atomically: a reader sees no file or the whole port */
        char pt[32];
        int pn = snprintf(pt, sizeof pt, "%d\n", jr_server_port(s));
        if ((st = jr_write_atomic(x.port_file, pt, (size_t)pn))) {
            jr_server_stop(s, 0);
            jr_textgen_close(&t);
            return cli_fail(cmd, jr_fail_ctx(st, "--port-file"));
        }
    }
    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "judgerl serve: %s: finishing running requests (up to %g s)\n", sig == SIGTERM ? "SIGTERM" : "SIGINT", x.drain);
    jr_server_stop(s, x.drain);
    jr_textgen_close(&t);
    fprintf(stderr, "judgerl serve: stopped\n");
    return CLI_OK;
}
