/* fuzz_ifeval.c - libFuzzer target: every IFEval checker, strict and loose, on arbitrary bytes
 * (invalid UTF-8 included) never crashes, reads out of bounds or leaks */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/ifeval.h"

/* valid kwargs for each instruction, in jr_ifeval_instruction_name order */
static const char *const kwargs[JR_IFEVAL_N_INSTRUCTIONS] = {
    "{\"keywords\": [\"a\", \"the\"]}",
    "{\"keyword\": \"is\", \"frequency\": 2, \"relation\": \"at least\"}",
    "{\"forbidden_words\": [\"and\"]}",
    "{\"letter\": \"e\", \"let_frequency\": 3, \"let_relation\": \"less than\"}",
    "{\"language\": \"en\"}",
    "{\"num_sentences\": 3, \"relation\": \"at least\"}",
    "{\"num_paragraphs\": 2}",
    "{\"num_words\": 10, \"relation\": \"less than\"}",
    "{\"num_paragraphs\": 2, \"nth_paragraph\": 2, \"first_word\": \"so\"}",
    "{\"num_placeholders\": 1}",
    "{\"postscript_marker\": \"P.S.\"}",
    "{\"num_bullets\": 2}",
    "{}",
    "{\"num_highlights\": 2}",
    "{\"section_spliter\": \"Section\", \"num_sections\": 2}",
    "{}", "{}", "{}",
    "{\"prompt_to_repeat\": \"Say hi.\"}",
    "{\"end_phrase\": \"Any other questions?\"}",
    "{}",
    "{\"capital_frequency\": 2, \"capital_relation\": \"at least\"}",
    "{}", "{}", "{}",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *s = (const char *)data;
    for (int i = 0; i < JR_IFEVAL_N_INSTRUCTIONS; i++) {
        json_t *kw = json_loads(kwargs[i], 0, NULL);
        jr_ifeval_instr *ins = NULL;
        if (jr_ifeval_instr_new(jr_ifeval_instruction_name(i), kw, NULL, &ins) == JR_OK) {
            (void)jr_ifeval_instr_check(ins, s, size, JR_IFEVAL_STRICT);
            (void)jr_ifeval_instr_check(ins, s, size, JR_IFEVAL_LOOSE);
            jr_ifeval_instr_free(ins);
        } else {
            abort(); /* the kwargs above are valid: a failure here is a bug */
        }
        json_decref(kw);
    }
    (void)jr_ifeval_count_sentences(s, size);
    (void)jr_ifeval_count_capital_words(s, size);
    return 0;
}
