/* fuzz_jsonl.c - libFuzzer target: the JSONL reader and dataset index never crash or leak on any bytes */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <jansson.h>

#include "judgerl/dataset.h"

static void ignore(void *ud, const char *msg) { (void)ud; (void)msg; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[] = "/tmp/fuzz-jsonl-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return 0;
    if (write(fd, data, size) != (ssize_t)size) { close(fd); unlink(path); return 0; }
    close(fd);
    jr_data_opts o = {.train = path, .validation_frac = size & 1 ? 0.3 : 0, .shuffle = 1, .seed = size,
                      .on_bad_line = size & 2 ? JR_BAD_LINE_FAIL : JR_BAD_LINE_SKIP, .on_bad = ignore};
    jr_data *d;
    if (jr_data_open(&d, &o) == JR_OK) {
        for (size_t i = 0; i < 2 * jr_data_n_train(d) && i < 64; i++) {
            json_t *row;
            if (jr_data_next(d, &row, NULL) == JR_OK) json_decref(row);
        }
        for (size_t i = 0; i < jr_data_n_val(d); i++) {
            json_t *row;
            if (jr_data_val_get(d, i, &row, NULL) == JR_OK) json_decref(row);
        }
        jr_data_close(d);
    }
    unlink(path);
    return 0;
}
