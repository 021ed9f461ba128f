/* cmd_forward.c - `judgerl forward`: one forward (and backward) pass over given ids, for debugging and reference tests */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "judgerl/model.h"
#include "judgerl/safetensors.h"

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
    jr_model m;
    jr_acts a;
    memset(&a, 0, sizeof a);
    float *lp = NULL;
    jr_status st = jr_model_load(&m, model);
    if (st) { free(ids); free(tg); return cli_fail("forward", st); }
    for (int i = 0; i < n && !st; i++)
        if (ids[i] < 0 || ids[i] >= m.cfg.vocab_size || (tg && tg[i] >= m.cfg.vocab_size))
            st = jr_fail(JR_EINVAL, "token id %d at position %d is outside the model's vocabulary [0, %d)",
                         ids[i] < 0 || ids[i] >= m.cfg.vocab_size ? ids[i] : tg[i], i, m.cfg.vocab_size);
    if (!st) st = jr_acts_init(&a, &m, 1, n);
    if (!st && !(lp = jr_malloc(sizeof(float) * (size_t)n))) st = JR_ENOMEM;
    double nll = 0;
    long cnt = 0;
    float *logits = NULL;
    if (!st && tg) {
        /* the logits are consumed by the backward: run the forward once more to keep them */
        st = jr_model_forward(&m, &a, ids, 1, n);
        if (!st && dump && !(logits = jr_malloc(sizeof(float) * (size_t)n * m.cfg.vocab_size))) st = JR_ENOMEM;
        if (!st && logits) memcpy(logits, a.logits, sizeof(float) * (size_t)n * m.cfg.vocab_size);
        long k = 0;
        for (int i = 0; i < n; i++) k += tg[i] >= 0;
        if (!st) st = jr_model_nll(&m, &a, ids, tg, 1, n, k ? 1.0f / (float)k : 0.0f, lp, &nll, &cnt);
        if (!st && cnt == 0) st = jr_fail(JR_EINVAL, "--targets: every target is -1, nothing to score");
        if (!st) printf("loss %.9g\n", nll / cnt);
    } else if (!st) {
        st = jr_model_forward(&m, &a, ids, 1, n);
        logits = a.logits;
    }
    if (!st && dump) {
        int ne = 1 + (tg ? m.n_tensors : 0);
        jr_st_entry *e = jr_calloc((size_t)ne, sizeof *e);
        if (!e) st = JR_ENOMEM;
        else {
            e[0].name = "logits"; e[0].ndim = 3; e[0].shape[0] = 1; e[0].shape[1] = n;
            e[0].shape[2] = m.cfg.vocab_size; e[0].data = logits;
            for (int i = 0; tg && i < m.n_tensors; i++) {
                e[1 + i].name = m.tensors[i].name;
                e[1 + i].ndim = m.tensors[i].ndim;
                e[1 + i].shape[0] = m.tensors[i].shape[0];
                e[1 + i].shape[1] = m.tensors[i].shape[1];
                e[1 + i].data = m.grads + m.offset[i];
            }
            st = jr_st_write(dump, e, ne, JR_DT_F32);
            free(e);
        }
    }
    if (st) rc = cli_fail("forward", st);
    if (logits != a.logits) free(logits);
    free(lp); free(ids); free(tg);
    jr_acts_free(&a);
    jr_model_free(&m);
    return rc;
}
