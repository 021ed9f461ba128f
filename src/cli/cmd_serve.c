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
    "  Serves POST /v1/chat/completions and /v1/completions (stream or not), GET /v1/models, /health\n"
    "  (503 while loading) and /metrics. --api-key-env NAME requires 'Authorization: Bearer $NAME' on\n"
    "  /v1/. --port 0 picks a free port; the address is printed on stderr. SIGTERM or SIGINT stop\n"
    "  taking requests (503), finish the running ones for up to --drain-timeout seconds, cancel the\n"
    "  rest and exit 0. --request-timeout S cancels a request S seconds after it arrived (504; 0 = no\n"
    "  limit). --max-tokens N caps a request's max_tokens (default: the context, as vLLM; a request\n"
    "  without max_tokens gets what fits, at most 512). A connection must send its headers within --header-timeout and its body within\n"
    "  --body-timeout seconds; one client address holds at most --max-per-client connections that\n"
    "  have not yet sent a complete request (default --max-connections / 2). See docs/SERVE.md.\n";

static jr_status tg_encode(void *tok, const char *text, size_t len, int32_t **ids, int *n) {
    return jr_textgen_encode(tok, text, len, ids, n);
}

static jr_status tg_chat(void *tok, int n, const char *const *roles, const char *const *contents, int32_t **ids, int *n_ids) {
    return jr_textgen_encode_chat(tok, n, roles, contents, ids, n_ids);
}

static int num(const char *cmd, const char *flag, const char *v, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || *end || x < lo || x > hi) {
        cli_usage(cmd, "%s: expected an integer in [%ld, %ld], got '%s'", flag, lo, hi, v ? v : "");
        return -1;
    }
    *out = x;
    return 0;
}

static int seconds(const char *cmd, const char *flag, const char *v, double lo, double *out) {
    char *end;
    double x = v ? strtod(v, &end) : 0;
    if (!v || *end || !(x >= lo) || x > 1e7) {
        cli_usage(cmd, "%s: expected seconds >= %g, got '%s'", flag, lo, v ? v : "");
        return -1;
    }
    *out = x;
    return 0;
}

int cmd_serve(int argc, char **argv) {
    const char *cmd = "serve";
    if (cli_wants_help(argc, argv)) { fputs(usage_text, stdout); return CLI_OK; }
    const char *model = NULL, *host = "127.0.0.1", *key_env = NULL, *name = NULL, *tokenizer = "auto";
    long port = 8000, parallel = 4, max_tokens = 0, ctx = 0, max_queue = 64, max_body = 1 << 20, seed = 0;
    long max_conn = 512, per_client = 0;
    const char *alias[16];
    int n_alias = 0;
    double drain = 60, req_timeout = 0, hdr_timeout = 10, body_timeout = 30;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (!strcmp(a, "--model")) model = v;
        else if (!strcmp(a, "--host")) host = v;
        else if (!strcmp(a, "--api-key-env")) key_env = v;
        else if (!strcmp(a, "--served-model-name")) { /* NAME [NAME...] as vLLM's: the first answers, all are accepted */
            if (!v || v[0] == '-') return cli_usage(cmd, "%s needs a value", a);
            for (;;) {
                if (!name) name = v;
                else if (n_alias < (int)(sizeof alias / sizeof *alias)) alias[n_alias++] = v;
                else return cli_usage(cmd, "%s: at most %d names", a, (int)(sizeof alias / sizeof *alias) + 1);
                if (i + 2 >= argc || argv[i + 2][0] == '-') break;
                v = argv[++i + 1];
            }
        }
        else if (!strcmp(a, "--tokenizer")) tokenizer = v;
        else if (!strcmp(a, "--port")) bad = num(cmd, a, v, 0, 65535, &port);
        else if (!strcmp(a, "--parallel")) bad = num(cmd, a, v, 1, 1024, &parallel);
        else if (!strcmp(a, "--max-tokens")) bad = num(cmd, a, v, 1, 1 << 20, &max_tokens);
        else if (!strcmp(a, "--ctx")) bad = num(cmd, a, v, 2, 1 << 20, &ctx);
        else if (!strcmp(a, "--max-queue")) bad = num(cmd, a, v, 1, 1 << 20, &max_queue);
        else if (!strcmp(a, "--max-body")) bad = num(cmd, a, v, 1024, 1L << 30, &max_body);
        else if (!strcmp(a, "--seed")) bad = num(cmd, a, v, 0, 1L << 62, &seed);
        else if (!strcmp(a, "--max-connections")) bad = num(cmd, a, v, 1, 65536, &max_conn);
        else if (!strcmp(a, "--max-per-client")) bad = num(cmd, a, v, 1, 65536, &per_client);
        else if (!strcmp(a, "--drain-timeout")) bad = seconds(cmd, a, v, 0, &drain);
        else if (!strcmp(a, "--request-timeout")) bad = seconds(cmd, a, v, 0, &req_timeout);
        else if (!strcmp(a, "--header-timeout")) bad = seconds(cmd, a, v, 0.1, &hdr_timeout);
        else if (!strcmp(a, "--body-timeout")) bad = seconds(cmd, a, v, 0.1, &body_timeout);
        else return cli_usage(cmd, "unknown argument '%s' (see judgerl serve --help)", a);
        if (bad) return CLI_USAGE;
        if (!v) return cli_usage(cmd, "%s needs a value", a);
        i++;
    }
    if (!model) return cli_usage(cmd, "--model DIR is required (see judgerl serve --help)");
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
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    jr_serve_opts o = {0};
    o.host = host;
    o.port = (int)port;
    o.api_key = key;
    o.model_name = name;
    o.aliases = alias;
    o.n_aliases = n_alias;
    o.parallel = (int)parallel;
    o.max_tokens = (int)max_tokens;
    o.max_queue = (int)max_queue;
    o.max_body = (size_t)max_body;
    o.seed = (uint64_t)seed;
    o.max_connections = (int)max_conn;
    o.max_per_client = (int)per_client;
    o.request_timeout = req_timeout;
    o.header_timeout = hdr_timeout;
    o.body_timeout = body_timeout;
    jr_server *s;
    jr_status st = jr_server_start(&s, &o);
    if (st) return cli_fail(cmd, st);
    fprintf(stderr, "judgerl serve: listening on http://%s:%d (loading %s)\n", host, jr_server_port(s), model);
    jr_textgen t;
    char mdesc[1024];
    if ((st = cli_textgen_open(&t, model, tokenizer, (int)parallel, (int)ctx, mdesc, sizeof mdesc))) {
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
    fprintf(stderr, "judgerl serve: ready: model '%s' (fingerprint %.16s), %d slots of %d positions\n", name, fingerprint,
            t.lm.n_slots, t.lm.max_ctx);
    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "judgerl serve: %s: finishing running requests (up to %g s)\n", sig == SIGTERM ? "SIGTERM" : "SIGINT", drain);
    jr_server_stop(s, drain);
    jr_textgen_close(&t);
    fprintf(stderr, "judgerl serve: stopped\n");
    return CLI_OK;
}
