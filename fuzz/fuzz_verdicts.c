/* fuzz_verdicts.c - libFuzzer target: every protocol's verdict parser and the answer normaliser
 * never crash, leak or read out of bounds on arbitrary judge text */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/protocols.h"
#include "judgerl/verify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    int v, met[4];
    double d;
    jr_reference_parse(text, &v);
    jr_rubric_parse_one(text, &v);
    jr_rubric_parse_batch(text, 4, met);
    jr_pairwise_parse(text, &v);
    jr_verif_parse(text, &v);
    static const char *const labels[] = {"Yes", "No", "Maybe"};
    jr_label_parse(text, labels, 3, &v, &d);
    json_t *lp = json_loads(text, 0, NULL);
    if (lp) {
        char why[128];
        jr_label_logprob_confidence(lp, labels, 3, 5.0, &v, &d, NULL, why, sizeof why);
        json_decref(lp);
    }
    json_decref(jr_verdict_json(text));
    char *a = jr_answer_extract(text), *n = jr_answer_normalize(text);
    /* The first half against the second as two answers. */
    char *half = strndup(text, size / 2);
    if (half) jr_answer_equiv(half, text + strlen(half));
    free(half);
    free(a);
    free(n);
    jr_repetition_rate(text, 3);
    free(text);
    return 0;
}
