/* test_grade_lib.c - jr_grade_file as a library call, with no YAML and no judge (a rule component):
 * a torn last line is cut and finished ids skipped, the output ends in the input's order, unscored
 * rows are graded again on a rerun, bad rows and a stop request fail with messages */
#include "harness.h"

#include <signal.h>

#include "judgerl/fsutil.h"
#include "judgerl/grade.h"

static char *dir;

static void write_text(const char *name, const char *text) {
    char *p = jr_path_join(dir, name);
    FILE *f = fopen(p, "wb");
    fputs(text, f);
    fclose(f);
    free(p);
}

/* The file's text (caller frees), or NULL. */
static char *read_text(const char *name) {
    char *p = jr_path_join(dir, name);
    FILE *f = fopen(p, "rb");
    free(p);
    if (!f) return NULL;
    char *t = calloc(1, 1 << 16);
    if (t) fread(t, 1, (1 << 16) - 1, f);
    fclose(f);
    return t;
}

/* The registry's options with one rule component: exact match of response and reference. */
static void exact_opts(jr_reward_opts *ro) {
    memset(ro, 0, sizeof *ro);
    jr_judge_opts_init(&ro->judge);
    jr_sandbox_opts_default(&ro->sandbox);
    ro->judge.max_unscored_frac = 1.0;
    ro->n_components = 1;
    ro->components[0] = (jr_reward_component_opts){.name = "match", .fn = "exact", .weight = 1.0};
}

static jr_status grade(const jr_reward_opts *ro, const char *in, const char *out, char **summary, volatile sig_atomic_t *stop) {
    jr_grade_opts o;
    jr_grade_opts_init(&o, ro);
    o.stop = stop;
    char *ip = jr_path_join(dir, in), *op = jr_path_join(dir, out);
    jr_status st = jr_grade_file(&o, ip, op, summary);
    free(ip);
    free(op);
    return st;
}

/* 1 when `needle` occurs in the line that starts at `line` (before its newline). */
static int line_has(const char *line, const char *needle) {
    const char *p = line ? strstr(line, needle) : NULL, *end = line ? strchr(line, '\n') : NULL;
    return p && (!end || p < end);
}

static const char *input =
    "{\"id\": 3, \"response\": \"4\", \"reference\": \"4\"}\n"
    "\n"
    "{\"id\": \"b\", \"response\": \"5\", \"reference\": \"4\"}\r\n"
    "{\"id\": 1, \"response\": \"a\\u0000b\"}\n"
    "{\"id\": \"d\", \"response\": \"x\", \"reference\": \"x\", \"topic\": \"kept\"}\n";

TEST(resume_order_and_retry) {
    jr_reward_opts ro;
    exact_opts(&ro);
    write_text("in.jsonl", input);
    /* an earlier run finished "d", then was killed mid-way through writing "b" */
    write_text("out.jsonl", "{\"id\":\"d\",\"reward\":1.0,\"status\":\"ok\",\"topic\":\"kept\"}\n{\"id\":\"b\",\"rew");
    char *sum = NULL;
    CHECK_OK(grade(&ro, "in.jsonl", "out.jsonl", &sum, NULL));
    CHECK_MSG(sum && strstr(sum, "\"rows\":4") && strstr(sum, "\"graded\":3") && strstr(sum, "\"skipped\":1") &&
              strstr(sum, "\"ok\":2") && strstr(sum, "\"unscored\":1") && strstr(sum, "\"torn_lines_dropped\":1"), "%s", sum);
    free(sum);
    char *out = read_text("out.jsonl");
    CHECK(out != NULL);
    if (!out) return;
    const char *i3 = strstr(out, "{\"id\":3,"), *ib = strstr(out, "{\"id\":\"b\","), *i1 = strstr(out, "{\"id\":1,"),
               *id = strstr(out, "{\"id\":\"d\",");
    CHECK_MSG(i3 && ib && i1 && id && i3 < ib && ib < i1 && i1 < id, "not in the input's order:\n%s", out);
    CHECK_MSG(line_has(i3, "\"reward\":1.0") && line_has(ib, "\"reward\":0.0"), "%s", out); /* scored: a match, none */
    CHECK_MSG(line_has(i1, "\"reward\":null") && line_has(i1, "a\\u0000b"), "%s", out); /* unscored, NUL kept */
    CHECK(!strstr(out, "\"rew\n") && !strstr(out, "\"rew{"));
    free(out);
    /* a rerun grades the unscored row again (and only it) */
    CHECK_OK(grade(&ro, "in.jsonl", "out.jsonl", &sum, NULL));
    CHECK_MSG(sum && strstr(sum, "\"graded\":1") && strstr(sum, "\"skipped\":3") && strstr(sum, "\"torn_lines_dropped\":0"), "%s", sum);
    free(sum);
    out = read_text("out.jsonl");
    int lines = 0;
    for (const char *p = out; p && *p; p++) lines += *p == '\n';
    CHECK_MSG(lines == 4, "%d lines:\n%s", lines, out);
    free(out);
}

TEST(bad_rows_and_stop) {
    jr_reward_opts ro;
    exact_opts(&ro);
    char *sum = (char *)1;
    write_text("dup.jsonl", "{\"id\": 1, \"response\": \"a\"}\n{\"id\": 1, \"response\": \"b\"}\n");
    CHECK(grade(&ro, "dup.jsonl", "dup.out.jsonl", &sum, NULL) != JR_OK && !sum);
    CHECK_MSG(strstr(jr_errmsg(), "dup.jsonl: line 2: duplicate id '1'"), "%s", jr_errmsg());
    write_text("bad.jsonl", "{\"id\": 1, \"response\": \"a\"}\n[1, 2]\n");
    CHECK(grade(&ro, "bad.jsonl", "bad.out.jsonl", &sum, NULL) != JR_OK);
    CHECK_MSG(strstr(jr_errmsg(), "bad.jsonl: line 2: not a JSON object"), "%s", jr_errmsg());
    write_text("noid.jsonl", "{\"response\": \"a\"}\n");
    CHECK(grade(&ro, "noid.jsonl", "noid.out.jsonl", &sum, NULL) != JR_OK);
    CHECK_MSG(strstr(jr_errmsg(), "line 1: field 'id'"), "%s", jr_errmsg());
    write_text("out2.jsonl", "not an output row\n");
    write_text("in2.jsonl", input);
    CHECK(grade(&ro, "in2.jsonl", "out2.jsonl", &sum, NULL) != JR_OK);
    CHECK_MSG(strstr(jr_errmsg(), "out2.jsonl: line 1 is not an output row"), "%s", jr_errmsg());
    volatile sig_atomic_t stop = 1;
    CHECK(grade(&ro, "in.jsonl", "stopped.jsonl", &sum, &stop) == JR_ECANCELED && !sum);
    CHECK_MSG(strstr(jr_errmsg(), "interrupted") && strstr(jr_errmsg(), "rerun the same command"), "%s", jr_errmsg());
}

int main(void) {
    dir = jt_tmpdir("grade_lib");
    RUN(resume_order_and_retry);
    RUN(bad_rows_and_stop);
    jr_rmtree(dir);
    free(dir);
    return jt_done();
}
