/* test_constrain.c - choice and regex constraints: random scores always end in an accepted output */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "harness.h"

#include <pcre2.h>

#include "judgerl/constrain.h"
#include "judgerl/sampler.h"

/* A vocabulary: the 256 single bytes, some multi-byte pieces, one special token (NULL bytes). */
static const char *extra[] = {"yes", "ye", "no", "No", "Yes", "maybe", "es", "\xc3\xa9t\xc3\xa9", "\xc3\xa9", "12", "345", " ", "}", "{\"a\":"};
#define NX (int)(sizeof extra / sizeof *extra)
#define NV (256 + NX + 1)
static char byte_str[256][2];
static const char *bytes[NV];
static int32_t lens[NV];
static jr_token_bytes V;

static void vocab_init(void) {
    for (int b = 0; b < 256; b++) {
        byte_str[b][0] = (char)b;
        bytes[b] = byte_str[b];
        lens[b] = 1;
    }
    for (int i = 0; i < NX; i++) {
        bytes[256 + i] = extra[i];
        lens[256 + i] = (int32_t)strlen(extra[i]);
    }
    bytes[NV - 1] = NULL; /* special: the eos id */
    lens[NV - 1] = 0;
    V = (jr_token_bytes){NV, bytes, lens};
}

/* Runs one constrained generation with random scores; returns the output (caller frees). */
static char *run(const jr_constraint *c, jr_rng *r, int max_steps, int *ended) {
    jr_cstate s;
    if (jr_cstate_init(&s, c)) return NULL;
    uint8_t mask[NV];
    float logits[NV];
    jr_sample_scratch w = {0};
    jr_sample_params p = jr_sample_params_default();
    *ended = 0;
    for (int step = 0; step < max_steps; step++) {
        int complete = 0;
        int n = jr_constraint_mask(c, &s, mask, &complete);
        if (complete) { mask[NV - 1] = 1; n++; }
        if (n == 0) break;
        for (int i = 0; i < NV; i++) logits[i] = (float)(3 * jr_rng_normal(r));
        int32_t t;
        if (jr_sample(logits, NV, &p, mask, r, &w, &t)) break;
        if (t == NV - 1) { *ended = 1; break; }
        if (jr_constraint_advance(c, &s, t)) break;
    }
    char *out = malloc(s.len + 1);
    memcpy(out, s.buf ? s.buf : "", s.len);
    out[s.len] = 0;
    jr_cstate_free(&s);
    jr_sample_scratch_free(&w);
    return out;
}

TEST(choice_always_returns_a_choice) {
    const char *choices[] = {"yes", "no", "maybe", "yes sir", "\xc3\xa9t\xc3\xa9"};
    jr_constraint *c;
    CHECK_OK(jr_constraint_choice(&c, &V, choices, 5));
    jr_rng r;
    jr_rng_seed(&r, 5);
    int seen[5] = {0};
    for (int it = 0; it < 300; it++) {
        int ended;
        char *o = run(c, &r, 50, &ended);
        int k = -1;
        for (int j = 0; j < 5; j++)
            if (!strcmp(o, choices[j])) k = j;
        CHECK_MSG(k >= 0 && ended, "output '%s' ended=%d", o, ended);
        if (k >= 0) seen[k]++;
        free(o);
    }
    for (int j = 0; j < 5; j++) CHECK_MSG(seen[j] > 0, "choice %d never produced", j);
    jr_constraint_free(c);
    const char *empty[] = {""};
    CHECK(jr_constraint_choice(&c, &V, empty, 1) == JR_EINVAL && c == NULL);
}

