/* test_alloc_sweep.c - allocation-failure sweep over the parsers: for every N, the Nth allocation
 * fails while parsing a safetensors file, config.json, tokenizer.json, YAML, JSONL and an HTTP
 * request body. Each run must return an error with a message (or succeed) and never crash; under
 * the sanitizer build LeakSanitizer fails the test on any leak. A run that succeeds despite the failed
 * allocation must give the same result as the unarmed run (no silently wrong output).
 *
 * The hook is test-only: this program is linked with -Wl,--wrap=malloc,... (see the Makefile), so
 * judgerl's own calls to malloc, calloc, realloc, strdup and strndup go through the counters below,
 * and so do jansson's (json_set_alloc_funcs) except while jansson parses JSON text (json_loadb,
 * json_loads and json_load_file are wrapped too): jansson 2.14's lexer asserts on an allocation
 * failure, a defect of the library, not of judgerl. libyaml's allocations are not failed.
 * Production builds are unchanged. */
#include "harness.h"

#include <jansson.h>

#include "judgerl/config.h"
#include "judgerl/dataset.h"
#include "judgerl/fsutil.h"
#include "judgerl/hfmodel.h"
#include "judgerl/safetensors.h"
#include "judgerl/serve.h"
#include "judgerl/tokenizer.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);

static long fail_at = -1; /* the allocation number to fail (1-based), -1 = none */
static long n_alloc;      /* allocations counted since the last arm() */
static int failed_one;    /* the armed allocation was reached (and failed) */

static int paused; /* inside jansson's parser or the test's own bookkeeping: neither counted nor failed */

static int should_fail(void) {
    if (fail_at < 0 || paused) return 0;
    if (++n_alloc != fail_at) return 0;
    failed_one = 1;
    return 1;
}

void *__wrap_malloc(size_t n) { return should_fail() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t a, size_t b) { return should_fail() ? NULL : __real_calloc(a, b); }
void *__wrap_realloc(void *p, size_t n) { return should_fail() ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = __wrap_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}
char *__wrap_strndup(const char *s, size_t m) {
    size_t n = strnlen(s, m);
    char *d = __wrap_malloc(n + 1);
    if (d) { memcpy(d, s, n); d[n] = 0; }
    return d;
}
static void *json_alloc(size_t n) { return __wrap_malloc(n); }

json_t *__real_json_loadb(const char *b, size_t n, size_t flags, json_error_t *e);
json_t *__real_json_loads(const char *s, size_t flags, json_error_t *e);
json_t *__real_json_load_file(const char *path, size_t flags, json_error_t *e);
json_t *__wrap_json_loadb(const char *b, size_t n, size_t flags, json_error_t *e) {
    paused++;
    json_t *j = __real_json_loadb(b, n, flags, e);
    paused--;
    return j;
}
json_t *__wrap_json_loads(const char *s, size_t flags, json_error_t *e) {
    paused++;
    json_t *j = __real_json_loads(s, flags, e);
    paused--;
    return j;
}
json_t *__wrap_json_load_file(const char *path, size_t flags, json_error_t *e) {
    paused++;
    json_t *j = __real_json_load_file(path, flags, e);
    paused--;
    return j;
}

/* What a successful parse produced, to compare with the unarmed run. */
static char digest[8192];

/* One parse: returns its status; frees whatever it built. */
typedef jr_status (*parse_fn)(const void *input);

static jr_status p_safetensors(const void *in) {
    jr_safetensors st;
    jr_status rc = jr_st_open(&st, in);
    if (rc) return rc;
    size_t o = 0;
    paused++;
    for (int i = 0; i < st.n && o < sizeof digest - 200; i++)
        o += (size_t)snprintf(digest + o, sizeof digest - o, "%s:%d ", jr_st_find(&st, st.tensors[i].name) ? st.tensors[i].name : "?", (int)st.tensors[i].ndim);
    paused--;
    jr_st_close(&st);
    return rc;
}

static jr_status p_config(const void *in) {
    jr_model_config c;
    jr_status rc = jr_model_config_load(&c, in);
    if (rc) return rc;
    snprintf(digest, sizeof digest, "%d %d %d %d %d %g", (int)c.arch, c.hidden_size, c.num_hidden_layers, c.vocab_size, c.n_eos, c.rope_theta);
    jr_model_config_free(&c);
    return rc;
}

static jr_status p_tokenizer(const void *in) {
    const char *text = in;
    jr_tokenizer *t;
    jr_status rc = jr_tok_load_json(&t, text, strlen(text), "tokenizer.json");
    if (rc) return rc;
    jr_ids ids = {0};
    const char *s = "the cat <|im_start|>sat on the mat";
    rc = jr_tok_encode(t, s, strlen(s), JR_TOK_ADD_SPECIAL | JR_TOK_SPLIT_SPECIAL, &ids);
    size_t o = 0;
    for (size_t i = 0; !rc && i < ids.n && o < sizeof digest - 16; i++) o += (size_t)snprintf(digest + o, sizeof digest - o, "%d ", (int)ids.ids[i]);
    jr_ids_free(&ids);
    jr_tok_free(t);
    return rc;
}

static jr_status p_yaml(const void *in) {
    const char *text = in;
    json_t *v;
    jr_status rc = jr_yaml_parse(text, strlen(text), "config.yaml", &v);
    paused++;
    char *d = rc ? NULL : json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    snprintf(digest, sizeof digest, "%s", d ? d : "(dump failed)");
    free(d);
    paused--;
    json_decref(v);
    return rc;
}

