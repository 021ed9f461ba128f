/* fuzz_serve_request.c - libFuzzer target: the server's request parser never crashes or leaks on any body */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/serve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const jr_serve_limits lim = {8, 512, 16, 64};
    /* the first byte picks the endpoint; the rest is the body */
    if (size == 0) return 0;
    int chat = data[0] & 1;
    jr_serve_req r;
    if (jr_serve_parse_request(&r, chat, (const char *)data + 1, size - 1, &lim) == JR_OK) {
        /* touch what the server reads */
        size_t n = 0;
        for (int i = 0; i < r.n_msgs; i++) n += strlen(r.roles[i]) + strlen(r.contents[i]);
        for (int i = 0; i < r.n_stop; i++) n += strlen(r.stop[i]);
        for (int i = 0; i < r.n_choices; i++) n += strlen(r.choices[i]);
        for (int i = 0; i < r.n_bias; i++) n += (size_t)r.bias_ids[i];
        if (r.prompt) n += strlen(r.prompt);
        for (int i = 0; i < r.n_prompt_ids; i++) n += (size_t)r.prompt_ids[i];
        (void)n;
        jr_serve_req_free(&r);
    }
    return 0;
}
