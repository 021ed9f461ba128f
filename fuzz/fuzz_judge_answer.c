/* fuzz_judge_answer.c - libFuzzer target: judge answers (JSON bodies, SSE streams), error bodies,
 * reasoning stripping, [RESULT] parsing and template rendering never crash or leak */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "judge/response.h"
#include "judgerl/judge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    jr_answer a;
    char why[300], msg[400];
    if (jr_answer_decode(text, size, &a, why, sizeof why) == 0) {
        char *s = jr_judge_strip_reasoning(a.content);
        int n;
        if (s) jr_judge_parse_result(s, 1, 10, &n, why, sizeof why);
        free(s);
        jr_answer_free(&a);
    }
    jr_answer_error_message(text, size, msg, sizeof msg);
    char *s = jr_judge_strip_reasoning(text);
    int n;
    jr_judge_parse_result(text, 1, 5, &n, why, sizeof why);
    free(s);
    json_t *row = json_pack("{s:s,s:i,s:n}", "prompt", "p", "n", 3, "z");
    char *out = NULL;
    if (jr_template_render(text, row, &out) == JR_OK) free(out);
    json_decref(row);
    free(text);
    return 0;
}