static jr_status p_jsonl(const void *in) {
    jr_jsonl_reader *r;
    jr_status rc = jr_jsonl_open(&r, in, JR_BAD_LINE_SKIP, NULL, NULL);
    if (rc) return rc;
    size_t o = 0;
    digest[0] = 0;
    for (;;) {
        json_t *row;
        int64_t ln;
        if ((rc = jr_jsonl_next(r, &row, &ln, NULL)) || !row) break;
        o += (size_t)snprintf(digest + o, sizeof digest - o, "%lld:%d ", (long long)ln, (int)json_integer_value(json_object_get(row, "id")));
        json_decref(row);
    }
    if (!rc) snprintf(digest + o, sizeof digest - o, "bad %lld", (long long)jr_jsonl_bad_lines(r));
    jr_jsonl_close(r);
    return rc;
}

static jr_status p_request(const void *in) {
    const char *body = in;
    jr_serve_limits lim = {4, 512, 16, 1024};
    jr_serve_req r;
    jr_status rc = jr_serve_parse_request(&r, 1, body, strlen(body), &lim);
    if (rc) return rc;
    snprintf(digest, sizeof digest, "%d %s|%s %d %d %s %d %d %d %s", r.n_msgs, r.contents[0], r.contents[1], r.n, r.max_tokens, r.stop[1],
             r.n_bias, r.n_stop_ids, r.n_choices, r.choices[1]);
    jr_serve_req_free(&r);
    return rc;
}

/* Runs parse once unarmed (it must succeed; counts its allocations), then once with each of them
 * failing. */
static void sweep(const char *what, parse_fn parse, const void *input) {
    fail_at = 0; /* count, fail none */
    n_alloc = 0;
    digest[0] = 0;
    jr_status rc = parse(input);
    long total = n_alloc;
    char want[sizeof digest];
    memcpy(want, digest, sizeof digest);
    fail_at = -1;
    CHECK_MSG(rc == JR_OK, "%s: the unarmed parse failed: %s", what, jr_errmsg());
    CHECK_MSG(total > 0, "%s: no allocation seen (is the test linked with --wrap?)", what);
    long n_err = 0, n_ok = 0, silent = 0, wrong = 0;
    for (long k = 1; k <= total; k++) {
        jr_err_clear();
        fail_at = k;
        n_alloc = 0;
        failed_one = 0;
        digest[0] = 0;
        rc = parse(input);
        fail_at = -1;
        if (rc) {
            n_err++;
            if (!jr_errmsg()[0] && !silent++) printf("  %s: allocation %ld failed without a message (status %d)\n", what, k, (int)rc);
        } else {
            n_ok++;
            if (strcmp(digest, want)) {
                if (!wrong) printf("  %s: allocation %ld failed silently: got '%.200s', want '%.200s'\n", what, k, digest, want);
                wrong++;
            }
        }
        if (!failed_one) break; /* fewer allocations on this path than the unarmed one: done */
    }
    CHECK_MSG(silent == 0, "%s: %ld failures without a message", what, silent);
    CHECK_MSG(wrong == 0, "%s: %ld runs succeeded with a different result", what, wrong);
    printf("  %s: %ld allocations; %ld failed runs reported an error, %ld recovered\n", what, total, n_err, n_ok);
}

static char *slurp(const char *rel) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", jt_root(), rel);
    char *s = NULL;
    if (jr_read_file(path, &s, NULL)) return NULL;
    return s;
}

TEST(sweep_safetensors) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/hfio/convert.safetensors", jt_root());
    sweep("safetensors", p_safetensors, path);
}

TEST(sweep_config_json) {
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/hfio/qwen3_tied/config.json", jt_root());
    sweep("config.json", p_config, path);
}

TEST(sweep_tokenizer_json) {
    char *t = slurp("tests/fixtures/serve/bpe/tokenizer.json");
    CHECK(t);
    if (t) sweep("tokenizer.json", p_tokenizer, t);
    free(t);
}

TEST(sweep_yaml) {
    const char *y = "run:\n  out_dir: runs/x\n  seed: 3\nbase: &b {lr: 0.5, steps: [1, 2, 3]}\ntrainer: *b\n"
                    "judge:\n  endpoints: [{url: \"http://127.0.0.1:1/v1\", model: m}]\n  note: \"caf\xc3\xa9\"\n";
    sweep("yaml", p_yaml, y);
}

TEST(sweep_jsonl) {
    char *dir = jt_tmpdir("sweep");
    char *p = jr_path_join(dir, "rows.jsonl");
    const char *rows = "{\"id\":1,\"prompt\":\"a\",\"tags\":[1,2,{\"x\":null}]}\n\xEF\xBB\xBFnot json\n\n{\"id\":2,\"prompt\":\"caf\xc3\xa9\"}\r\n[1]\n";
    CHECK_OK(jr_write_atomic(p, rows, strlen(rows)));
    sweep("jsonl", p_jsonl, p);
    free(p);
    free(dir);
}

TEST(sweep_http_request) {
    const char *body =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":"
        "[{\"type\":\"text\",\"text\":\"hi \"},{\"type\":\"text\",\"text\":\"there\"}]}],\"n\":2,\"max_tokens\":20,"
        "\"temperature\":0.5,\"top_p\":0.9,\"stop\":[\"a\",\"b\"],\"seed\":3,\"logprobs\":true,\"top_logprobs\":2,"
        "\"logit_bias\":{\"5\":1,\"7\":-2},\"stop_token_ids\":[3,4],\"guided_choice\":[\"x\",\"y\"],\"stream\":true,"
        "\"stream_options\":{\"include_usage\":true}}";
    sweep("http request", p_request, body);
}

int main(void) {
    json_set_alloc_funcs(json_alloc, free);
    RUN(sweep_safetensors);
    RUN(sweep_config_json);
    RUN(sweep_tokenizer_json);
    RUN(sweep_yaml);
    RUN(sweep_jsonl);
    RUN(sweep_http_request);
    return jt_done();
}
