/* test_dataset.c - JSONL reader (line numbers, bad lines, CRLF/BOM/long lines, UTF-8), splits, shuffling, resume, durable writer */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "harness.h"
#include "judgerl/dataset.h"

static char *dir;

static char *write_file(const char *name, const void *data, size_t len) {
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    sprintf(p, "%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    fwrite(data, 1, len, f);
    fclose(f);
    return p;
}

static char *write_str(const char *name, const char *s) { return write_file(name, s, strlen(s)); }

/* A file of n rows {"id": i} (i = 0..n-1), one per line. */
static char *write_ids(const char *name, int n) {
    size_t cap = (size_t)n * 16 + 1, len = 0;
    char *buf = malloc(cap);
    for (int i = 0; i < n; i++) len += (size_t)sprintf(buf + len, "{\"id\":%d}\n", i);
    char *p = write_file(name, buf, len);
    free(buf);
    return p;
}

typedef struct {
    int n;
    char msg[8][512];
} collected;

static void collect(void *ud, const char *m) {
    collected *c = ud;
    if (c->n < 8) snprintf(c->msg[c->n], sizeof c->msg[0], "%s", m);
    c->n++;
}

static int starts_with(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

TEST(bad_lines_skipped_with_line_numbers) {
    char *p = write_str("bad.jsonl", "{\"a\":1}\n[1,2]\n\n{oops\n{\"a\":2}\n\"str\"\n{\"a\":3}\n{\"a\":1,\"a\":2}\n");
    collected c = {0};
    jr_jsonl_reader *r;
    CHECK_OK(jr_jsonl_open(&r, p, JR_BAD_LINE_SKIP, collect, &c));
    int64_t lines[8], n = 0;
    for (;;) {
        json_t *row;
        int64_t ln;
        CHECK_OK(jr_jsonl_next(r, &row, &ln, NULL));
        if (!row) break;
        CHECK(json_is_object(row));
        lines[n++] = ln;
        json_decref(row);
    }
    CHECK(n == 3);
    CHECK(lines[0] == 1 && lines[1] == 5 && lines[2] == 7);
    CHECK(jr_jsonl_bad_lines(r) == 4);
    CHECK(jr_jsonl_lines(r) == 8);
    CHECK(c.n == 4);
    char want[600];
    snprintf(want, sizeof want, "%s:2: expected a JSON object per line, got an array", p);
    CHECK_STR(c.msg[0], want);
    snprintf(want, sizeof want, "%s:4: invalid JSON", p);
    CHECK_MSG(starts_with(c.msg[1], want), "%s", c.msg[1]);
    snprintf(want, sizeof want, "%s:6: expected a JSON object per line, got a string", p);
    CHECK_STR(c.msg[2], want);
    snprintf(want, sizeof want, "%s:8: invalid JSON", p); /* duplicate key */
    CHECK_MSG(starts_with(c.msg[3], want), "%s", c.msg[3]);
    jr_jsonl_close(r);
    free(p);
}

TEST(bad_line_fatal_names_file_and_line) {
    char *p = write_str("fatal.jsonl", "{\"a\":1}\n{\"a\":2}\n{\"a\":3,}\n{\"a\":4}\n");
    jr_dataset *ds = NULL;
    collected c = {0};
    CHECK(jr_dataset_open(&ds, p, JR_BAD_LINE_FAIL, 0, collect, &c) == JR_EFORMAT);
    CHECK(ds == NULL);
    CHECK(c.n == 0);
    char want[600];
    snprintf(want, sizeof want, "%s:3: invalid JSON at column", p);
    CHECK_MSG(starts_with(jr_errmsg(), want), "%s", jr_errmsg());
    CHECK(!strchr(jr_errmsg(), '\n'));
    /* skip mode reads the same file */
    CHECK_OK(jr_dataset_open(&ds, p, JR_BAD_LINE_SKIP, 0, NULL, NULL));
    CHECK(ds && jr_dataset_size(ds) == 3 && jr_dataset_bad_lines(ds) == 1);
    jr_dataset_close(ds);
    free(p);
}

TEST(invalid_utf8_kinds) {
    static const char *bad[] = {
        "{\"s\":\"\xC0\xAF\"}",         /* overlong '/' */
        "{\"s\":\"\xED\xA0\x80\"}",     /* UTF-16 surrogate */
        "{\"s\":\"\xF4\x90\x80\x80\"}", /* above U+10FFFF */
        "{\"s\":\"\xE2\x82\"}",         /* truncated sequence */
        "{\"s\":\"\x80\"}",             /* stray continuation byte */
        "{\"s\":\"a\"}\xE2",            /* truncated at the very end of the line */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        json_t *row;
        jr_status st = jr_jsonl_parse_line(bad[i], strlen(bad[i]), "x.jsonl:9", &row);
        CHECK_MSG(st == JR_EFORMAT && !row, "case %zu", i);
        CHECK_MSG(starts_with(jr_errmsg(), "x.jsonl:9: invalid UTF-8 at byte"), "case %zu: %s", i, jr_errmsg());
    }
    const char *good = "{\"s\":\"h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80\"}";
    json_t *row;
    CHECK_OK(jr_jsonl_parse_line(good, strlen(good), "x", &row));
    CHECK_STR(json_string_value(json_object_get(row, "s")), "h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80");
    json_decref(row);
    /* a NUL byte inside a line is bad */
    const char nul[] = "{\"s\":\"a\0b\"}";
    CHECK(jr_jsonl_parse_line(nul, sizeof nul - 1, "x:1", &row) == JR_EFORMAT);
    CHECK_MSG(strstr(jr_errmsg(), "NUL byte"), "%s", jr_errmsg());
}

TEST(crlf_bom_blank_and_long_lines) {
    size_t big = 3u << 20; /* a 3 MiB string value */
    size_t cap = big + 256, len = 0;
    char *buf = malloc(cap);
    len += (size_t)sprintf(buf, "\xEF\xBB\xBF{\"id\":1}\r\n\r\n  \t\r\n{\"id\":2,\"s\":\"");
    memset(buf + len, 'x', big);
    len += big;
    len += (size_t)sprintf(buf + len, "\"}\r\n{\"id\":3}"); /* no final newline */
    char *p = write_file("crlf.jsonl", buf, len);
    free(buf);
    jr_dataset *ds;
    CHECK_OK(jr_dataset_open(&ds, p, JR_BAD_LINE_FAIL, 0, NULL, NULL));
    CHECK(jr_dataset_size(ds) == 3);
    CHECK(jr_dataset_lines(ds) == 5);
    int64_t want_line[3] = {1, 4, 5};
    for (size_t i = 0; i < 3 && jr_dataset_size(ds) == 3; i++) {
        json_t *row;
        int64_t ln;
        CHECK_OK(jr_dataset_get(ds, i, &row, &ln));
        CHECK(json_integer_value(json_object_get(row, "id")) == (json_int_t)i + 1);
        CHECK(ln == want_line[i]);
        if (i == 1) CHECK(json_string_length(json_object_get(row, "s")) == big);
        json_decref(row);
    }
    jr_dataset_close(ds);
    free(p);
    /* a BOM anywhere but line 1 is not skipped: it is not JSON */
    p = write_str("bom2.jsonl", "{\"id\":1}\n\xEF\xBB\xBF{\"id\":2}\n");
    CHECK(jr_dataset_open(&ds, p, JR_BAD_LINE_FAIL, 0, NULL, NULL) == JR_EFORMAT);
    char want[600];
    snprintf(want, sizeof want, "%s:2:", p);
    CHECK_MSG(starts_with(jr_errmsg(), want), "%s", jr_errmsg());
    free(p);
}

TEST(changed_file_detected) {
    char *p = write_str("changing.jsonl", "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n");
    jr_dataset *ds;
    CHECK_OK(jr_dataset_open(&ds, p, JR_BAD_LINE_FAIL, 0, NULL, NULL));
    if (!ds) { free(p); return; }
    /* same length, still valid JSON, different value: caught by the row's CRC */
    FILE *f = fopen(p, "r+b");
    fseek(f, 15, SEEK_SET); /* the 2 of {"id":2} */
    fputc('7', f);
    fclose(f);
    json_t *row;
    CHECK_OK(jr_dataset_get(ds, 0, &row, NULL));
    json_decref(row);
    CHECK(jr_dataset_get(ds, 1, &row, NULL) == JR_EIO && row == NULL);
    char want[600];
    snprintf(want, sizeof want, "%s:2: the row changed since the file was indexed", p);
    CHECK_MSG(starts_with(jr_errmsg(), want), "%s", jr_errmsg());
    /* truncated */
    f = fopen(p, "wb");
    fclose(f);
    CHECK(jr_dataset_get(ds, 2, &row, NULL) == JR_EIO);
    jr_dataset_close(ds);
    free(p);
}

TEST(missing_and_empty_files) {
    jr_dataset *ds;
    char *p = write_str("empty.jsonl", "\n\n");
    CHECK(jr_dataset_open(&ds, p, JR_BAD_LINE_SKIP, 0, NULL, NULL) == JR_EINVAL);
    CHECK_MSG(strstr(jr_errmsg(), "empty.jsonl: no rows"), "%s", jr_errmsg());
    free(p);
    p = write_str("allbad.jsonl", "x\ny\n");
    CHECK(jr_dataset_open(&ds, p, JR_BAD_LINE_SKIP, 0, NULL, NULL) == JR_EINVAL);
    CHECK_MSG(strstr(jr_errmsg(), "no valid rows (2 bad lines skipped)"), "%s", jr_errmsg());
    free(p);
    CHECK(jr_dataset_open(&ds, "/nonexistent/dir/x.jsonl", JR_BAD_LINE_SKIP, 0, NULL, NULL) == JR_ENOTFOUND);
    CHECK_MSG(starts_with(jr_errmsg(), "/nonexistent/dir/x.jsonl: cannot open"), "%s", jr_errmsg());
    CHECK(jr_dataset_open(&ds, dir, JR_BAD_LINE_SKIP, 0, NULL, NULL) == JR_EINVAL);
}

/* Training rows (ids) of one epoch in order. */
static void epoch_ids(jr_data *d, int64_t epoch, int *out) {
    for (size_t i = 0; i < jr_data_n_train(d); i++) {
        json_t *row;
        jr_data_row_info info;
        CHECK_OK(jr_data_train_get(d, epoch, i, &row, &info));
        out[i] = row ? (int)json_integer_value(json_object_get(row, "id")) : -1;
        CHECK(info.pos.epoch == epoch && info.pos.index == (int64_t)i);
        CHECK(info.line_no == out[i] + 1);
        json_decref(row);
    }
}

static jr_data *open_data(const char *train, double frac, uint64_t seed, int shuffle) {
    jr_data_opts o = {.train = train, .validation_frac = frac, .seed = seed, .shuffle = shuffle};
    jr_data *d = NULL;
    CHECK_OK(jr_data_open(&d, &o));
    return d;
}

TEST(shuffle_deterministic_by_seed) {
    enum { N = 50 };
    char *p = write_ids("ids50.jsonl", N);
    jr_data *a = open_data(p, 0, 7, 1), *b = open_data(p, 0, 7, 1), *c = open_data(p, 0, 8, 1),
            *off = open_data(p, 0, 7, 0);
    if (!a || !b || !c || !off) { jr_data_close(a); jr_data_close(b); jr_data_close(c); jr_data_close(off); free(p); return; }
    int ea[N], eb[N], ec[N], e1[N], eo[N];
    epoch_ids(a, 0, ea);
    epoch_ids(b, 0, eb);
    epoch_ids(c, 0, ec);
    epoch_ids(a, 1, e1);
    epoch_ids(off, 0, eo);
    CHECK(!memcmp(ea, eb, sizeof ea));   /* same seed: same order */
    CHECK(memcmp(ea, ec, sizeof ea));    /* another seed: another order */
    CHECK(memcmp(ea, e1, sizeof ea));    /* next epoch: reshuffled */
    int seen[N] = {0}, in_place = 0;
    for (int i = 0; i < N; i++) { if (ea[i] >= 0 && ea[i] < N) seen[ea[i]]++; in_place += ea[i] == i; }
    for (int i = 0; i < N; i++) CHECK(seen[i] == 1); /* a permutation */
    CHECK(in_place < N / 2);
    for (int i = 0; i < N; i++) CHECK(eo[i] == i); /* shuffle off: file order */
    jr_data_close(a);
    jr_data_close(b);
    jr_data_close(c);
    jr_data_close(off);
    free(p);
}

TEST(split_sizes_and_disjoint) {
    enum { N = 100 };
    char *p = write_ids("ids100.jsonl", N);
    jr_data *a = open_data(p, 0.1, 3, 1), *b = open_data(p, 0.1, 3, 1), *c = open_data(p, 0.1, 4, 1),
            *small = open_data(p, 0.001, 3, 1);
    if (!a || !b || !c || !small) goto out;
    CHECK(jr_data_n_train(a) == 90 && jr_data_n_val(a) == 10);
    CHECK(jr_data_n_val(small) == 1); /* a positive share holds out at least one row */
    int where[N] = {0};               /* 1 train, 2 validation */
    int ids[N];
    epoch_ids(a, 0, ids);
    for (size_t i = 0; i < jr_data_n_train(a); i++) where[ids[i]] |= 1;
    int va[10], vb[10], vc[10], prev = -1;
    for (size_t i = 0; i < 10; i++) {
        json_t *row;
        jr_data_row_info info;
        CHECK_OK(jr_data_val_get(a, i, &row, &info));
        va[i] = (int)json_integer_value(json_object_get(row, "id"));
        json_decref(row);
        CHECK(va[i] > prev); /* validation keeps file order */
        prev = va[i];
        where[va[i]] |= 2;
        CHECK_OK(jr_data_val_get(b, i, &row, NULL));
        vb[i] = (int)json_integer_value(json_object_get(row, "id"));
        json_decref(row);
        CHECK_OK(jr_data_val_get(c, i, &row, NULL));
        vc[i] = (int)json_integer_value(json_object_get(row, "id"));
        json_decref(row);
    }
    for (int i = 0; i < N; i++) CHECK_MSG(where[i] == 1 || where[i] == 2, "row %d: %d", i, where[i]);
    CHECK(!memcmp(va, vb, sizeof va));
    CHECK(memcmp(va, vc, sizeof va));
    json_t *row;
    CHECK(jr_data_val_get(a, 10, &row, NULL) == JR_EINVAL);
out:
    jr_data_close(a);
    jr_data_close(b);
    jr_data_close(c);
    jr_data_close(small);
    free(p);
}

TEST(split_errors_and_separate_file) {
    char *t = write_ids("t.jsonl", 5), *v = write_ids("v.jsonl", 3);
    jr_data *d = NULL;
    jr_data_opts o = {.train = t, .validation = v, .validation_frac = 0.2};
    CHECK(jr_data_open(&d, &o) == JR_EINVAL);
    CHECK_MSG(strstr(jr_errmsg(), "both set"), "%s", jr_errmsg());
    o.validation_frac = 0;
    CHECK_OK(jr_data_open(&d, &o));
    if (d) CHECK(jr_data_n_train(d) == 5 && jr_data_n_val(d) == 3);
    jr_data_close(d);
    d = NULL;
    jr_data_opts o2 = {.train = t, .validation_frac = 0.9};
    CHECK(jr_data_open(&d, &o2) == JR_EINVAL);
    CHECK_MSG(strstr(jr_errmsg(), "leaving none to train on"), "%s", jr_errmsg());
    jr_data_opts o3 = {.train = NULL};
    CHECK(jr_data_open(&d, &o3) == JR_EINVAL);
    CHECK_MSG(strstr(jr_errmsg(), "data.train"), "%s", jr_errmsg());
    jr_data_opts o4 = {.train = t, .max_rows = 2};
    CHECK_OK(jr_data_open(&d, &o4));
    if (d) CHECK(jr_data_n_train(d) == 2);
    jr_data_close(d);
    free(t);
    free(v);
}

TEST(resume_position_continues_with_next_row) {
    enum { N = 13, STEPS = 40 };
    char *p = write_ids("ids13.jsonl", N);
    jr_data *a = open_data(p, 0, 11, 1);
    int seq[STEPS];
    jr_data_pos at[STEPS];
    for (int s = 0; a && s < STEPS; s++) {
        at[s] = jr_data_tell(a);
        json_t *row;
        jr_data_row_info info;
        CHECK_OK(jr_data_next(a, &row, &info));
        seq[s] = (int)json_integer_value(json_object_get(row, "id"));
        CHECK(info.pos.epoch == at[s].epoch && info.pos.index == at[s].index);
        CHECK(at[s].epoch == s / N && at[s].index == s % N);
        json_decref(row);
    }
    /* a fresh process resuming from any stored position continues with the exact next rows */
    int resume_at[] = {0, 5, 12, 13, 27, 39};
    for (size_t k = 0; a && k < sizeof resume_at / sizeof *resume_at; k++) {
        jr_data *b = open_data(p, 0, 11, 1);
        if (!b) break;
        CHECK_OK(jr_data_seek(b, at[resume_at[k]]));
        for (int s = resume_at[k]; s < STEPS; s++) {
            json_t *row;
            CHECK_OK(jr_data_next(b, &row, NULL));
            CHECK_MSG(row && json_integer_value(json_object_get(row, "id")) == seq[s], "resume at %d, step %d",
                      resume_at[k], s);
            json_decref(row);
        }
        jr_data_close(b);
    }
    /* the end of an epoch as a position means the start of the next */
    if (a) {
        CHECK_OK(jr_data_seek(a, (jr_data_pos){2, N}));
        jr_data_pos t = jr_data_tell(a);
        CHECK(t.epoch == 3 && t.index == 0);
        CHECK(jr_data_seek(a, (jr_data_pos){0, N + 1}) == JR_EINVAL);
        CHECK_MSG(strstr(jr_errmsg(), "out of range"), "%s", jr_errmsg());
    }
    jr_data_close(a);
    free(p);
}

TEST(options_from_config) {
    const jr_cfg_field *const tables[] = {jr_run_cfg, jr_data_cfg, NULL};
    jr_config c;
    char *ov[] = {"data.on_bad_line=fail", "run.seed=42"};
    CHECK_OK(jr_config_load_string(&c, "data:\n  train: a.jsonl\n  validation_frac: 0.25\n  shuffle: false\n", "t.yaml",
                                   2, ov, tables));
    jr_data_opts o;
    jr_data_opts_from_config(&o, &c);
    CHECK_STR(o.train, "a.jsonl");
    CHECK(o.validation == NULL);
    CHECK(o.validation_frac == 0.25 && !o.shuffle && o.on_bad_line == JR_BAD_LINE_FAIL && o.seed == 42 &&
          o.max_rows == 0);
    jr_config_free(&c);
    char *bad[] = {"data.on_bad_line=ignore"};
    CHECK(jr_config_load_string(&c, "", "t.yaml", 1, bad, tables) != JR_OK);
}

static char *slurp(const char *p, size_t *len) {
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    char *b = malloc(1 << 16);
    *len = fread(b, 1, (1 << 16) - 1, f);
    b[*len] = 0;
    fclose(f);
    return b;
}

TEST(durable_writer_cuts_torn_line) {
    char p[600];
    snprintf(p, sizeof p, "%s/out.jsonl", dir);
    jr_jsonl_writer *w;
    CHECK_OK(jr_jsonl_writer_open(&w, p, 1));
    if (!w) return;
    CHECK(jr_jsonl_writer_rows(w) == 0 && jr_jsonl_writer_torn_bytes(w) == 0);
    for (int i = 0; i < 3; i++) {
        json_t *row = json_pack("{s:i, s:s}", "i", i, "text", "a\nb \xC3\xA9");
        CHECK_OK(jr_jsonl_writer_append(w, row));
        json_decref(row);
    }
    CHECK(jr_jsonl_writer_append_line(w, "{\"x\":\n1}", 8) == JR_EINVAL);
    CHECK(jr_jsonl_writer_rows(w) == 3);
    CHECK_OK(jr_jsonl_writer_close(w));
    /* a crash mid-append leaves a partial line */
    FILE *f = fopen(p, "ab");
    fputs("{\"i\":3,\"te", f);
    fclose(f);
    CHECK_OK(jr_jsonl_writer_open(&w, p, 0));
    if (!w) return;
    CHECK(jr_jsonl_writer_rows(w) == 3);
    CHECK(jr_jsonl_writer_torn_bytes(w) == 10);
    json_t *row = json_pack("{s:i}", "i", 3);
    CHECK_OK(jr_jsonl_writer_append(w, row));
    json_decref(row);
    CHECK(jr_jsonl_writer_rows(w) == 4);
    CHECK_OK(jr_jsonl_writer_close(w));
    size_t len;
    char *txt = slurp(p, &len);
    CHECK_STR(txt, "{\"i\":0,\"text\":\"a\\nb \xC3\xA9\"}\n{\"i\":1,\"text\":\"a\\nb \xC3\xA9\"}\n"
                   "{\"i\":2,\"text\":\"a\\nb \xC3\xA9\"}\n{\"i\":3}\n");
    free(txt);
    /* every line reads back with the reader */
    jr_dataset *ds;
    CHECK_OK(jr_dataset_open(&ds, p, JR_BAD_LINE_FAIL, 0, NULL, NULL));
    if (ds) CHECK(jr_dataset_size(ds) == 4);
    jr_dataset_close(ds);
    CHECK(jr_jsonl_writer_open(&w, "/nonexistent/dir/o.jsonl", 0) != JR_OK && w == NULL);
    CHECK_MSG(starts_with(jr_errmsg(), "/nonexistent/dir/o.jsonl: cannot open"), "%s", jr_errmsg());
}


/* A line longer than the reader's limit is a bad line named by its number, read no further than
 * the limit (no allocation of its whole length); the lines after it are read normally. */
TEST(line_longer_than_the_limit_is_a_bad_line) {
    size_t big = 5000;
    char *text = malloc(big + 64);
    size_t o = (size_t)sprintf(text, "{\"a\":1}\n{\"s\":\"");
    memset(text + o, 'x', big);
    o += big;
    o += (size_t)sprintf(text + o, "\"}\r\n{\"a\":3}\n");
    char *p = write_file("long.jsonl", text, o);
    free(text);
    collected c = {0};
    jr_jsonl_reader *r;
    CHECK_OK(jr_jsonl_open(&r, p, JR_BAD_LINE_SKIP, collect, &c));
    jr_jsonl_set_max_line(r, 1000);
    int64_t lines[4], n = 0;
    for (;;) {
        json_t *row;
        int64_t ln;
        CHECK_OK(jr_jsonl_next(r, &row, &ln, NULL));
        if (!row) break;
        if (n < 4) lines[n] = ln;
        n++;
        json_decref(row);
    }
    CHECK(n == 2 && lines[0] == 1 && lines[1] == 3);
    char want[600];
    snprintf(want, sizeof want, "%s:2: the line is longer than 1000 bytes", p);
    CHECK_MSG(c.n == 1 && starts_with(c.msg[0], want), "%d: %s", c.n, c.msg[0]);
    jr_jsonl_close(r);
    /* fatal mode: the error names the line; a limit of exactly the line's length accepts it */
    CHECK_OK(jr_jsonl_open(&r, p, JR_BAD_LINE_FAIL, NULL, NULL));
    jr_jsonl_set_max_line(r, 1000);
    json_t *row;
    CHECK_OK(jr_jsonl_next(r, &row, NULL, NULL));
    json_decref(row);
    CHECK(jr_jsonl_next(r, &row, NULL, NULL) == JR_EFORMAT && row == NULL);
    CHECK_MSG(starts_with(jr_errmsg(), want), "%s", jr_errmsg());
    jr_jsonl_close(r);
    CHECK_OK(jr_jsonl_open(&r, p, JR_BAD_LINE_FAIL, NULL, NULL));
    jr_jsonl_set_max_line(r, big + 9);
    int rows = 0;
    for (;;) {
        CHECK_OK(jr_jsonl_next(r, &row, NULL, NULL));
        if (!row) break;
        rows++;
        json_decref(row);
    }
    CHECK(rows == 3);
    jr_jsonl_close(r);
    free(p);
}

int main(void) {
    dir = jt_tmpdir("dataset");
    RUN(bad_lines_skipped_with_line_numbers);
    RUN(bad_line_fatal_names_file_and_line);
    RUN(line_longer_than_the_limit_is_a_bad_line);
    RUN(invalid_utf8_kinds);
    RUN(crlf_bom_blank_and_long_lines);
    RUN(changed_file_detected);
    RUN(missing_and_empty_files);
    RUN(shuffle_deterministic_by_seed);
    RUN(split_sizes_and_disjoint);
    RUN(split_errors_and_separate_file);
    RUN(resume_position_continues_with_next_row);
    RUN(options_from_config);
    RUN(durable_writer_cuts_torn_line);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("  could not remove %s\n", dir);
    free(dir);
    return jt_done();
}
