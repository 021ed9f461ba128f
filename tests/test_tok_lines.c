/* test_tok_lines.c - the library side of `judgerl tokenize` (jr_tok_lines, jr_tok_print_info,
 * jr_tok_train_file, jr_tok_train_re), `tb-export` (jr_tb_export) and the benchmark options (bench.h), without the CLI */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "judgerl/bench.h"
#include "judgerl/fsutil.h"
#include "judgerl/status.h"
#include "judgerl/tensorboard.h"
#include "judgerl/tokenizer.h"

/* Runs jr_tok_lines on `input` with o and the tokenizer at tok (under the repository; NULL: the tiny
 * test tokenizer); the output (caller frees) or NULL, and the status in *st. */
static char *run_lines_with(const char *tok, const jr_tok_lines_opts *o, const char *input, jr_status *st) {
    char path[1024], *out = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/%s", jt_root(), tok ? tok : "tests/data/tokenizer/tiny");
    jr_tokenizer *t;
    if ((*st = jr_tok_load(&t, path))) return NULL;
    FILE *in = fmemopen((void *)input, strlen(input), "r"), *mf = open_memstream(&out, &len);
    *st = jr_tok_lines(t, o, in, mf);
    fclose(in);
    fclose(mf);
    jr_tok_free(t);
    return out;
}

static char *run_lines(const jr_tok_lines_opts *o, const char *input, jr_status *st) { return run_lines_with(NULL, o, input, st); }

TEST(encode_decode_lines) {
    jr_status st;
    jr_tok_lines_opts o = {.in_name = "rows"};
    char *out = run_lines(&o, "hi <s>\nab\n", &st);
    CHECK_OK(st);
    CHECK_STR(out, "104 105 32 256\n97 98\n");
    free(out);
    o.decode = 1;
    o.no_special = 1;
    out = run_lines(&o, "104 105 32 256\n", &st);
    CHECK_OK(st);
    CHECK_STR(out, "hi \n");
    free(out);
}

TEST(jsonl_rows_and_errors_name_the_line) {
    jr_status st;
    jr_tok_lines_opts o = {.jsonl = 1, .decode = 1, .in_name = "rows.jsonl"};
    char *out = run_lines(&o, "{\"ids\": [97, 10, 98]}\n\n{\"ids\": [97, \"x\"]}\n", &st);
    CHECK(st == JR_EINVAL);
    CHECK_MSG(strstr(jr_errmsg(), "rows.jsonl line 3: \"ids\"[1] is not a token id") != NULL, "%s", jr_errmsg());
    CHECK_STR(out, "{\"text\":\"a\\nb\"}\n"); /* the rows before the bad one are written */
    free(out);
    o.decode = 0;
    out = run_lines(&o, "{\"text\": 3}\n", &st);
    CHECK(st == JR_EINVAL);
    CHECK_MSG(strstr(jr_errmsg(), "rows.jsonl line 1: \"text\" must be a string") != NULL, "%s", jr_errmsg());
    free(out);
}

/* A chat row's content is a string or null: another type or an embedded NUL is an error naming the
 * message, not a silently empty (or cut) turn. */
TEST(chat_rows_content_checked) {
    jr_status st;
    jr_tok_lines_opts o = {.chat = 1, .in_name = "chat.jsonl"};
    char *out = run_lines_with("data/eightball/tokenizer", &o, "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n", &st);
    CHECK_OK(st);
    CHECK_MSG(out && strstr(out, "user\\nhi"), "%s", out ? out : "(null)");
    free(out);
    /* null is passed on as null: what it renders to is the template's business (this one refuses str + None) */
    out = run_lines_with("data/eightball/tokenizer", &o, "{\"messages\": [{\"role\": \"user\", \"content\": null}]}\n", &st);
    CHECK_MSG(!strstr(jr_errmsg(), "content must be"), "%s", jr_errmsg());
    free(out);
    const char *bad[][2] = {
        {"{\"messages\": [{\"role\": \"user\", \"content\": 5}]}\n", "messages[0].content must be a string or null"},
        {"{\"messages\": [{\"role\": \"user\", \"content\": \"a\\u0000b\"}]}\n", "messages[0].content holds a NUL character"},
        {"{\"messages\": [{\"content\": \"x\"}]}\n", "messages[0].role must be a string"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        out = run_lines(&o, bad[i][0], &st);
        CHECK_MSG(st == JR_EINVAL && strstr(jr_errmsg(), bad[i][1]), "case %zu: %s", i, jr_errmsg());
        free(out);
    }
}

TEST(train_file_and_info) {
    char *dir = jt_tmpdir("toklines"), corpus[600], tok[600];
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", dir);
    snprintf(tok, sizeof tok, "%s/tokenizer.json", dir);
    const char *text = "the cat sat on the mat; the cat sat on the hat\n";
    CHECK_OK(jr_write_atomic(corpus, text, strlen(text)));
    CHECK_OK(jr_tok_train_file(corpus, 270, NULL, 0, tok)); /* default specials: 3 of them */
    jr_tokenizer *t;
    CHECK_OK(jr_tok_load(&t, tok));
    char *info = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&info, &len);
    jr_tok_print_info(t, mf);
    fclose(mf);
    char want[64]; /* the corpus has fewer merges than asked for: up to 270 tokens */
    snprintf(want, sizeof want, "\"vocab_size\": %d,", (int)jr_tok_vocab_size(t));
    CHECK_MSG(strstr(info, want) && jr_tok_vocab_size(t) > 259 && jr_tok_vocab_size(t) <= 270, "%s", info);
    CHECK(jr_tok_token_to_id(t, "<|im_end|>") >= 0);
    free(info);
    jr_tok_free(t);
    CHECK(jr_tok_train_file("/nonexistent/corpus.txt", 270, NULL, 0, tok) != JR_OK);
    free(dir);
}

