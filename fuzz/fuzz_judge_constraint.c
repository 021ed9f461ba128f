/* fuzz_judge_constraint.c - libFuzzer target: judge.constraint parsing, the regex -> llama.cpp
 * GBNF translation and the answer check never crash or leak on any input */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "judge/dialect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* the input is "REGEX\0ANSWER" (or just a regex) */
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = 0;
    const char *answer = strlen(s) < size ? s + strlen(s) + 1 : "";
    char err[200];
    char *g = jr_gbnf_from_regex(s, err, sizeof err);
    free(g);
    json_t *v = json_pack("{s:s}", "regex", s);
    jr_judge_constraint c;
    if (v && jr_judge_constraint_parse(v, "judge.constraint", &c) == JR_OK) {
        char why[128];
        (void)jr_judge_constraint_check(&c, answer, why, sizeof why);
        jr_server_info info = {.kind = JR_KIND_LLAMACPP};
        json_t *f = NULL;
        int wrapped;
        if (jr_judge_constraint_fields(&c, &info, &f, &wrapped) == JR_OK) json_decref(f);
        jr_judge_constraint_free(&c);
    }
    json_decref(v);
    json_t *ch = json_pack("[s,s]", s, answer);
    if (ch) {
        g = jr_gbnf_from_choices(ch);
        free(g);
        json_decref(ch);
    }
    free(s);
    return 0;
}
