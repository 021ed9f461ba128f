/* test_strbuf.c - the growable string: appends across reallocations, take, empty take */
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

int main(void) {
    RUN(append_and_take);
    return jt_done();
}
