/* test_args.c - jr_args_parse (args.h): typed flags, ranges, config-key flags, overrides, positionals, errors */
#include "harness.h"
#include "judgerl/args.h"

/* The test's command lines: argv[0] is the command's name. */
#define ARGV(...) char *argv[] = {"cmd", __VA_ARGS__}; int argc = (int)(sizeof argv / sizeof *argv)

TEST(typed_values_and_defaults) {
    const char *model = NULL, *out = "keep";
    long port = 8000;
    double t = 1.5, drain = 60;
    int flag = 0, keep = 1;
    const jr_arg spec[] = {JR_ARG_S("--model", &model), JR_ARG_S("-o|--output", &out), JR_ARG_L("--port", &port, 0, 65535),
                           JR_ARG_D("--t", &t, 0, 2), JR_ARG_SEC("--drain", &drain, 0), JR_ARG_B("--flag", &flag, 1),
                           JR_ARG_B("--keep-none", &keep, 0), JR_ARGS_END};
    ARGV("--model", "m", "-o", "x.jsonl", "--port=0", "--t", "0.25", "--flag", "--keep-none", "--drain", "5");
    jr_args a;
    CHECK_OK(jr_args_parse(&a, spec, argc, argv, 0, 0));
    CHECK_STR(model, "m");
    CHECK_STR(out, "x.jsonl");
    CHECK(port == 0);
    CHECK(t == 0.25 && drain == 5 && flag == 1 && keep == 0);
    CHECK(a.n_over == 0 && a.n_pos == 0);
    jr_args_free(&a);
    /* the other spelling of an alternative, and the defaults kept when a flag is absent */
    char *argv2[] = {"cmd", "--output", "y"};
    port = 7;
    CHECK_OK(jr_args_parse(&a, spec, 3, argv2, 0, 0));
    CHECK_STR(out, "y");
    CHECK(port == 7);
    jr_args_free(&a);
}

TEST(config_key_flags_and_overrides_in_order) {
    const jr_arg spec[] = {JR_ARG_K("--n", "eval.n"), JR_ARG_KQ("--input", "data.train"), JR_ARG_SETK("--ifeval", "eval.ifeval=true"),
                           JR_ARGS_END};
    ARGV("eval.seed=3", "--n", "4", "--input", "it's.jsonl", "--ifeval", "file.yaml", "run.x=1");
    jr_args a;
    CHECK_OK(jr_args_parse(&a, spec, argc, argv, 1, 1));
    CHECK(a.n_over == 5);
    if (a.n_over == 5) {
        CHECK_STR(a.over[0], "eval.seed=3");
        CHECK_STR(a.over[1], "eval.n=4");
        CHECK_STR(a.over[2], "data.train='it''s.jsonl'"); /* a quote doubled: YAML's single-quoted scalar */
        CHECK_STR(a.over[3], "eval.ifeval=true");
        CHECK_STR(a.over[4], "run.x=1");
    }
    CHECK(a.n_pos == 1 && !strcmp(a.pos[0], "file.yaml"));
    jr_args_free(&a);
}

TEST(multi_values) {
    const char *stops[2], *names[4];
    int n_stop = 0, n_names = 0;
    const jr_arg spec[] = {JR_ARG_M("--stop", stops, &n_stop, 2, 0), JR_ARG_M("--names", names, &n_names, 4, 1), JR_ARGS_END};
    ARGV("--stop", "a", "--names", "x", "y", "z", "--stop", "b");
    jr_args a;
    CHECK_OK(jr_args_parse(&a, spec, argc, argv, 0, 0));
    CHECK(n_stop == 2 && !strcmp(stops[0], "a") && !strcmp(stops[1], "b"));
    CHECK(n_names == 3 && !strcmp(names[2], "z"));
    jr_args_free(&a);
    char *argv2[] = {"cmd", "--stop", "c"}; /* the cap */
    CHECK(jr_args_parse(&a, spec, 3, argv2, 0, 0) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "--stop: at most 2") != NULL);
    jr_args_free(&a);
}

