/* cmd_dataset_convert.c - `judgerl dataset convert`: HumanEval or GSM8K files as judgerl rows */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "judgerl/eval.h"
#include "judgerl/genrows.h"

static const char *usage_text =
    "usage: judgerl dataset convert --from humaneval|gsm8k --input FILE [--output OUT.jsonl]\n"
    "\n"
    "Writes one judgerl row per problem (docs/EVAL.md), to OUT.jsonl (atomically) or stdout:\n"
    "  humaneval  HumanEval.jsonl[.gz] -> {id, problem: prompt, prompt, answer: canonical_solution,\n"
    "             type: \"code\", entry_point, test}   (test is hidden: only code_tests reads it)\n"
    "  gsm8k      {question, answer: worked solution + \"#### N\"} -> {id, problem, prompt,\n"
    "             answer: N, type: \"math\", solution}\n"
    "The rows feed `judgerl train` (data.train), `grade` and `eval`.\n";

int cmd_dataset_convert(int argc, char **argv) {
    const char *cmd = "dataset convert";
    if (cli_wants_help(argc, argv)) { fputs(usage_text, stdout); return CLI_OK; }
    const char *from = NULL, *in = NULL, *out = NULL;
    const jr_arg spec[] = {JR_ARG_S("--from", &from), JR_ARG_S("--input", &in), JR_ARG_S("--output", &out), JR_ARGS_END};
    jr_args args;
    int rc = cli_args(cmd, &args, spec, argc, argv, 0, 0, "unexpected argument '%s'");
    jr_args_free(&args);
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
