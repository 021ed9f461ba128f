/* test_utf8.c - the UTF-8 module against Python's rules: decode/encode round trips, the ill-formed
 * sequences it must refuse, U+FFFD per maximal subpart (as bytes.decode(errors="replace")), the
 * incomplete tail of a stream */
#include "harness.h"

#include "judgerl/utf8.h"

TEST(decode_encode) {
    const uint32_t cps[] = {0, 0x41, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFD, 0xFFFF, 0x10000, 0x10FFFF};
    for (size_t i = 0; i < sizeof cps / sizeof *cps; i++) {
        char b[4];
        uint32_t back = 0xFFFFFFFF;
        size_t n = jr_utf8_encode(cps[i], b);
        CHECK_MSG(n == (cps[i] < 0x80 ? 1u : cps[i] < 0x800 ? 2u : cps[i] < 0x10000 ? 3u : 4u), "U+%X", (unsigned)cps[i]);
        CHECK_MSG(jr_utf8_decode(b, n, &back) == n && back == cps[i], "U+%X", (unsigned)cps[i]);
        CHECK_MSG(jr_utf8_lead_len((unsigned char)b[0]) == n, "U+%X", (unsigned)cps[i]);
        CHECK(n == 1 || jr_utf8_decode(b, n - 1, &back) == 0); /* truncated */
    }
    /* ill-formed: overlong, surrogates, above U+10FFFF, stray continuation, bad lead bytes */
    const char *bad[] = {"\xC0\x80", "\xC1\xBF", "\xE0\x80\x80", "\xE0\x9F\xBF", "\xED\xA0\x80", "\xED\xBF\xBF",
                         "\xF0\x80\x80\x80", "\xF0\x8F\xBF\xBF", "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\x80", "\xBF",
                         "\xFF", "\xC3\x28"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        uint32_t cp = 7;
        CHECK_MSG(jr_utf8_decode(bad[i], strlen(bad[i]), &cp) == 0 && cp == 7, "case %zu", i);
        CHECK_MSG(jr_utf8_invalid_at(bad[i], strlen(bad[i]), 0) == 0, "case %zu", i);
    }
}

TEST(invalid_at) {
    CHECK(jr_utf8_invalid_at("abc\xC3\xA9z", 6, 0) == 6);
    CHECK(jr_utf8_invalid_at("ab\xC3", 3, 0) == 2);
    CHECK(jr_utf8_invalid_at("a\0b", 3, 0) == 3);
    CHECK(jr_utf8_invalid_at("a\0b", 3, 1) == 1);
    CHECK(jr_utf8_invalid_at("\xE2\x82\xAC\xED\xA0\x80", 6, 0) == 3);
}

/* The expected strings are Python 3's bytes.decode("utf-8", errors="replace") re-encoded. */
TEST(lossy_maximal_subparts) {
    struct { const char *in; size_t n; const char *want; } c[] = {
        {"plain", 5, "plain"},
        {"a\xE2\x82z", 4, "a\xEF\xBF\xBDz"},                        /* truncated 3-byte: one U+FFFD */
        {"\xF0\x9F\x98", 3, "\xEF\xBF\xBD"},                        /* truncated 4-byte at the end */
        {"\xC0\xAF", 2, "\xEF\xBF\xBD\xEF\xBF\xBD"},                /* C0 is never a lead: two */
        {"\xED\xA0\x80", 3, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"}, /* a surrogate: three */
        {"\xF4\x90\x80\x80", 4, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},
        {"\xE2\x82\xAC\x80x", 5, "\xE2\x82\xAC\xEF\xBF\xBDx"},      /* a stray continuation after a whole char */
        {"\xE1\x80\xE2\xF0\x91\x92\xF1\xBF\x41", 9, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\x41"},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        jr_strbuf b = {0};
        jr_utf8_append_lossy(&b, c[i].in, c[i].n);
        CHECK_MSG(!b.oom && b.n == strlen(c[i].want) && !memcmp(b.p, c[i].want, b.n), "case %zu: got %zu bytes", i, b.n);
        CHECK(jr_utf8_invalid_at(b.p, b.n, 0) == b.n);
        jr_strbuf_free(&b);
    }
}

TEST(incomplete_tail) {
    size_t miss = 9;
    CHECK(jr_utf8_incomplete_tail("ab", 2, &miss) == 0 && miss == 0);
    CHECK(jr_utf8_incomplete_tail("a\xE2\x82", 3, &miss) == 2 && miss == 1);
    CHECK(jr_utf8_incomplete_tail("a\xF0", 2, &miss) == 1 && miss == 3);
    CHECK(jr_utf8_incomplete_tail("\xE2\x82\xAC", 3, &miss) == 0 && miss == 0);
    CHECK(jr_utf8_incomplete_tail("\xF0\x9F\x98", 3, NULL) == 3);
    CHECK(jr_utf8_incomplete_tail("", 0, &miss) == 0 && miss == 0);
    CHECK(jr_utf8_incomplete_tail("a\xED\x9F", 3, &miss) == 2 && miss == 1); /* U+D7xx still possible */
    /* bytes that can never become a character are not held back */
    const char *never[] = {"a\xE0\x80", "a\xED\xA0", "\xF4\x90", "\xC0", "\xC1", "\xF8", "\xFF", "\xE2\x82\x41"};
    for (size_t i = 0; i < sizeof never / sizeof *never; i++) {
        miss = 9;
        CHECK_MSG(jr_utf8_incomplete_tail(never[i], strlen(never[i]), &miss) == 0 && miss == 0, "case %zu", i);
    }
}

int main(void) {
    RUN(decode_encode);
    RUN(invalid_at);
    RUN(lossy_maximal_subparts);
    RUN(incomplete_tail);
    return jt_done();
}
