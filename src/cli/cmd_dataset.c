/* cmd_dataset.c - `judgerl dataset`: check a JSONL dataset (rows, fields, bad lines, split, order);
 * `dataset convert`: HumanEval or GSM8K files as judgerl rows */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/dataset.h"
#include "judgerl/eval.h"
#include "judgerl/genrows.h"

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

static const char *convert_usage =
    "usage: judgerl dataset convert --from humaneval|gsm8k --input FILE [--output OUT.jsonl]\n"
    "\n"
    "Writes one judgerl row per problem (docs/EVAL.md), to OUT.jsonl (atomically) or stdout:\n"
    "  humaneval  HumanEval.jsonl[.gz] -> {id, problem: prompt, prompt, answer: canonical_solution,\n"
    "             type: \"code\", entry_point, test}   (test is hidden: only code_tests reads it)\n"
    "  gsm8k      {question, answer: worked solution + \"#### N\"} -> {id, problem, prompt,\n"
    "             answer: N, type: \"math\", solution}\n"
    "The rows feed `judgerl train` (data.train), `grade` and `eval`.\n";

/* `dataset convert`: HumanEval or GSM8K files as judgerl rows. */
static int do_convert(int argc, char **argv) {
    const char *cmd = "dataset convert";
    if (cli_wants_help(argc, argv)) { fputs(convert_usage, stdout); return CLI_OK; }
    const char *from = NULL, *in = NULL, *out = NULL;
    const jr_arg spec[] = {JR_ARG_S("--from", &from), JR_ARG_S("--input", &in), JR_ARG_S("--output", &out), JR_ARGS_END};
    int rc = cli_flags(cmd, spec, argc, argv, "unexpected argument '%s'");
    if (rc) return rc;
    if (!from || !in) return cli_usage(cmd, "--from and --input are required");
    if (strcmp(from, "humaneval") && strcmp(from, "gsm8k")) return cli_usage(cmd, "--from '%s': use humaneval or gsm8k", from);
    json_t *rows;
    jr_status st = jr_rows_load(from, in, &rows);
    if (st) return cli_fail(cmd, st);
    size_t n = json_array_size(rows);
    st = jr_genrows_write(rows, out, stdout);
    json_decref(rows);
    if (st) return cli_fail(cmd, st);
    if (out) fprintf(stderr, "judgerl dataset convert: %zu rows -> %s\n", n, out);
    return CLI_OK;
}

int cmd_dataset(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "convert")) return do_convert(argc - 1, argv + 1);
    if (cli_wants_help(argc, argv)) { usage(); return CLI_OK; }
    long show = 10;
    int as_json = 0, print = 0;
    /* flags become data.* / run.seed overrides; paths are quoted (taken literally) */
    const jr_arg spec[] = {
        JR_ARG_KQ("--input", "data.train"), JR_ARG_KQ("--validation", "data.validation"),
        JR_ARG_K("--validation-frac", "data.validation_frac"), JR_ARG_K("--seed", "run.seed"),
        JR_ARG_K("--on-bad-line", "data.on_bad_line"), JR_ARG_K("--max-rows", "data.max_rows"),
        JR_ARG_B("--json", &as_json, 1), JR_ARG_L("--show", &show, 0, 1L << 40), JR_ARG_B("--print-config", &print, 1),
        JR_ARGS_END};
    jr_args a;
    int rc = cli_args("dataset", &a, spec, argc, argv, argc, 1, "unknown option '%s'");
    /* cli_load_config's arguments: the file, the overrides, --print-config */
    char **cargs = rc ? NULL : calloc((size_t)argc + 3, sizeof *cargs);
    int n = 0;
    if (!rc && !cargs) rc = cli_fail("dataset", jr_fail(JR_ENOMEM, "out of memory"));
    if (!rc) {
        cargs[n++] = argv[0];
        for (int i = 0; i < a.n_pos; i++) cargs[n++] = a.pos[i];
        for (int i = 0; i < a.n_over; i++) cargs[n++] = a.over[i];
        if (print) cargs[n++] = "--print-config";
    }
    jr_config cfg;
    int print_only = 0;
    if (!rc && !(rc = cli_load_config("dataset", n, cargs, 1, dataset_tables, &cfg, &print_only))) {
        jr_data_opts o;
        jr_data_opts_from_config(&o, &cfg);
        jr_data_check_opts co = {.show = show, .as_json = as_json, .max_warn = 10, .out = stdout, .warn = stderr,
                                 .prefix = "judgerl dataset: "};
        jr_status st = print_only ? JR_OK : jr_data_check(&o, &co);
        if (st) rc = cli_fail("dataset", st);
        jr_config_free(&cfg);
    }
    free(cargs);
    jr_args_free(&a);
    return rc;
}
