/* test_safetensors.c - safetensors: fp16/bf16 conversion against PyTorch and by hand, round trips, header validation */
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "judgerl/fsutil.h"
#include "judgerl/rng.h"
#include "judgerl/safetensors.h"

static char *tmp;

static char *fixture(const char *name) {
    char p[1024];
    snprintf(p, sizeof p, "%s/tests/fixtures/hfio/%s", jt_root(), name);
    return strdup(p);
}

static uint32_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* fp32 -> f16/bf16 of every fixture value equals torch's .half() / .bfloat16() bit for bit. */
TEST(narrowing_matches_torch) {
    char *p = fixture("convert.safetensors");
    jr_safetensors st;
    CHECK_OK(jr_st_open(&st, p));
    free(p);
    if (!st.map) return;
    const jr_st_tensor *x = jr_st_find(&st, "x"), *h = jr_st_find(&st, "x_f16"), *b = jr_st_find(&st, "x_bf16");
    CHECK(x && h && b);
    if (!x || !h || !b) { jr_st_close(&st); return; }
    CHECK(x->dtype == JR_DT_F32 && h->dtype == JR_DT_F16 && b->dtype == JR_DT_BF16 && x->numel > 1000);
    float *xs = malloc(x->nbytes);
    CHECK_OK(jr_st_read_f32(&st, x, xs));
    int bad16 = 0, badb = 0, n_sub = 0, n_tie = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        uint16_t th, tb;
        memcpy(&th, (const char *)h->data + 2 * i, 2);
        memcpy(&tb, (const char *)b->data + 2 * i, 2);
        uint16_t mh = jr_f32_to_f16(xs[i]), mb = jr_f32_to_bf16(xs[i]);
        if (isnan(xs[i])) { /* both quiet NaNs */
            if ((mh & 0x7c00) != 0x7c00 || !(mh & 0x3ff) || (th & 0x7c00) != 0x7c00) bad16++;
            if ((mb & 0x7f80) != 0x7f80 || !(mb & 0x7f)) badb++;
            continue;
        }
        if (mh != th && bad16++ < 5) printf("  f16(%a): judgerl %04x torch %04x\n", xs[i], mh, th);
        if (mb != tb && badb++ < 5) printf("  bf16(%a): judgerl %04x torch %04x\n", xs[i], mb, tb);
        if ((th & 0x7c00) == 0 && (th & 0x3ff)) n_sub++;
        if ((bits(xs[i]) & 0xffff) == 0x8000) n_tie++;
    }
    CHECK_MSG(bad16 == 0, "%d f16 mismatches", bad16);
    CHECK_MSG(badb == 0, "%d bf16 mismatches", badb);
    CHECK(n_sub > 10 && n_tie > 100); /* the fixture does exercise subnormals and ties */
    free(xs);
    jr_st_close(&st);
}