TEST(regex_always_matches) {
    const char *pats[] = {"(yes|no)", "[0-9]{2,4}", "Rating: [1-5]", "\xc3\xa9+!", "\\{\"a\":[0-9]\\}"};
    jr_rng r;
    jr_rng_seed(&r, 9);
    for (int k = 0; k < 5; k++) {
        jr_constraint *c;
        CHECK_OK(jr_constraint_regex(&c, &V, pats[k]));
        if (!c) continue;
        int err;
        PCRE2_SIZE off;
        char full[128];
        snprintf(full, sizeof full, "^(?:%s)$", pats[k]);
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)full, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &err, &off, NULL);
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
        for (int it = 0; it < 40; it++) {
            int ended;
            char *o = run(c, &r, 40, &ended);
            int m = pcre2_match(re, (PCRE2_SPTR)o, strlen(o), 0, 0, md, NULL);
            CHECK_MSG(m >= 0 && ended, "pattern %s output '%s' ended=%d", pats[k], o, ended);
            free(o);
        }
        pcre2_match_data_free(md);
        pcre2_code_free(re);
        jr_constraint_free(c);
    }
}

TEST(regex_error_names_the_pattern) {
    jr_constraint *c;
    CHECK(jr_constraint_regex(&c, &V, "(abc") == JR_EINVAL);
    CHECK(c == NULL);
    CHECK(strstr(jr_errmsg(), "guided_regex") != NULL);
}

TEST(advance_rejects_invalid_token) {
    const char *choices[] = {"yes"};
    jr_constraint *c;
    CHECK_OK(jr_constraint_choice(&c, &V, choices, 1));
    jr_cstate s;
    CHECK_OK(jr_cstate_init(&s, c));
    CHECK(jr_constraint_advance(c, &s, 'n') == JR_EINVAL);
    CHECK_OK(jr_constraint_advance(c, &s, 256 + 1)); /* "ye" */
    uint8_t mask[NV];
    int complete;
    int n = jr_constraint_mask(c, &s, mask, &complete);
    CHECK(n == 1 && mask['s'] && !complete);
    jr_cstate_free(&s);
    jr_constraint_free(c);
}

/* 1 when text fully matches the regex of `schema` (built by jr_json_schema_regex). */
static int schema_accepts(const char *rx, const char *text) {
    int err;
    PCRE2_SIZE off;
    char *full = malloc(strlen(rx) + 16);
    sprintf(full, "^(?:%s)$", rx);
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)full, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &err, &off, NULL);
    free(full);
    if (!re) return -1;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    int m = pcre2_match(re, (PCRE2_SPTR)text, strlen(text), 0, 0, md, NULL);
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    return m >= 0;
}

static const char *rubric_schema =
    "{\"type\":\"object\",\"properties\":{\"explanation\":{\"type\":\"string\",\"maxLength\":12},"
    "\"criteria_met\":{\"type\":\"boolean\"},\"score\":{\"type\":\"integer\"},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\"]},\"maxItems\":3},"
    "\"opt\":{\"type\":\"number\"}},\"required\":[\"explanation\",\"criteria_met\",\"score\",\"tags\"]}";

/* A JSON schema's regex accepts its JSON texts and nothing else; a keyword outside the subset is an
 * error naming its path. */
