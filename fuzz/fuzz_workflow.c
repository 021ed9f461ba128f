/* fuzz_workflow.c - libFuzzer target: the workflow parser never crashes, leaks or reads past the
 * input (passed without a terminating NUL), and every text the constrained-decoding grammar
 * accepts is also accepted by the parser (a differential check: abort() on disagreement) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/workflow.h"

static jr_constraint *grammar;
static char byte_str[256][2];
static const char *bytes[256];
static int32_t lens[256];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    jr_workflow_limits lim = jr_workflow_limits_default();
    if (!grammar) {
        for (int b = 0; b < 256; b++) {
            byte_str[b][0] = (char)b;
            bytes[b] = byte_str[b];
            lens[b] = 1;
        }
        static jr_token_bytes v;
        v = (jr_token_bytes){256, bytes, lens};
        if (jr_workflow_constraint(&grammar, &v, &lim)) abort();
    }
    /* an exact-size copy so ASan sees any read past the end */
    char *text = malloc(size ? size : 1);
    if (!text) return 0;
    memcpy(text, data, size);
    jr_workflow *w = NULL;
    int parsed = jr_workflow_parse(text, size, &lim, &w) == JR_OK;
    jr_workflow_free(w);

    jr_cstate s;
    if (jr_cstate_init(&s, grammar)) abort();
    int ok = 1;
    for (size_t i = 0; i < size && ok; i++) ok = jr_constraint_advance(grammar, &s, data[i]) == JR_OK;
    if (ok && size) {
        uint8_t mask[256];
        int complete = 0;
        jr_constraint_mask(grammar, &s, mask, &complete);
        if (complete && !parsed) abort(); /* the grammar accepted what the parser rejects */
    }
    jr_cstate_free(&s);
    free(text);
    return 0;
}
