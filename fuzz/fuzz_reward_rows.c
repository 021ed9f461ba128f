/* fuzz_reward_rows.c - libFuzzer target: serve-reward's request parser (OpenRLHF, slime, batch
 * shapes) never crashes or leaks on any body */
#include <stdint.h>
#include <string.h>

#include "judgerl/reward_service.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* the first byte picks the protocol; the rest is the body */
    if (size == 0) return 0;
    json_t *rows;
    char msg[600];
    if (jr_rsvc_parse_rows((jr_rsvc_protocol)(data[0] % 3), (const char *)data + 1, size - 1, &rows, msg, sizeof msg) == 0) {
        size_t n = 0;
        for (size_t i = 0; i < json_array_size(rows); i++) /* touch what the scorer reads */
            n += json_string_length(json_object_get(json_array_get(rows, i), "response")) +
                 (json_object_get(json_array_get(rows, i), "reference") != NULL);
        (void)n;
        json_decref(rows);
    } else {
        (void)strlen(msg);
    }
    return 0;
}