/* The pre-tokenizer regex given to jr_tok_train_re is the one training splits with and the one
 * written into the tokenizer.json: "\\d+" lets digit runs merge, which the default regex (single
 * digits) never does. */
TEST(train_with_own_pattern) {
    const char *corpus = "1212 1212 1212 1212 1212 1212 1212 1212\n";
    const char *const sp[] = {"<|endoftext|>"};
    for (int own = 0; own < 2; own++) {
        char *json = NULL;
        CHECK_OK(jr_tok_train_re(corpus, strlen(corpus), 270, sp, 1, own ? "\\d+|\\s+" : NULL, &json));
        if (!json) continue;
        CHECK(!own || strstr(json, "\"\\\\d+|\\\\s+\"") != NULL);
        jr_tokenizer *t;
        CHECK_OK(jr_tok_load_json(&t, json, strlen(json), "trained"));
        jr_ids ids = {0};
        CHECK_OK(jr_tok_encode(t, "1212", 4, 0, &ids));
        CHECK_MSG(ids.n == (own ? 1u : 4u), "pattern %s: %zu ids", own ? "\\d+" : "default", ids.n);
        jr_ids_free(&ids);
        jr_tok_free(t);
        free(json);
    }
    char *json = NULL;
    CHECK(jr_tok_train_re(corpus, strlen(corpus), 270, sp, 1, "(\\d", &json) == JR_EINVAL && !json);
    CHECK_MSG(strstr(jr_errmsg(), "pre-tokenizer regex does not compile at offset") != NULL, "%s", jr_errmsg());
}

TEST(tb_export_rows) {
    char *dir = jt_tmpdir("tbexport"), metrics[600];
    snprintf(metrics, sizeof metrics, "%s/metrics.jsonl", dir);
    const char *rows = "{\"step\": 1, \"wall_time\": 1.5, \"loss\": 2.0, \"note\": \"x\"}\n{\"step\": 2, \"loss\": 1.0}\n";
    CHECK_OK(jr_write_atomic(metrics, rows, strlen(rows)));
    char *path;
    long long events;
    CHECK_OK(jr_tb_export(metrics, NULL, &path, &events));
    CHECK(events == 2);
    CHECK_MSG(path && !strncmp(path, dir, strlen(dir)) && strstr(path, "events.out.tfevents."), "%s", path ? path : "(null)");
    free(path);
    const char *bad = "{\"loss\": 1.0}\n";
    CHECK_OK(jr_write_atomic(metrics, bad, strlen(bad)));
    CHECK(jr_tb_export(metrics, dir, &path, &events) == JR_EFORMAT);
    CHECK(path == NULL);
    CHECK_MSG(strstr(jr_errmsg(), "metrics.jsonl:1: missing integer field \"step\"") != NULL, "%s", jr_errmsg());
    free(dir);
}

TEST(bench_options) {
    jr_model_config c;
    CHECK_OK(jr_bench_model_config("100m", &c));
    CHECK(c.hidden_size == 768 && c.num_hidden_layers == 12 && c.head_dim == 64);
    CHECK(jr_bench_model_config("1m", &c) == JR_EINVAL);
    jr_bench_train_opts t = jr_bench_train_opts_default();
    CHECK(jr_bench_train_check(&t) == JR_EINVAL); /* neither a model nor a config */
    t.config = "10m";
    CHECK_OK(jr_bench_train_check(&t));
    t.seq = 1;
    CHECK(jr_bench_train_check(&t) == JR_EINVAL);
    jr_bench_generate_opts g = jr_bench_generate_opts_default();
    g.config = "10m";
    CHECK_OK(jr_bench_generate_check(&g));
    g.itl_target = 1.0;
    CHECK(jr_bench_generate_check(&g) == JR_EINVAL);
    jr_bench_grade_opts r = jr_bench_grade_opts_default();
    CHECK_OK(jr_bench_grade_check(&r));
    r.levels = "4,0";
    CHECK(jr_bench_grade_check(&r) == JR_EINVAL);
    json_t *j;
    CHECK(jr_bench_memory(0, 1, &j) == JR_EINVAL && j == NULL);
}

int main(void) {
    RUN(encode_decode_lines);
    RUN(jsonl_rows_and_errors_name_the_line);
    RUN(chat_rows_content_checked);
    RUN(train_file_and_info);
    RUN(train_with_own_pattern);
    RUN(tb_export_rows);
    RUN(bench_options);
    return jt_done();
}
