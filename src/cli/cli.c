/* cli.c - shared helpers of the subcommands: error lines, exit codes, config loading */
#include "cli/cli.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <jansson.h>

#include "judgerl/clock.h"
#include "judgerl/fsutil.h"
#include "judgerl/lora.h"

int cli_fail(const char *cmd, jr_status st) {
    const char *m = jr_errmsg();
    fprintf(stderr, "judgerl %s: %s\n", cmd, m && *m ? m : jr_status_name(st));
    if (st == JR_EINTERNAL) return CLI_BUG;
    return st == JR_OK ? CLI_OK : CLI_FAIL;
}

int cli_usage(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "judgerl %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see judgerl %s --help)\n", cmd);
    va_end(ap);
    return CLI_USAGE;
}

int cli_wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 1;
    return 0;
}

int cli_load_config(const char *cmd, int argc, char **argv, int takes_file, const jr_cfg_field *const *tables,
                    jr_config *cfg, int *print_only) {
    const char *file = NULL;
    char **over = calloc((size_t)argc + 1, sizeof *over);
    int n_over = 0;
    *print_only = 0;
    if (!over) return cli_fail(cmd, jr_fail(JR_ENOMEM, "out of memory"));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--print-config")) *print_only = 1;
        else if (a[0] == '-' && a[1] == '-') { free(over); return cli_usage(cmd, "unknown option '%s'", a); }
        else if (strchr(a, '=')) over[n_over++] = argv[i];
        else if (takes_file && !file) file = a;
        else { free(over); return cli_usage(cmd, "unexpected argument '%s' (overrides are key=value)", a); }
    }
    int rc = cli_config_load(cmd, file, n_over, over, tables, cfg, *print_only);
    free(over);
    return rc;
}

int cli_config_load(const char *cmd, const char *file, int n_over, char **over, const jr_cfg_field *const *tables,
                    jr_config *cfg, int print) {
    jr_status st = jr_config_load(cfg, file, n_over, over, tables);
    if (st) return cli_fail(cmd, st);
    if (cfg->notes) fputs(cfg->notes, stderr); /* keys given under TRL / PEFT / verl names */
    if (print) {
        char *txt = jr_config_dump(cfg);
        fputs(txt ? txt : "", stdout);
        free(txt);
    }
    return CLI_OK;
}

int cli_kv_opts(const char *cmd, const cli_kv_args *a, jr_kv_opts *o) {
    *o = jr_kv_opts_default();
    const char *c = a->compute ? a->compute : "auto", *k = a->kv_cache ? a->kv_cache : "float32";
    if (strcmp(c, "auto") && strcmp(c, "float32") && strcmp(c, "bfloat16"))
        return cli_usage(cmd, "--compute: expected auto, float32 or bfloat16, got '%s'", c);
    if (strcmp(k, "float32") && strcmp(k, "bfloat16"))
        return cli_usage(cmd, "--kv-cache: expected float32 or bfloat16, got '%s'", k);
    if (a->deterministic && strcmp(a->deterministic, "0") && strcmp(a->deterministic, "1"))
        return cli_usage(cmd, "--deterministic: expected 1 or 0, got '%s'", a->deterministic);
    o->weights = jr_model_compute_resolve(c);
    o->kv_bf16 = !strcmp(k, "bfloat16");
    o->deterministic = !a->deterministic || !strcmp(a->deterministic, "1");
    return CLI_OK;
}

int cli_args(const char *cmd, jr_args *a, const jr_arg *spec, int argc, char **argv, int max_pos, int overrides,
             const char *unknown) {
    jr_status st = jr_args_parse(a, spec, argc, argv, max_pos, overrides);
    if (st == JR_ENOTFOUND) return cli_usage(cmd, unknown, a->bad);
    if (st == JR_EINVAL) return cli_usage(cmd, "%s", jr_errmsg());
    return st ? cli_fail(cmd, st) : CLI_OK;
}

int cli_flags(const char *cmd, const jr_arg *spec, int argc, char **argv, const char *unknown) {
    jr_args a;
    int rc = cli_args(cmd, &a, spec, argc, argv, 0, 0, unknown);
    jr_args_free(&a);
    return rc;
}

void cli_block_stop_signals(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    pthread_sigmask(SIG_BLOCK, set, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static volatile sig_atomic_t stop_flag;
static void on_stop_signal(int sig) { (void)sig; stop_flag = 1; }

volatile sig_atomic_t *cli_stop_on_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    return &stop_flag;
}
