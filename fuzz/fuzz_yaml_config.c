/* fuzz_yaml_config.c - libFuzzer target: YAML parsing and config validation never crash or leak */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/config.h"

static const jr_cfg_field sub[] = {
    {"url", JR_CFG_STRING, NULL, "", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};
static const jr_cfg_field fields[] = {
    {"a.b", JR_CFG_INT, "1", "", NULL, NULL, 0, 10},
    {"a.c", JR_CFG_ENUM, "x", "", "x|y", NULL, 0, 0},
    {"a.d", JR_CFG_OBJLIST, "[]", "", NULL, sub, 0, 0},
    {"e", JR_CFG_ANY, "{}", "", NULL, NULL, 0, 0},
    {"f", JR_CFG_LIST, "[]", "", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    const jr_cfg_field *const tables[] = {fields, NULL};
    jr_config c;
    if (jr_config_load_string(&c, text, "fuzz", 0, NULL, tables) == JR_OK) {
        char *d = jr_config_dump(&c);
        free(d);
        jr_config_free(&c);
    }
    free(text);
    return 0;
}