/* Values worked out by hand. */
TEST(narrowing_by_hand) {
    CHECK(jr_f32_to_f16(1.0f) == 0x3c00);
    CHECK(jr_f32_to_f16(-2.0f) == 0xc000);
    CHECK(jr_f32_to_f16(-0.0f) == 0x8000);
    CHECK(jr_f32_to_f16(1.0f + 0x1p-11f) == 0x3c00);      /* tie, even stays */
    CHECK(jr_f32_to_f16(1.0f + 3 * 0x1p-11f) == 0x3c02);  /* tie, odd rounds up */
    CHECK(jr_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01); /* above the tie */
    CHECK(jr_f32_to_f16(65504.0f) == 0x7bff);
    CHECK(jr_f32_to_f16(65519.0f) == 0x7bff);
    CHECK(jr_f32_to_f16(65520.0f) == 0x7c00);             /* tie at the top rounds to inf */
    CHECK(jr_f32_to_f16(1e10f) == 0x7c00);
    CHECK(jr_f32_to_f16(-INFINITY) == 0xfc00);
    CHECK(jr_f32_to_f16(0x1p-14f) == 0x0400);             /* smallest normal */
    CHECK(jr_f32_to_f16(0x1p-14f - 0x1p-25f) == 0x0400);  /* tie between 0x3ff and 0x400: even */
    CHECK(jr_f32_to_f16(0x1p-24f) == 0x0001);             /* smallest subnormal */
    CHECK(jr_f32_to_f16(0x1p-25f) == 0x0000);             /* tie with 0: even (0) */
    CHECK(jr_f32_to_f16(0x1.0001p-25f) == 0x0001);
    CHECK(jr_f32_to_f16(1.5f * 0x1p-24f) == 0x0002);      /* tie 1|2: even 2 */
    CHECK(jr_f32_to_f16(2.5f * 0x1p-24f) == 0x0002);      /* tie 2|3: even 2 */
    CHECK(jr_f32_to_f16(1e-40f) == 0x0000);
    uint16_t n = jr_f32_to_f16(NAN);
    CHECK((n & 0x7c00) == 0x7c00 && (n & 0x3ff));
    CHECK(jr_f32_to_bf16(1.0f) == 0x3f80);
    CHECK(jr_f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80);      /* tie, even */
    CHECK(jr_f32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);  /* tie, odd up */
    CHECK(jr_f32_to_bf16(-3.0f) == 0xc040);
    CHECK(jr_f32_to_bf16(3.4028235e38f) == 0x7f80);       /* FLT_MAX rounds to inf */
    CHECK(jr_f32_to_bf16(INFINITY) == 0x7f80);
    CHECK(jr_f32_to_bf16(1e-40f) == 0x0001);              /* f32 subnormal 0x000116c2 -> 0x0001 */
    uint16_t nb = jr_f32_to_bf16(NAN);
    CHECK((nb & 0x7f80) == 0x7f80 && (nb & 0x7f));
    /* a signalling NaN whose payload is only in the low bits stays a NaN, not inf */
    float snan;
    uint32_t sb = 0x7f800001;
    memcpy(&snan, &sb, 4);
    CHECK(isnan(jr_bf16_to_f32(jr_f32_to_bf16(snan))));
    CHECK(isnan(jr_f16_to_f32(jr_f32_to_f16(snan))));
}

/* Every f16 and bf16 bit pattern widens to the value the formats define (ldexp formula). */
TEST(widening_exhaustive) {
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
        float got = jr_f16_to_f32((uint16_t)h);
        if (e == 31) {
            if (m ? !isnan(got) : !(isinf(got) && (got < 0) == s)) bad++;
            continue;
        }
        double want = e ? ldexp(1.0 + m / 1024.0, e - 15) : ldexp((double)m, -24);
        if (s) want = -want;
        if ((double)got != want || !!signbit(got) != (s != 0)) bad++;
        if (jr_f32_to_f16(got) != h) bad++; /* and narrows back exactly */
    }
    CHECK_MSG(bad == 0, "%d f16 patterns wrong", bad);
    bad = 0;
    for (uint32_t b = 0; b < 65536; b++) {
        int s = b >> 15, e = (b >> 7) & 255, m = b & 127;
        float got = jr_bf16_to_f32((uint16_t)b);
        if (e == 255) {
            if (m ? !isnan(got) : !isinf(got)) bad++;
            continue;
        }
        double want = e ? ldexp(1.0 + m / 128.0, e - 127) : ldexp((double)m, -133);
        if (s) want = -want;
        if ((double)got != want || !!signbit(got) != (s != 0)) bad++;
        if (jr_f32_to_bf16(got) != b) bad++;
    }
    CHECK_MSG(bad == 0, "%d bf16 patterns wrong", bad);
}

static void fill(float *x, size_t n, uint64_t seed) {
    jr_rng r;
    jr_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) x[i] = (float)(jr_rng_normal(&r) * 3.0);
}

