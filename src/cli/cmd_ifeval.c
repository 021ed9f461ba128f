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
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "--input") || !strcmp(a, "--prompts") || !strcmp(a, "--output-dir")) && i + 1 >= argc)
            return cli_usage("ifeval", "%s needs a value (see judgerl ifeval --help)", a);
        if (!strcmp(a, "--input")) input = argv[++i];
        else if (!strcmp(a, "--prompts")) prompts = argv[++i];
        else if (!strcmp(a, "--output-dir")) outdir = argv[++i];
        else if (!strcmp(a, "--breakdown")) breakdown = 1;
        else return cli_usage("ifeval", "unknown argument '%s' (see judgerl ifeval --help)", a);
    }
    if (!input) return cli_usage("ifeval", "--input FILE.jsonl is required (see judgerl ifeval --help)");
    jr_ifeval_file f;
    jr_status st = jr_ifeval_file_score(&f, input, prompts, stderr, "judgerl ifeval: ");
    if (st) return cli_fail("ifeval", st);
    for (int m = 0; m < 2; m++) {
        size_t p_ok, i_ok, i_tot;
        jr_ifeval_file_accuracy(&f, m, &p_ok, &i_ok, &i_tot);
        const char *tag = m ? "loose" : "strict";
        printf("%s prompt-level: %.4f (%zu/%zu)\n", tag, (double)p_ok / f.n_rows, p_ok, f.n_rows);
        printf("%s instruction-level: %.4f (%zu/%zu)\n", tag, i_tot ? (double)i_ok / i_tot : 0.0, i_ok, i_tot);
    }
    if (breakdown)
        for (int m = 0; m < 2; m++) jr_ifeval_file_breakdown(stdout, &f, m);
    if (outdir) st = jr_ifeval_file_write(&f, outdir);
    if (!st && f.n_bad) fprintf(stderr, "judgerl ifeval: %zu malformed row(s) skipped, %zu scored\n", f.n_bad, f.n_rows);
    jr_ifeval_file_free(&f);
    return st ? cli_fail("ifeval", st) : CLI_OK;
}
