/* test_config.c - YAML parsing, overrides, defaults, validation messages and dump round trip */
#include "harness.h"

#include "judgerl/config.h"

static const jr_cfg_field endpoint_cfg[] = {
    {"url", JR_CFG_STRING, NULL, "base URL", NULL, NULL, 0, 0},
    {"model", JR_CFG_STRING, "\"m\"", "model name", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};

static const jr_cfg_field t_cfg[] = {
    {"trainer.algo", JR_CFG_ENUM, "sft", "algorithm", "sft|grpo|rloo", NULL, 0, 0},
    {"trainer.lr", JR_CFG_FLOAT, "1e-4", "learning rate", NULL, NULL, 0, 1},
    {"trainer.steps", JR_CFG_INT, "10", "steps", NULL, NULL, 1, 1000000},
    {"trainer.lora.rank", JR_CFG_INT, "8", "rank", NULL, NULL, 0, 0},
    {"trainer.bf", JR_CFG_BOOL, "false", "flag", NULL, NULL, 0, 0},
    {"judge.endpoints", JR_CFG_OBJLIST, "[]", "endpoints", NULL, endpoint_cfg, 0, 0},
    {"judge.extra_body", JR_CFG_ANY, "{}", "extra", NULL, NULL, 0, 0},
    {"judge.name", JR_CFG_STRING, "null", "name", NULL, NULL, 0, 0},
    {"judge.stop", JR_CFG_LIST, "[]", "stop strings", NULL, NULL, 0, 0},
    {"judge.frac", JR_CFG_FLOAT, "0", "a float whose default is written as an integer", NULL, NULL, 0, 0},
    {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
};
static const jr_cfg_field *const tables[] = {t_cfg, jr_run_cfg, NULL};

TEST(defaults_filled) {
    jr_config c;
    CHECK_OK(jr_config_load_string(&c, "", "t.yaml", 0, NULL, tables));
    CHECK_STR(jr_cfg_str(&c, "trainer.algo"), "sft");
    CHECK_NEAR(jr_cfg_float(&c, "trainer.lr"), 1e-4, 0, 1e-12);
    CHECK(jr_cfg_int(&c, "trainer.steps") == 10);
    CHECK(jr_cfg_int(&c, "trainer.lora.rank") == 8);
    CHECK(jr_cfg_bool(&c, "trainer.bf") == 0);
    CHECK(jr_cfg_str(&c, "judge.name") == NULL);
    CHECK(jr_cfg_int(&c, "run.seed") == 0);
    CHECK(json_is_real(jr_cfg_json(&c, "judge.frac"))); /* coerced like a user's value */
    char *txt = jr_config_dump(&c);
    CHECK(txt && strstr(txt, "frac: 0.0\n"));
    free(txt);
    jr_config_free(&c);
}

TEST(file_and_overrides) {
    const char *y = "trainer:\n  algo: grpo\n  lr: 3\n  lora: {rank: 16}\n"
                    "judge:\n  endpoints:\n    - url: http://a/v1\n    - {url: http://b/v1, model: q}\n"
                    "  extra_body: {chat_template_kwargs: {enable_thinking: false}}\n";
    char *over[] = {"trainer.lr=0.5", "trainer.steps=7", "judge.endpoints.1.model=z", "trainer.bf=true",
                    "judge.stop=[\"</s>\", END]"};
    jr_config c;
    CHECK_OK(jr_config_load_string(&c, y, "t.yaml", 5, over, tables));
    if (!c.root) return;
    CHECK_STR(jr_cfg_str(&c, "trainer.algo"), "grpo");
    CHECK_NEAR(jr_cfg_float(&c, "trainer.lr"), 0.5, 0, 0);
    CHECK(jr_cfg_int(&c, "trainer.steps") == 7);
    CHECK(jr_cfg_int(&c, "trainer.lora.rank") == 16);
    CHECK(jr_cfg_bool(&c, "trainer.bf") == 1);
    json_t *eps = jr_cfg_json(&c, "judge.endpoints");
    CHECK(json_array_size(eps) == 2);
    CHECK_STR(json_string_value(json_object_get(json_array_get(eps, 0), "model")), "m");
    CHECK_STR(json_string_value(json_object_get(json_array_get(eps, 1), "model")), "z");
    CHECK(json_is_false(json_object_get(json_object_get(jr_cfg_json(&c, "judge.extra_body"), "chat_template_kwargs"),
                                        "enable_thinking")));
    CHECK(json_array_size(jr_cfg_json(&c, "judge.stop")) == 2);
    /* The dump reads back to the same tree. */
    char *txt = jr_config_dump(&c);
    jr_config c2;
    CHECK_OK(jr_config_load_string(&c2, txt, "dump", 0, NULL, tables));
    if (c2.root) CHECK(json_equal(c.root, c2.root));
    free(txt);
    jr_config_free(&c2);
    jr_config_free(&c);
}

static void expect_err(const char *yaml, int n, char **over, const char *needle) {
    jr_config c;
    jr_status st = jr_config_load_string(&c, yaml, "bad.yaml", n, over, tables);
    CHECK_MSG(st != JR_OK, "expected an error containing '%s'", needle);
    CHECK_MSG(strstr(jr_errmsg(), needle) != NULL, "message '%s' lacks '%s'", jr_errmsg(), needle);
    CHECK(strchr(jr_errmsg(), '\n') == NULL);
    CHECK(c.root == NULL);
}

TEST(errors_name_the_key) {
    expect_err("trainer:\n  lerning_rate: 1\n", 0, NULL, "unknown key 'trainer.lerning_rate'");
    expect_err("trainer:\n  lrr: 1\n", 0, NULL, "did you mean 'trainer.lr'");
    expect_err("trainr:\n  lr: 1\n", 0, NULL, "bad.yaml: unknown key 'trainr'");
    expect_err("trainer: {algo: ppo}\n", 0, NULL, "expected one of sft|grpo|rloo");
    expect_err("trainer: {lr: fast}\n", 0, NULL, "trainer.lr=\"fast\": expected a number");
    expect_err("trainer: {lr: 2}\n", 0, NULL, "out of range");
    expect_err("trainer: {steps: 1.5}\n", 0, NULL, "expected an integer");
    expect_err("judge: {endpoints: [{model: x}]}\n", 0, NULL, "missing required key 'judge.endpoints[0].url'");
    expect_err("judge: {endpoints: [{url: x, modle: y}]}\n", 0, NULL, "did you mean 'model'");
    expect_err("trainer:\n  lr: 1\n  lr: 2\n", 0, NULL, "duplicate key 'lr'");
    expect_err("trainer: [1\n", 0, NULL, "bad.yaml: line");
    char *o1[] = {"trainer.lrr=1"};
    expect_err("", 1, o1, "override 'trainer.lrr=1': unknown key 'trainer.lrr'");
    char *o2[] = {"trainer.lr"};
    expect_err("", 1, o2, "expected key=value");
    expect_err("- 1\n", 0, NULL, "expected a mapping");
}

TEST(yaml_scalars) {
    json_t *v;
    const char *y = "[1, -2, 3.5, 1e-5, true, null, ~, '7', abc, 0x10]";
    CHECK_OK(jr_yaml_parse(y, strlen(y), "s", &v));
    CHECK(json_is_integer(json_array_get(v, 0)) && json_integer_value(json_array_get(v, 1)) == -2);
    CHECK(json_is_real(json_array_get(v, 2)));
    CHECK_NEAR(json_real_value(json_array_get(v, 3)), 1e-5, 0, 1e-12);
    CHECK(json_is_true(json_array_get(v, 4)));
    CHECK(json_is_null(json_array_get(v, 5)) && json_is_null(json_array_get(v, 6)));
    CHECK(json_is_string(json_array_get(v, 7)));
    CHECK_STR(json_string_value(json_array_get(v, 8)), "abc");
    CHECK(json_is_string(json_array_get(v, 9)));
    json_decref(v);
    CHECK(jr_edit_distance("kitten", "sitting") == 3);
}


/* A YAML alias bomb: level 0 is a list of ten strings, level k a list of ten aliases of level k-1. */
static char *alias_bomb(int levels) {
    char *y = malloc(4096);
    size_t o = (size_t)sprintf(y, "a0: &a0 [x,x,x,x,x,x,x,x,x,x]\n");
    for (int k = 1; k < levels; k++) {
        o += (size_t)sprintf(y + o, "a%d: &a%d [", k, k);
        for (int i = 0; i < 10; i++) o += (size_t)sprintf(y + o, "*a%d%s", k - 1, i < 9 ? "," : "]\n");
    }
    return y;
}

/* The 9 x 10 alias bomb (10^9 nodes when expanded) fails at once with a clear message; 10^6 nodes
 * (6 levels) are refused the same way (the node budget is 100,000). */
TEST(yaml_alias_bomb_refused) {
    for (int levels = 6; levels <= 9; levels += 3) {
        char *y = alias_bomb(levels);
        json_t *v = NULL;
        jr_status st = jr_yaml_parse(y, strlen(y), "bomb.yaml", &v);
        CHECK(st == JR_EFORMAT && v == NULL);
        CHECK_MSG(strstr(jr_errmsg(), "bomb.yaml") && strstr(jr_errmsg(), "expands to more than 100000 nodes"), "%s", jr_errmsg());
        json_decref(v);
        free(y);
    }
    /* a config with ordinary aliases still loads */
    const char *ok = "base: &b {lr: 0.1, steps: 3}\nrun1: *b\nrun2: *b\n";
    json_t *v = NULL;
    CHECK_OK(jr_yaml_parse(ok, strlen(ok), "ok.yaml", &v));
    CHECK(json_real_value(json_object_get(json_object_get(v, "run2"), "lr")) == 0.1);
    json_decref(v);
}

/* An error after a key was mapped from another library's name leaves *c empty: no notes either. */
TEST(error_after_alias_leaves_no_notes) {
    char *bad_eq[] = {"learning_rate=0.5", "trainer.steps"};
    char *bad_elem[] = {"learning_rate=0.5", "judge.endpoints.3.url=http://x/v1"};
    char *const *cases[] = {bad_eq, bad_elem};
    for (int i = 0; i < 2; i++) {
        jr_config c;
        CHECK(jr_config_load_string(&c, "", "t.yaml", 2, cases[i], tables) == JR_EINVAL);
        CHECK_MSG(!c.root && !c.notes, "case %d: notes '%s'", i, c.notes ? c.notes : "");
        jr_config_free(&c);
    }
    jr_config c;
    CHECK_OK(jr_config_load_string(&c, "", "t.yaml", 1, bad_eq, tables));
    CHECK(c.notes && strstr(c.notes, "'learning_rate' is TRL's name for 'trainer.lr'"));
    jr_config_free(&c);
}

/* PEFT's list form of target_modules is joined whole, however long. */
TEST(target_modules_list_joined_whole) {
    static const jr_cfg_field lora_cfg[] = {
        {"lora.target_modules", JR_CFG_STRING, "\"q_proj\"", "modules", NULL, NULL, 0, 0},
        {NULL, 0, NULL, NULL, NULL, NULL, 0, 0},
    };
    const jr_cfg_field *const lt[] = {lora_cfg, NULL};
    char yaml[4096] = "lora:\n  target_modules: [", want[4096] = "";
    for (int i = 0; i < 120; i++) {
        char m[32];
        snprintf(m, sizeof m, "layers.%d.mlp", i);
        snprintf(yaml + strlen(yaml), sizeof yaml - strlen(yaml), "%s%s", i ? ", " : "", m);
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", i ? "," : "", m);
    }
    strcat(yaml, "]\n");
    jr_config c;
    CHECK_OK(jr_config_load_string(&c, yaml, "t.yaml", 0, NULL, lt));
    CHECK(strlen(want) > 1000);
    CHECK_STR(jr_cfg_str(&c, "lora.target_modules"), want);
    jr_config_free(&c);
}

int main(void) {
    RUN(defaults_filled);
    RUN(file_and_overrides);
    RUN(errors_name_the_key);
    RUN(yaml_scalars);
    RUN(yaml_alias_bomb_refused);
    RUN(error_after_alias_leaves_no_notes);
    RUN(target_modules_list_joined_whole);
    return jt_done();
}