TEST(errors_name_the_flag) {
    long port = 1;
    const char *m = NULL;
    const jr_arg spec[] = {JR_ARG_L("--port", &port, 1, 10), JR_ARG_S("--model", &m), JR_ARGS_END};
    jr_args a;
    char *v1[] = {"cmd", "--port", "11"};
    CHECK(jr_args_parse(&a, spec, 3, v1, 0, 0) == JR_EINVAL);
    CHECK_STR(jr_errmsg(), "--port: expected an integer in [1, 10], got '11'");
    CHECK(port == 1);
    jr_args_free(&a);
    char *v2[] = {"cmd", "--port", "3x"};
    CHECK(jr_args_parse(&a, spec, 3, v2, 0, 0) == JR_EINVAL);
    jr_args_free(&a);
    char *v3[] = {"cmd", "--model"};
    CHECK(jr_args_parse(&a, spec, 2, v3, 0, 0) == JR_EINVAL);
    CHECK_STR(jr_errmsg(), "--model needs a value");
    jr_args_free(&a);
    char *v4[] = {"cmd", "--bogus", "1"};
    CHECK(jr_args_parse(&a, spec, 3, v4, 0, 0) == JR_ENOTFOUND);
    CHECK_STR(a.bad, "--bogus");
    jr_args_free(&a);
    /* key=value and positionals only where the command takes them */
    char *v5[] = {"cmd", "k=v"};
    CHECK(jr_args_parse(&a, spec, 2, v5, 0, 0) == JR_ENOTFOUND);
    jr_args_free(&a);
    /* a flag that takes no value refuses one: "--quick=false" must not turn quick on */
    int quick = 0;
    const jr_arg bspec[] = {JR_ARG_B("--quick", &quick, 1), JR_ARG_SETK("--ifeval", "eval.ifeval=true"), JR_ARGS_END};
    char *v7[] = {"cmd", "--quick=false"};
    CHECK(jr_args_parse(&a, bspec, 2, v7, 0, 0) == JR_EINVAL);
    CHECK_STR(jr_errmsg(), "--quick takes no value (got 'false')");
    CHECK(quick == 0);
    jr_args_free(&a);
    char *v8[] = {"cmd", "--ifeval=0"};
    CHECK(jr_args_parse(&a, bspec, 2, v8, 0, 0) == JR_EINVAL && a.n_over == 0);
    jr_args_free(&a);
    char *v6[] = {"cmd", "a", "b"};
    CHECK(jr_args_parse(&a, spec, 3, v6, 1, 0) == JR_ENOTFOUND);
    CHECK_STR(a.bad, "b");
    jr_args_free(&a);
}

TEST(token_id_lists) {
    int32_t *ids = NULL;
    int n = -1;
    CHECK(jr_args_ints("1 2,3\t-1\n40", &ids, &n) == 0);
    CHECK(n == 5 && ids && ids[0] == 1 && ids[2] == 3 && ids[3] == -1 && ids[4] == 40);
    free(ids);
    ids = NULL;
    CHECK(jr_args_ints("1 x", &ids, &n) == -1);
    free(ids);
    ids = NULL;
    CHECK(jr_args_ints("-2", &ids, &n) == -1);
    free(ids);
    ids = NULL;
    char many[400] = "";
    for (int i = 0; i < 40; i++) sprintf(many + strlen(many), "%d ", i); /* past the first allocation */
    CHECK(jr_args_ints(many, &ids, &n) == 0 && n == 40 && ids[39] == 39);
    free(ids);
}

int main(void) {
    RUN(typed_values_and_defaults);
    RUN(config_key_flags_and_overrides_in_order);
    RUN(multi_values);
    RUN(errors_name_the_flag);
    RUN(token_id_lists);
    return jt_done();
}