TEST(json_schema_regex_accepts_exactly_the_schema) {
    json_t *s = json_loads(rubric_schema, 0, NULL);
    char *rx = NULL;
    CHECK_OK(jr_json_schema_regex(s, &rx));
    const char *yes[] = {"{\"explanation\": \"ok\", \"criteria_met\": true, \"score\": -3, \"tags\": []}",
                         "{\"explanation\":\"a q\",\"criteria_met\":false,\"score\":0,\"tags\":[\"a\",\"b\"],\"opt\":1.5e3}"};
    const char *no[] = {"{\"explanation\": \"ok\", \"criteria_met\": true, \"score\": 1}",             /* tags required */
                        "{\"criteria_met\": true, \"explanation\": \"ok\", \"score\": 1, \"tags\": []}", /* order */
                        "{\"explanation\": \"far too long text\", \"criteria_met\": true, \"score\": 1, \"tags\": []}",
                        "{\"explanation\": \"ok\", \"criteria_met\": 1, \"score\": 1, \"tags\": []}",
                        "{\"explanation\": \"ok\", \"criteria_met\": true, \"score\": 01, \"tags\": []}",
                        "{\"explanation\": \"ok\", \"criteria_met\": true, \"score\": 1, \"tags\": [\"a\",\"a\",\"a\",\"a\"]}"};
    for (size_t i = 0; rx && i < sizeof yes / sizeof *yes; i++) CHECK_MSG(schema_accepts(rx, yes[i]) == 1, "refused %s", yes[i]);
    for (size_t i = 0; rx && i < sizeof no / sizeof *no; i++) CHECK_MSG(schema_accepts(rx, no[i]) == 0, "accepted %s", no[i]);
    free(rx);
    json_decref(s);
    /* an unbounded string takes escape sequences; a bounded one plain characters only */
    s = json_loads("{\"type\":\"string\"}", 0, NULL);
    CHECK_OK(jr_json_schema_regex(s, &rx));
    if (rx) CHECK(schema_accepts(rx, "\"a \\\"q\\\" \\u00e9\"") == 1 && schema_accepts(rx, "\"a\\x\"") == 0);
    free(rx);
    json_decref(s);
    /* additionalProperties alone: RuscaRL's batched rubric answer */
    s = json_loads("{\"type\":\"object\",\"additionalProperties\":{\"enum\":[\"PRESENT\",\"NOT_PRESENT\"]}}", 0, NULL);
    CHECK_OK(jr_json_schema_regex(s, &rx));
    if (rx) {
        CHECK(schema_accepts(rx, "{\"1\": \"PRESENT\", \"2\": \"NOT_PRESENT\"}") == 1);
        CHECK(schema_accepts(rx, "{}") == 1);
        CHECK(schema_accepts(rx, "{\"1\": \"MAYBE\"}") == 0);
        CHECK(schema_accepts(rx, "{\"1\": \"PRESENT\",}") == 0);
    }
    free(rx);
    json_decref(s);
    struct { const char *schema, *needle; } bad[] = {
        {"{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"string\",\"pattern\":\"a+\"}}}", "json_schema.properties.x: keyword 'pattern'"},
        {"{\"type\":\"tuple\"}", "type 'tuple'"},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"null\"}},\"required\":[]}", "optional property must come after"},
        {"{\"type\":\"array\"}", "needs \"items\""},
        {"{\"oneOf\":[]}", "\"type\" is required"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        s = json_loads(bad[i].schema, 0, NULL);
        rx = NULL;
        CHECK_MSG(jr_json_schema_regex(s, &rx) == JR_EINVAL && !rx && strstr(jr_errmsg(), bad[i].needle), "case %zu: %s", i, jr_errmsg());
        json_decref(s);
    }
}

/* Decoding under a schema's regex with random scores always gives JSON of the schema's shape. */
TEST(json_schema_decoding_always_gives_the_schema) {
    json_t *s = json_loads(rubric_schema, 0, NULL);
    char *rx = NULL;
    CHECK_OK(jr_json_schema_regex(s, &rx));
    jr_constraint *c = NULL;
    if (rx) CHECK_OK(jr_constraint_regex(&c, &V, rx));
    jr_rng r;
    jr_rng_seed(&r, 11);
    for (int it = 0; c && it < 30; it++) {
        int ended;
        char *o = run(c, &r, 400, &ended);
        json_t *j = json_loads(o, 0, NULL);
        json_t *t = json_object_get(j, "tags");
        CHECK_MSG(ended && j && json_is_string(json_object_get(j, "explanation")) && json_is_boolean(json_object_get(j, "criteria_met")) &&
                      json_is_integer(json_object_get(j, "score")) && json_is_array(t) && json_array_size(t) <= 3,
                  "output '%s' ended=%d", o, ended);
        json_decref(j);
        free(o);
    }
    jr_constraint_free(c);
    free(rx);
    json_decref(s);
}

int main(void) {
    vocab_init();
    RUN(choice_always_returns_a_choice);
    RUN(regex_always_matches);
    RUN(regex_error_names_the_pattern);
    RUN(advance_rejects_invalid_token);
    RUN(json_schema_regex_accepts_exactly_the_schema);
    RUN(json_schema_decoding_always_gives_the_schema);
    return jt_done();
}