/* F32: written then read back, byte for byte; header layout as the reference writes it. */
TEST(roundtrip_f32) {
    char path[600];
    snprintf(path, sizeof path, "%s/rt.safetensors", tmp);
    float a[6 * 5], b[7], s = 42.5f;
    fill(a, 30, 1);
    fill(b, 7, 2);
    uint32_t nanbits = 0x7fc12345; /* a NaN payload survives F32 */
    memcpy(&b[3], &nanbits, 4);
    int32_t ids[4] = {1, -2, 300000, 4};
    jr_st_entry e[5] = {
        {.name = "layer.a", .ndim = 2, .shape = {6, 5}, .data = a},
        {.name = "b", .ndim = 1, .shape = {7}, .data = b},
        {.name = "scalar", .ndim = 0, .data = &s},
        {.name = "empty", .ndim = 2, .shape = {0, 3}, .data = a},
        {.name = "ids", .ndim = 1, .shape = {4}, .raw = ids, .raw_dtype = JR_DT_I32},
    };
    CHECK_OK(jr_st_write(path, e, 5, JR_DT_F32));
    char *text;
    size_t len;
    CHECK_OK(jr_read_file(path, &text, &len));
    uint64_t hlen;
    memcpy(&hlen, text, 8);
    CHECK(hlen % 8 == 0);
    CHECK(len == 8 + hlen + (30 + 7 + 1 + 0) * 4 + 16);
    CHECK(!strncmp(text + 8, "{\"__metadata__\":{\"format\":\"pt\"},\"layer.a\":{\"dtype\":\"F32\",\"shape\":[6,5],"
                             "\"data_offsets\":[0,120]}", 87));
    free(text);
    jr_safetensors st;
    CHECK_OK(jr_st_open(&st, path));
    CHECK(st.n == 5);
    CHECK_STR(jr_st_meta(&st, "format"), "pt");
    CHECK(jr_st_meta(&st, "nope") == NULL);
    CHECK(jr_st_find(&st, "nope") == NULL);
    const jr_st_tensor *ta = jr_st_find(&st, "layer.a"), *tb = jr_st_find(&st, "b"), *ts = jr_st_find(&st, "scalar");
    const jr_st_tensor *te = jr_st_find(&st, "empty"), *ti = jr_st_find(&st, "ids");
    CHECK(ta && tb && ts && te && ti);
    if (ta && tb && ts && te && ti) {
        CHECK(ta->ndim == 2 && ta->shape[0] == 6 && ta->shape[1] == 5 && ta->numel == 30 && ta->dtype == JR_DT_F32);
        CHECK(!memcmp(ta->data, a, sizeof a));
        CHECK(!memcmp(tb->data, b, sizeof b));
        CHECK(ts->ndim == 0 && ts->numel == 1);
        float back[30];
        CHECK_OK(jr_st_read_f32(&st, ta, back));
        CHECK(!memcmp(back, a, sizeof a));
        CHECK_OK(jr_st_read_f32(&st, ts, back));
        CHECK(back[0] == 42.5f);
        CHECK(te->numel == 0 && te->nbytes == 0);
        CHECK(ti->dtype == JR_DT_I32 && !memcmp(ti->data, ids, sizeof ids));
        CHECK(jr_st_read_f32(&st, ti, back) == JR_EUNSUPPORTED);
        CHECK(strstr(jr_errmsg(), "tensor 'ids'") != NULL);
    }
    jr_st_close(&st);
}

/* F16 / BF16: what is read back is exactly the rounded value. */
TEST(roundtrip_f16_bf16) {
    enum { N = 1000 };
    float x[N], y[N];
    fill(x, N, 3);
    x[0] = 1e-6f; x[1] = 70000.0f; x[2] = -INFINITY; x[3] = 0x1p-24f;
    jr_dtype dts[2] = {JR_DT_F16, JR_DT_BF16};
    for (int k = 0; k < 2; k++) {
        char path[600];
        snprintf(path, sizeof path, "%s/h%d.safetensors", tmp, k);
        jr_st_entry e = {.name = "x", .ndim = 1, .shape = {N}, .data = x};
        CHECK_OK(jr_st_write(path, &e, 1, dts[k]));
        jr_safetensors st;
        CHECK_OK(jr_st_open(&st, path));
        const jr_st_tensor *t = st.n == 1 ? &st.tensors[0] : NULL;
        CHECK(t && t->dtype == dts[k] && t->nbytes == 2 * N);
        if (t) {
            CHECK_OK(jr_st_read_f32(&st, t, y));
            int bad = 0;
            for (int i = 0; i < N; i++) {
                float want = k ? jr_bf16_to_f32(jr_f32_to_bf16(x[i])) : jr_f16_to_f32(jr_f32_to_f16(x[i]));
                if (bits(want) != bits(y[i])) bad++;
                if (!isinf(x[i]) && fabsf(x[i]) > 1e-4f && fabsf(x[i]) < 60000.0f &&
                    fabsf(y[i] - x[i]) > fabsf(x[i]) * (k ? 0x1p-8f : 0x1p-11f)) bad++; /* half an ulp */
            }
            CHECK_MSG(bad == 0, "%d values", bad);
            CHECK(k ? y[1] == 70144.0f : isinf(y[1])); /* 70000 overflows f16, bf16 rounds to 70144 */
        }
        jr_st_close(&st);
    }
}

