/* fuzz_hfconfig.c - libFuzzer target: config.json / generation_config.json parsing, saving and the tensor list */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/hfmodel.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    jr_model_config c;
    if (jr_model_config_parse(&c, (const char *)data, size, "config.json") == JR_OK) {
        char *txt = jr_model_config_to_json(&c);
        jr_model_config c2;
        /* what we save must read back */
        if (txt && jr_model_config_parse(&c2, txt, strlen(txt), "saved") != JR_OK) abort();
        if (txt) jr_model_config_free(&c2);
        free(txt);
        jr_model_tensor *t;
        int n;
        if (jr_model_tensors(&c, &t, &n) == JR_OK) free(t);
        jr_model_config_free(&c);
    }
    jr_generation_config g;
    if (jr_generation_config_parse(&g, (const char *)data, size, "generation_config.json") == JR_OK) {
        free(jr_generation_config_to_json(&g));
        jr_generation_config_free(&g);
    }
    return 0;
}
