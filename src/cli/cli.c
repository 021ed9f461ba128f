/* cli.c - shared helpers of the subcommands: error lines, exit codes, config loading */
#include "cli/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    jr_status st = jr_config_load(cfg, file, n_over, over, tables);
    free(over);
    if (st) return cli_fail(cmd, st);
    if (*print_only) {
        char *txt = jr_config_dump(cfg);
        fputs(txt ? txt : "", stdout);
        free(txt);
    }
    return CLI_OK;
}