/* An error in the middle of a write leaves the old file and no temporary behind. */
TEST(write_is_atomic) {
    char path[600];
    snprintf(path, sizeof path, "%s/atomic.safetensors", tmp);
    float a[4] = {1, 2, 3, 4};
    jr_st_entry e[2] = {{.name = "a", .ndim = 1, .shape = {4}, .data = a}, {.name = "a", .ndim = 1, .shape = {4}, .data = a}};
    CHECK_OK(jr_st_write(path, e, 1, JR_DT_F32));
    struct stat s0, s1;
    stat(path, &s0);
    CHECK(jr_st_write(path, e, 2, JR_DT_F32) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "duplicate tensor name 'a'") != NULL);
    CHECK(jr_st_write(path, e, 1, JR_DT_I32) == JR_EINVAL);
    jr_st_entry bad = {.name = "", .ndim = 1, .shape = {4}, .data = a};
    CHECK(jr_st_write(path, &bad, 1, JR_DT_F32) == JR_EINVAL);
    stat(path, &s1);
    CHECK(s0.st_ino == s1.st_ino && s0.st_size == s1.st_size);
    int others = 0;
    DIR *d = opendir(tmp);
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (strstr(de->d_name, "atomic.safetensors.tmp")) others++;
    if (d) closedir(d);
    CHECK(others == 0);
}

/* Builds a file image: 8-byte length + header (padded) + `data` bytes. */
static size_t image(unsigned char *out, const char *header, size_t data_len) {
    size_t h = strlen(header);
    uint64_t l = h;
    memcpy(out, &l, 8);
    memcpy(out + 8, header, h);
    memset(out + 8 + h, 0x3f, data_len);
    return 8 + h + data_len;
}

