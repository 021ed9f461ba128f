/* test_strbuf.c - the one growable buffer: appends across reallocations, take, empty take, formatted
 * appends across growth, reset, appending its own bytes, bytes with NULs */
#include "harness.h"

#include "judgerl/strbuf.h"

TEST(append_and_take) {
    jr_strbuf b = {0};
    for (int i = 0; i < 1000; i++) jr_strbuf_add(&b, "ab");
    jr_strbuf_addc(&b, '!');
    jr_strbuf_addn(&b, "xyz", 2);
    CHECK(b.n == 2003 && !b.oom);
    char *s = jr_strbuf_take(&b);
    CHECK(s && strlen(s) == 2003 && s[1999] == 'b' && !strcmp(s + 2000, "!xy"));
    CHECK(b.p == NULL && b.n == 0);
    free(s);
    jr_strbuf e = {0};
    char *t = jr_strbuf_take(&e);
    CHECK_STR(t, "");
    free(t);
}

TEST(addf_reset_self_bytes) {
    jr_strbuf b = {0};
    for (int i = 0; i < 300; i++) jr_strbuf_addf(&b, "%03d,", i); /* grows past 64 bytes in place many times */
    CHECK(b.n == 1200 && !b.oom && !memcmp(b.p, "000,001,", 8) && !strcmp(b.p + 1196, "299,"));
    char big[5000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = 0;
    jr_strbuf_addf(&b, "[%s]", big); /* one format longer than the room left */
    CHECK(b.n == 1200 + 5001 && b.p[1200] == '[' && b.p[b.n - 1] == ']' && b.p[b.n] == 0);
    jr_strbuf_reset(&b);
    CHECK(b.n == 0 && b.p && b.p[0] == 0);
    jr_strbuf_add(&b, "abcdefgh");
    for (int i = 0; i < 12; i++) jr_strbuf_addn(&b, b.p + 2, 3); /* its own bytes, across reallocations */
    CHECK(b.n == 8 + 36 && !memcmp(b.p + 8, "cdecdecde", 9) && !memcmp(b.p + b.n - 3, "cde", 3));
    jr_strbuf_reset(&b);
    jr_strbuf_addn(&b, "a\0b", 3); /* bytes, NUL included */
    CHECK(b.n == 3 && b.p[1] == 0 && b.p[2] == 'b' && b.p[3] == 0);
    jr_strbuf_free(&b);
    CHECK(!b.p && !b.n && !b.cap && !b.oom);
}

int main(void) {
    RUN(append_and_take);
    RUN(addf_reset_self_bytes);
    return jt_done();
}
