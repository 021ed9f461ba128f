/* fuzz_safetensors.c - libFuzzer target: the safetensors header validator never crashes, leaks or reads out of bounds */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* a private copy, exactly `size` bytes, so ASan catches any read past the end */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    jr_safetensors st;
    if (jr_st_open_buffer(&st, buf, size, "fuzz.safetensors") == JR_OK) {
        for (int i = 0; i < st.n; i++) {
            const jr_st_tensor *t = &st.tensors[i];
            if (jr_st_find(&st, t->name) == NULL) abort(); /* every tensor is found by its name */
            if ((t->dtype == JR_DT_F32 || t->dtype == JR_DT_F16 || t->dtype == JR_DT_BF16) && t->numel <= (1 << 20)) {
                float *out = malloc((size_t)t->numel * sizeof(float) + 1);
                if (out && jr_st_read_f32(&st, t, out) != JR_OK) abort();
                free(out);
            }
        }
        jr_st_close(&st);
    }
    free(buf);
    return 0;
}
