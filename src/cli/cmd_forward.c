/* cmd_forward.c - `judgerl forward`: one forward (and backward) pass over given ids, for debugging and reference tests */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/modeltools.h"

/* Parses whitespace- or comma-separated integers into a new array. */
static int parse_ids(const char *s, int32_t **out, int *n) {
    int cap = 16;
    *n = 0;
    *out = malloc(sizeof(int32_t) * (size_t)cap);
    if (!*out) return -1;
    while (*s) {
        while (*s == ' ' || *s == ',' || *s == '\t' || *s == '\n') s++;
        if (!*s) break;
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < -1 || v > 0x7fffffff) return -1;
        if (*n == cap) {
            int32_t *p = realloc(*out, sizeof(int32_t) * (size_t)(cap *= 2));
            if (!p) return -1;
            *out = p;
        }
        (*out)[(*n)++] = (int32_t)v;
        s = end;
    }
    return 0;
}

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
    for (int i = 1; i < argc; i++) {
        const char **slot = !strcmp(argv[i], "--model") ? &model : !strcmp(argv[i], "--ids") ? &ids_s
                          : !strcmp(argv[i], "--targets") ? &tg_s : !strcmp(argv[i], "--dump") ? &dump : NULL;
        if (!slot) return cli_usage("forward", "unknown argument '%s' (see judgerl forward --help)", argv[i]);
        if (i + 1 >= argc) return cli_usage("forward", "%s needs a value", argv[i]);
        *slot = argv[++i];
    }
    if (!model || !ids_s) return cli_usage("forward", "--model DIR and --ids \"...\" are required");
    int32_t *ids = NULL, *tg = NULL;
    int n = 0, nt = 0, rc = CLI_OK;
    if (parse_ids(ids_s, &ids, &n) || n == 0) {
        free(ids);
        return cli_usage("forward", "--ids: expected token ids separated by spaces or commas, got '%.60s'", ids_s);
    }
    if (tg_s && (parse_ids(tg_s, &tg, &nt) || nt != n)) {
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
