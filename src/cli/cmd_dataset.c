/* cmd_dataset.c - `judgerl dataset`: check a JSONL dataset (rows, fields, bad lines, split, order) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/dataset.h"

static const jr_cfg_field *const dataset_tables[] = {jr_run_cfg, jr_data_cfg, NULL};

static void usage(void) {
    printf("usage: judgerl dataset [CONFIG.yaml] [key=value ...] [--print-config]\n"
           "       judgerl dataset --input FILE.jsonl [--validation FILE.jsonl | --validation-frac F] [--seed N]\n"
           "                       [--on-bad-line skip|fail] [--max-rows N] [--show N] [--json]\n"
           "       judgerl dataset convert --from humaneval|gsm8k --input FILE [--output OUT.jsonl]   (see its --help)\n"
           "Reads a JSONL dataset the way training does (data.* options, run.seed) and prints its row\n"
           "count, the fields seen, bad lines, the train/validation split and the first rows of the\n"
           "epoch-0 training order. Skipped bad lines are warned on stderr as FILE:LINE: problem; with\n"
           "--on-bad-line fail (data.on_bad_line=fail) the first one is the error.\n");
}

/* "key='value'" with the value quoted for YAML, so any path or text survives the override parser. */
static char *quoted_override(const char *key, const char *value) {
    size_t n = strlen(key) + 2 * strlen(value) + 4;
    char *s = malloc(n);
    if (!s) return NULL;
    char *p = s + sprintf(s, "%s='", key);
    for (const char *v = value; *v; v++) {
        if (*v == '\'') *p++ = '\'';
        *p++ = *v;
    }
    *p++ = '\'';
    *p = 0;
    return s;
}

/* The command line turned into config arguments: flags become overrides, positional arguments and
 * overrides stay as they are. */
typedef struct {
    char **args, **owned; /* args[0..n_args) for cli_load_config; owned: the strings made here */
    int n_args, n_owned, as_json;
    long show;
} dataset_args;

static void dataset_args_free(dataset_args *da) {
    for (int i = 0; i < da->n_owned; i++) free(da->owned[i]);
    free(da->owned);
    free(da->args);
}

/* "key=value" for a mapped flag; paths are quoted (taken literally), numbers and words are read as YAML. */
static char *flag_override(const char *key, const char *v) {
    char *o = !strcmp(key, "data.train") || !strcmp(key, "data.validation") ? quoted_override(key, v) : NULL;
    if (!o) {
        o = malloc(strlen(key) + strlen(v) + 2);
        if (o) sprintf(o, "%s=%s", key, v);
    }
    return o;
}

/* Fills da from argv (da->args allocated even on failure: free with dataset_args_free); CLI_OK, or
 * the exit code after the message. */
static int parse_dataset_args(int argc, char **argv, dataset_args *da) {
    static const struct { const char *flag, *key; } map[] = {
        {"--input", "data.train"}, {"--validation", "data.validation"}, {"--validation-frac", "data.validation_frac"},
        {"--seed", "run.seed"}, {"--on-bad-line", "data.on_bad_line"}, {"--max-rows", "data.max_rows"},
    };
    da->args[da->n_args++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int mapped = 0;
        for (size_t m = 0; m < sizeof map / sizeof *map; m++) {
            if (strcmp(a, map[m].flag)) continue;
            mapped = 1;
            if (i + 1 >= argc) return cli_usage("dataset", "%s needs a value", a);
            char *o = flag_override(map[m].key, argv[++i]);
            if (!o) return cli_fail("dataset", jr_fail(JR_ENOMEM, "out of memory"));
            da->owned[da->n_owned++] = o;
            da->args[da->n_args++] = o;
        }
        if (mapped) continue;
        if (!strcmp(a, "--json")) da->as_json = 1;
        else if (!strcmp(a, "--show")) {
            char *end;
            if (i + 1 >= argc || (da->show = strtol(argv[i + 1], &end, 10)) < 0 || *end || !*argv[i + 1])
                return cli_usage("dataset", "--show needs a count >= 0");
            i++;
        } else da->args[da->n_args++] = argv[i];
    }
    return CLI_OK;
}

int cmd_dataset(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "convert")) return cmd_dataset_convert(argc - 1, argv + 1);
    if (cli_wants_help(argc, argv)) { usage(); return CLI_OK; }
    dataset_args da = {.args = calloc((size_t)argc + 1, sizeof *da.args), .owned = calloc((size_t)argc + 1, sizeof *da.owned),
                       .show = 10};
    if (!da.args || !da.owned) { dataset_args_free(&da); return cli_fail("dataset", jr_fail(JR_ENOMEM, "out of memory")); }
    int rc = parse_dataset_args(argc, argv, &da);
    if (rc) goto out;
    jr_config cfg;
    int print_only;
    rc = cli_load_config("dataset", da.n_args, da.args, 1, dataset_tables, &cfg, &print_only);
    if (rc || print_only) goto out;

    jr_data_opts o;
    jr_data_opts_from_config(&o, &cfg);
    jr_data_check_opts co = {.show = da.show, .as_json = da.as_json, .max_warn = 10, .out = stdout, .warn = stderr,
                             .prefix = "judgerl dataset: "};
    jr_status st = jr_data_check(&o, &co);
    if (st) rc = cli_fail("dataset", st);
    jr_config_free(&cfg);
out:
    dataset_args_free(&da);
    return rc;
}