/* Each malformed header is refused with a message naming the file and, where there is one, the tensor. */
TEST(header_validation) {
    static const struct { const char *header; size_t data; const char *want; } cases[] = {
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, "tensor 'a': data_offsets [0,8] past end of file"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "tensor 'b': data_offsets [4,12] overlap tensor 'a'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16, "duplicate tensor name 'a'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "tensor 'a': shape [3] of F32 needs 12 bytes"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 0, "tensor 'a': missing data_offsets"},
        {"{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "tensor 'a': missing dtype"},
        {"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8, "tensor 'a': missing shape"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}}", 8, "tensor 'a': unknown field 'x'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "tensor 'a': shape[0] is not a non-negative"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", 8, "tensor 'a': shape[0] is not"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "tensor 'a': data_offsets [8,0] end before begin"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]}}", 8, "tensor 'a': data_offsets is not a list of two"},
        {"{\"a\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "tensor 'a': unsupported dtype 'Q4'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "tensor 'a': data_offsets [4,12] leave a gap of 4 bytes"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 12, "4 bytes after the last tensor"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,8]}}", 8, "tensor 'a': shape is too large"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "tensor 'a': 9 dimensions"},
        {"{\"__metadata__\":{\"format\":1}}", 0, "__metadata__ value of 'format' is not a string"},
        {"{\"__metadata__\":[]}", 0, "__metadata__ is not an object"},
        {"{\"a\":[1]}", 0, "tensor 'a': entry is not an object"},
        {"{\"\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}", 0, "empty name"},
        {"[1,2]", 0, "does not start with '{'"},
        {"{\"a\":{\"dtype\":\"F32\",", 0, "header is not valid JSON"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} x", 8, "header is not valid JSON"},
    };
    unsigned char buf[1024];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        size_t n = image(buf, cases[i].header, cases[i].data);
        jr_safetensors st;
        jr_status rc = jr_st_open_buffer(&st, buf, n, "t.safetensors");
        CHECK_MSG(rc != JR_OK, "case %zu accepted", i);
        CHECK_MSG(strstr(jr_errmsg(), cases[i].want) && !strncmp(jr_errmsg(), "t.safetensors: ", 15),
                  "case %zu: '%s' lacks '%s'", i, jr_errmsg(), cases[i].want);
        CHECK(st.n == 0 && st.tensors == NULL);
    }
    /* the length prefix itself */
    jr_safetensors st;
    CHECK(jr_st_open_buffer(&st, buf, 5, "t.safetensors") == JR_EFORMAT);
    CHECK(strstr(jr_errmsg(), "too short") != NULL);
    uint64_t big = 1000;
    memcpy(buf, &big, 8);
    CHECK(jr_st_open_buffer(&st, buf, 100, "t.safetensors") == JR_EFORMAT);
    CHECK(strstr(jr_errmsg(), "header length 1000 past end of file (size 100)") != NULL);
    /* valid corner cases: no tensors; zero-size tensors sharing an offset; metadata only */
    size_t n = image(buf, "{}      ", 0);
    CHECK_OK(jr_st_open_buffer(&st, buf, n, "t"));
    CHECK(st.n == 0);
    jr_st_close(&st);
    n = image(buf, "{\"z\":{\"dtype\":\"F16\",\"shape\":[0],\"data_offsets\":[0,0]},\"y\":{\"dtype\":\"BOOL\",\"shape\":[],"
                   "\"data_offsets\":[0,1]},\"x\":{\"dtype\":\"I8\",\"shape\":[0,5],\"data_offsets\":[1,1]}}", 1);
    CHECK_OK(jr_st_open_buffer(&st, buf, n, "t"));
    CHECK(st.n == 3 && jr_st_find(&st, "y") && jr_st_find(&st, "y")->numel == 1 && jr_st_find(&st, "x"));
    jr_st_close(&st);
}

/* Files on disk: a missing file, a directory, a truncated copy of a good file. */
TEST(open_errors) {
    jr_safetensors st;
    char path[600], cut[600];
    snprintf(path, sizeof path, "%s/missing.safetensors", tmp);
    CHECK(jr_st_open(&st, path) == JR_ENOTFOUND);
    CHECK(jr_st_open(&st, tmp) != JR_OK);
    CHECK(strstr(jr_errmsg(), "not a regular file") != NULL);
    snprintf(path, sizeof path, "%s/good.safetensors", tmp);
    snprintf(cut, sizeof cut, "%s/cut.safetensors", tmp);
    float a[64];
    fill(a, 64, 9);
    jr_st_entry e[2] = {{.name = "model.norm.weight", .ndim = 1, .shape = {32}, .data = a},
                        {.name = "w", .ndim = 2, .shape = {4, 8}, .data = a + 32}};
    CHECK_OK(jr_st_write(path, e, 2, JR_DT_F32));
    char *text;
    size_t len;
    CHECK_OK(jr_read_file(path, &text, &len));
    CHECK_OK(jr_write_atomic(cut, text, len - 100));
    free(text);
    CHECK(jr_st_open(&st, cut) == JR_EFORMAT);
    CHECK_MSG(strstr(jr_errmsg(), "cut.safetensors: tensor 'w': data_offsets [128,256] past end of file") != NULL, "%s",
              jr_errmsg());
    CHECK(st.map == NULL);
}

