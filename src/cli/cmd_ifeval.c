/* cmd_ifeval.c - `judgerl ifeval`: scores IFEval responses strict and loose, like the official tool (verify/ifeval_file.c) */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/ifeval.h"

static const char *usage_text =
    "usage: judgerl ifeval --input RESPONSES.jsonl [--prompts input_data.jsonl] [--output-dir DIR] [--breakdown]\n"
    "\n"
    "Scores IFEval responses with the 25 instruction checkers, strict and loose, and prints the\n"
    "prompt-level and instruction-level accuracies of both modes.\n"
    "  --input FILE       JSONL rows with prompt, response, instruction_id_list, kwargs; with\n"
    "                     --prompts, rows with prompt and response only (joined by prompt text)\n"
    "  --prompts FILE     the benchmark's input_data.jsonl (key, prompt, instruction_id_list, kwargs)\n"
    "  --output-dir DIR   write DIR/eval_results_strict.jsonl and DIR/eval_results_loose.jsonl\n"
    "  --breakdown        also print the accuracy per instruction group and per instruction\n"
    "A malformed row is reported on stderr with its line number and skipped; the exit status is 0\n"
    "when at least one row was scored.\n";

int cmd_ifeval(int argc, char **argv) {
    const char *input = NULL, *prompts = NULL, *outdir = NULL;
    int breakdown = 0;
    if (cli_wants_help(argc, argv)) { fputs(usage_text, stdout); return CLI_OK; }
    const jr_arg spec[] = {JR_ARG_S("--input", &input), JR_ARG_S("--prompts", &prompts), JR_ARG_S("--output-dir", &outdir),
                           JR_ARG_B("--breakdown", &breakdown, 1), JR_ARGS_END};
    int rc = cli_flags("ifeval", spec, argc, argv, "unknown argument '%s' (see judgerl ifeval --help)");
    if (rc) return rc;
    if (!input) return cli_usage("ifeval", "--input FILE.jsonl is required (see judgerl ifeval --help)");
    jr_ifeval_file f;
    jr_status st = jr_ifeval_file_score(&f, input, prompts, stderr, "judgerl ifeval: ");
    if (st) return cli_fail("ifeval", st);
    jr_ifeval_file_print(stdout, &f, breakdown);
    if (outdir) st = jr_ifeval_file_write(&f, outdir);
    if (!st && f.n_bad) fprintf(stderr, "judgerl ifeval: %zu malformed row(s) skipped, %zu scored\n", f.n_bad, f.n_rows);
    jr_ifeval_file_free(&f);
    return st ? cli_fail("ifeval", st) : CLI_OK;
}
