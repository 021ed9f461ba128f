/* config.h - YAML configuration with dotted key=value overrides, typed defaults and validation */
#ifndef JUDGERL_CONFIG_H
#define JUDGERL_CONFIG_H

#include <stdint.h>
#include <jansson.h>

#include "judgerl/status.h"

/* The type of a configuration value. */
typedef enum {
    JR_CFG_BOOL,
    JR_CFG_INT,
    JR_CFG_FLOAT,
    JR_CFG_STRING,  /* a string, or null when the default is "null" */
    JR_CFG_ENUM,    /* a string from `choices` ("a|b|c") */
    JR_CFG_LIST,    /* a list of scalars (strings or numbers) */
    JR_CFG_OBJLIST, /* a list of mappings, each checked against `sub` */
    JR_CFG_ANY      /* any YAML value, passed through unchecked (e.g. judge.extra_body) */
} jr_cfg_type;

/* One row of a module's table of options. Each module owns one table (an array ended by a row
 * with key NULL) with full dotted keys, e.g. {"trainer.lr", JR_CFG_FLOAT, "1e-4", ...}. */
typedef struct jr_cfg_field {
    const char *key;       /* dotted path, e.g. "trainer.lr"; inside `sub` tables: relative */
    jr_cfg_type type;
    const char *def;       /* default as YAML text ("0.001", "true", "null", "[]"); NULL = required */
    const char *doc;       /* one line for --print-config and docs */
    const char *choices;   /* JR_CFG_ENUM: "sft|grpo|rloo|distill" */
    const struct jr_cfg_field *sub; /* JR_CFG_OBJLIST: schema of each element */
    double min, max;       /* JR_CFG_INT/FLOAT: allowed range when min < max */
} jr_cfg_field;

/* A loaded, validated configuration: every field of the tables has a value of its type. */
typedef struct jr_config {
    json_t *root;   /* nested mappings in table order; owned */
    char *source;   /* the YAML file name, or "<defaults>" */
    char *notes;    /* "note: ..." lines (keys given under TRL / PEFT / verl names and mapped), or NULL */
} jr_config;

/* Loads `yaml_path` (NULL for defaults only), applies `overrides` ("a.b=value", the value parsed
 * as YAML), validates against the NULL-terminated list of `tables` and fills defaults.
 * Keys under TRL / PEFT / verl names (learning_rate, lora.r, actor_rollout_ref.rollout.n, ...; at any
 * depth) that mean the same are mapped to judgerl's key, each with a line in c->notes; those whose
 * meaning differs (num_train_epochs) are refused naming the key to use. A list lora.target_modules
 * (PEFT's form) is joined with commas.
 * Unknown keys are rejected with their path and the nearest valid name; type and range errors
 * name the key and the file or override. On error *c is left empty. */
jr_status jr_config_load(jr_config *c, const char *yaml_path, int n_overrides, char *const *overrides,
                         const jr_cfg_field *const *tables);

/* Same, from YAML text (`name` is used in messages). */
jr_status jr_config_load_string(jr_config *c, const char *yaml_text, const char *name, int n_overrides,
                                char *const *overrides, const jr_cfg_field *const *tables);

void jr_config_free(jr_config *c);

/* Typed getters for keys of the tables. After a successful load every key of the loaded tables
 * exists with its type. A key that is not there (misspelt, or its table was not loaded) or has
 * another type returns 0 / NULL and is recorded on this thread; jr_cfg_check reports it. They
 * are meant for the `*_opts_from_config` functions only: library code takes opts structs. */
int64_t jr_cfg_int(const jr_config *c, const char *key);
double jr_cfg_float(const jr_config *c, const char *key);
int jr_cfg_bool(const jr_config *c, const char *key);
const char *jr_cfg_str(const jr_config *c, const char *key); /* NULL when the value is null */
json_t *jr_cfg_json(const jr_config *c, const char *key);    /* borrowed */
/* 1 when `key` has a value in c (its table was loaded); records nothing. */
int jr_cfg_has(const jr_config *c, const char *key);
/* JR_EINVAL naming the config and the first key a getter could not serve since the last check on
 * this thread (then clears it); JR_OK when every read succeeded. Every `*_opts_from_config` ends
 * with `return jr_cfg_check(c);` so a typo is an error where the config is read. */
jr_status jr_cfg_check(const jr_config *c);

/* Every effective value as YAML text that jr_config_load reads back (caller frees). */
char *jr_config_dump(const jr_config *c);

/* Parses YAML text into a JSON value (mappings -> objects, sequences -> arrays, plain scalars
 * resolved as YAML 1.2 core: null, bool, int, float, else string). `name` is used in messages. */
jr_status jr_yaml_parse(const char *text, size_t len, const char *name, json_t **out);

/* Levenshtein distance, used for "did you mean" hints. */
int jr_edit_distance(const char *a, const char *b);



/* Options every run shares (seed, output directory). */
extern const jr_cfg_field jr_run_cfg[];

#endif