/* The rotary frequencies match transformers' default and llama3 computations (torch fixture). */
#include "judgerl/hfmodel.h"
TEST(rope_inv_freq_matches_torch) {
    char *p = fixture("convert.safetensors");
    jr_safetensors st;
    CHECK_OK(jr_st_open(&st, p));
    free(p);
    if (!st.map) return;
    float want[32], got[32];
    jr_model_config c;
    jr_model_config_init(&c, JR_ARCH_LLAMA);
    c.head_dim = 64;
    c.rope_theta = 10000;
    CHECK_OK(jr_st_read_f32(&st, jr_st_find(&st, "rope_default"), want));
    jr_model_rope_inv_freq(&c, got);
    for (int i = 0; i < 32; i++) CHECK_NEAR(got[i], want[i], 0, 2e-6); /* torch computes in fp32 */
    c.rope_theta = 500000;
    c.rope_type = JR_ROPE_LLAMA3;
    c.rope_factor = 32;
    c.rope_low_freq_factor = 1;
    c.rope_high_freq_factor = 4;
    c.rope_original_max_pos = 8192;
    CHECK_OK(jr_st_read_f32(&st, jr_st_find(&st, "rope_llama3"), want));
    jr_model_rope_inv_freq(&c, got);
    for (int i = 0; i < 32; i++) CHECK_NEAR(got[i], want[i], 0, 2e-6);
    jr_st_close(&st);
}

TEST(dtype_names) {
    jr_dtype d;
    CHECK(jr_dtype_parse("bfloat16", &d) == JR_OK && d == JR_DT_BF16);
    CHECK(jr_dtype_parse("F16", &d) == JR_OK && d == JR_DT_F16);
    CHECK(jr_dtype_parse("fp32", &d) == JR_OK && d == JR_DT_F32);
    CHECK(jr_dtype_parse("int4", &d) == JR_EINVAL);
    CHECK(strstr(jr_errmsg(), "'int4'") != NULL);
    CHECK(jr_dtype_size(JR_DT_BF16) == 2 && jr_dtype_size(JR_DT_I64) == 8);
    CHECK_STR(jr_dtype_name(JR_DT_BOOL), "BOOL");
}


/* A write that fails for lack of space reports the failed write's own errno (here EFBIG from a file
 * size limit, as ENOSPC on a full disk), not a stale errno left by a later call; nothing is left
 * behind. Runs in a child process (the limit and SIGXFSZ). */
TEST(write_failure_reports_the_real_errno) {
    char *p = jr_path_join(tmp, "limited.txt");
    char *st = jr_path_join(tmp, "limited.safetensors");
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {65536, 65536};
        setrlimit(RLIMIT_FSIZE, &rl);
        char msg[2][600] = {"", ""};
        jr_afile af;
        if (jr_afile_open(&af, p) == JR_OK) {
            static char block[1 << 20];
            memset(block, 'x', sizeof block);
            fwrite(block, 1, sizeof block, af.f); /* fails past the limit (unchecked, as a caller may) */
            errno = ENOENT; /* what a later unrelated call might leave */
            if (jr_afile_commit(&af) != JR_OK) snprintf(msg[0], sizeof msg[0], "%s", jr_errmsg());
        }
        static float big[100000];
        jr_st_entry e = {"w", 1, {100000}, big, NULL, JR_DT_F32};
        errno = ENOENT;
        if (jr_st_write(st, &e, 1, JR_DT_F32) != JR_OK) snprintf(msg[1], sizeof msg[1], "%s", jr_errmsg());
        if (write(fds[1], msg, sizeof msg) < 0) _exit(2);
        _exit(0);
    }
    close(fds[1]);
    char msg[2][600] = {"", ""};
    ssize_t got = read(fds[0], msg, sizeof msg);
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    CHECK(got == (ssize_t)sizeof msg);
    const char *want = strerror(EFBIG);
    CHECK_MSG(strstr(msg[0], "write failed") && strstr(msg[0], want), "afile: '%s'", msg[0]);
    CHECK_MSG(strstr(msg[1], "write failed") && strstr(msg[1], want), "safetensors: '%s'", msg[1]);
    CHECK(!jr_path_exists(p) && !jr_path_exists(st));
    free(p);
    free(st);
}

int main(void) {
    tmp = jt_tmpdir("st");
    RUN(narrowing_matches_torch);
    RUN(write_failure_reports_the_real_errno);
    RUN(narrowing_by_hand);
    RUN(widening_exhaustive);
    RUN(roundtrip_f32);
    RUN(roundtrip_f16_bf16);
    RUN(write_is_atomic);
    RUN(header_validation);
    RUN(open_errors);
    RUN(rope_inv_freq_matches_torch);
    RUN(dtype_names);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0) printf("  could not remove %s\n", tmp);
    free(tmp);
    return jt_done();
}
