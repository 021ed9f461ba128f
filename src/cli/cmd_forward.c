/* cmd_forward.c - `judgerl forward`: one forward (and backward) pass over given ids, for debugging and reference tests */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/modeltools.h"

int cmd_forward(int argc, char **argv) {
    const char *model = NULL, *ids_s = NULL, *tg_s = NULL, *dump = NULL;
    if (cli_wants_help(argc, argv)) {
        printf("usage: judgerl forward --model DIR --ids \"1 2 3\" [--targets \"2 3 4\"] [--dump OUT.safetensors]\n"
               "Runs the model over one sequence of token ids. With --targets (one per id, -1 = not scored) it\n"
               "prints `loss <value>` (mean cross-entropy over the scored targets) and runs the backward. --dump\n"
               "writes the logits (tensor `logits`, shape (1, T, vocab)) and, with targets, the gradient of every\n"
               "parameter under the parameter's HF name (a tied lm_head is the embedding's).\n");
        return CLI_OK;
    }
    const jr_arg spec[] = {JR_ARG_S("--model", &model), JR_ARG_S("--ids", &ids_s), JR_ARG_S("--targets", &tg_s),
                           JR_ARG_S("--dump", &dump), JR_ARGS_END};
    int rc = cli_flags("forward", spec, argc, argv, "unknown argument '%s' (see judgerl forward --help)");
    if (rc) return rc;
    if (!model || !ids_s) return cli_usage("forward", "--model DIR and --ids \"...\" are required");
    int32_t *ids = NULL, *tg = NULL;
    int n = 0, nt = 0;
    if (jr_args_ints(ids_s, &ids, &n) || n == 0) {
        free(ids);
        return cli_usage("forward", "--ids: expected token ids separated by spaces or commas, got '%.60s'", ids_s);
    }
    if (tg_s && (jr_args_ints(tg_s, &tg, &nt) || nt != n)) {
        free(ids); free(tg);
        return cli_usage("forward", "--targets: expected %d ids (one per input id, -1 = not scored)", n);
    }
    jr_forward_opts o = {.model = model, .dump = dump, .ids = ids, .targets = tg, .n = n};
    jr_status st = jr_model_forward_file(&o, stdout);
    if (st) rc = cli_fail("forward", st);
    free(ids);
    free(tg);
    return rc;
}
