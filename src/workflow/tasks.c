/* tasks.c - seeded synthetic tasks for workflows: multi-step maths word problems, small code
 * tasks with public and hidden asserts, QA over a fictional knowledge base given in the question */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/rng.h"
#include "judgerl/strbuf.h"
#include "judgerl/workflow.h"

#define PICK(r, arr) (arr)[jr_rng_below((r), sizeof(arr) / sizeof *(arr))]
static long range(jr_rng *r, long lo, long hi) { return lo + (long)jr_rng_below(r, (uint64_t)(hi - lo + 1)); }


/* ---------------------------------------------------------------- maths: 1..4 steps ---- */
static const char *const people[] = {"Mia", "Noah", "Ava", "Liam", "Zoe", "Omar", "Ines", "Kofi", "Yuki", "Lena"};
static const char *const things[] = {"marbles", "stickers", "apples", "coins", "stamps", "beads", "cards", "shells"};
static const char *const ordinal[] = {"first", "then", "next", "finally"};

/* One sentence per line, each step of a different kind, its verb right after its ordinal ("Ava first
 * buys", then, next, finally): + (buys a bags of b), - (gives some away), x (trades each for m), +
 * (finds c more). The reference program mirrors the problem line by line: each step's sentence as a
 * comment, then its line of arithmetic, so writing it is copying numbers from the line just echoed;
 * and within a problem every word after the ordinal follows a different word, so the echo is a
 * copy that one previous word locates. Numbers are
 * small (one digit in 1-step items, at most two otherwise); the answers of 3-4 steps run into the
 * hundreds or thousands: exact for a program, error prone for a direct answer. */
/* The step count of row idx: a cycle of ten, 1-step 4, 2-step 3, 3-step 2, 4-step 1 (40/30/20/10%); the
 * tiny executor's programs get 1-step problems right, 2-step ones sometimes and 3-4 steps almost never
 * (docs/WORKFLOWS.md), so this mix keeps the long problems as a tail and the choice of operator visible. */
static const int kMathSteps[10] = {1, 2, 1, 3, 2, 1, 4, 2, 1, 3};

static json_t *math_row(jr_rng *r, long idx) {
    const char *who = PICK(r, people), *what = PICK(r, things);
    int steps = kMathSteps[idx % 10], small = steps == 1;
    long total = small ? range(r, 10, 30) : range(r, 10, 99);
    uint32_t kinds[4] = {0, 1, 2, 3};
    jr_rng_shuffle_idx(r, kinds, 4);
    jr_strbuf b = {0}, prog = {0};
    char *s = jr_strfmt("%s has %ld %s.\n", who, total, what);
    jr_strbuf_add(&b, s);
    free(s);
    s = jr_strfmt("def solve():\n    n = %ld\n", total);
    jr_strbuf_add(&prog, s);
    free(s);
    for (int k = 0; k < steps; k++) {
        char *line = NULL, *code = NULL;
        if (kinds[k] == 0) {
            long bags = range(r, 2, small ? 4 : 9), per = range(r, 2, small ? 5 : 9);
            line = jr_strfmt("%s %s buys %ld bags of %ld %s.", who, ordinal[k], bags, per, what);
            code = jr_strfmt("n = n + %ld * %ld", bags, per);
            total += bags * per;
        } else if (kinds[k] == 1) {
            long give = range(r, 2, total - 1 < (small ? 9 : 99) ? total - 1 : (small ? 9 : 99));
            line = jr_strfmt("%s %s gives away %ld %s.", who, ordinal[k], give, what);
            code = jr_strfmt("n = n - %ld", give);
            total -= give;
        } else if (kinds[k] == 2) {
            long m = range(r, 2, small ? 3 : 9);
            line = jr_strfmt("%s %s trades each one for %ld new ones.", who, ordinal[k], m);
            code = jr_strfmt("n = n * %ld", m);
            total *= m;
        } else {
            long c = small ? range(r, 2, 9) : range(r, 10, 99);
            line = jr_strfmt("%s %s finds %ld more %s.", who, ordinal[k], c, what);
            code = jr_strfmt("n = n + %ld", c);
            total += c;
        }
        jr_strbuf_add(&b, line ? line : "");
        jr_strbuf_addc(&b, '\n');
        s = jr_strfmt("    # %s\n    %s\n", line ? line : "", code ? code : "");
        jr_strbuf_add(&prog, s);
        free(s), free(line), free(code);
    }
    s = jr_strfmt("How many %s does %s have now?", what, who);
    jr_strbuf_add(&b, s);
    free(s);
    jr_strbuf_add(&prog, "    return n\n");
    char *problem = jr_strbuf_take(&b), *program = jr_strbuf_take(&prog);
    char ans[32];
    snprintf(ans, sizeof ans, "%ld", total);
    json_t *row = json_pack("{s:s, s:s, s:s, s:i, s:s}", "problem", problem ? problem : "", "answer", ans, "type", "math", "steps", steps,
                            "program", program ? program : "");
    free(problem);
    free(program);
    return row;
}

/* ------------------------------------------------- code: one function, public + hidden asserts ---- */
typedef struct {
    const char *name, *sig, *doc;
} code_family;

static void py_list(jr_strbuf *b, const long *v, int n) {
    jr_strbuf_addc(b, '[');
    for (int i = 0; i < n; i++) {
        char t[32];
        snprintf(t, sizeof t, "%s%ld", i ? ", " : "", v[i]);
        jr_strbuf_add(b, t);
    }
    jr_strbuf_addc(b, ']');
}

/* One test input and its expected output for family f with parameters p[]. */
static void code_case(jr_rng *r, int f, const long *p, jr_strbuf *call, long *expect) {
    long xs[12];
    int n = (int)range(r, 0, 10);
    for (int i = 0; i < n; i++) xs[i] = range(r, -40, 90);
    long e = 0;
    switch (f) {
    case 0: { /* sum of the numbers in [0, n) divisible by p0 or p1 */
        long lim = range(r, 0, 200);
        for (long x = 0; x < lim; x++) e += (x % p[0] == 0 || x % p[1] == 0) ? x : 0;
        char t[32];
        snprintf(t, sizeof t, "%ld", lim);
        jr_strbuf_add(call, t);
        break;
    }
    case 1: /* sum of the elements clamped to [p0, p1] */
        for (int i = 0; i < n; i++) e += xs[i] < p[0] ? p[0] : xs[i] > p[1] ? p[1] : xs[i];
        py_list(call, xs, n);
        break;
    case 2: /* number of elements strictly greater than the element p0 places before them */
        for (int i = (int)p[0]; i < n; i++) e += xs[i] > xs[i - p[0]];
        py_list(call, xs, n);
        break;
    case 3: { /* p0 * x^2 + p1 * x + p2 at x */
        long x = range(r, -20, 20);
        e = p[0] * x * x + p[1] * x + p[2];
        char t[32];
        snprintf(t, sizeof t, "%ld", x);
        jr_strbuf_add(call, t);
        break;
    }
    default: /* sum of every p0-th element, starting with the first */
        for (int i = 0; i < n; i += (int)p[0]) e += xs[i];
        py_list(call, xs, n);
        break;
    }
    *expect = e;
}

static json_t *code_row(jr_rng *r, long idx) {
    int f = (int)(idx % 5);
    long p[3] = {0};
    char *desc = NULL, *ref = NULL;
    const char *names[] = {"sum_multiples", "clamped_sum", "count_rises", "poly", "sum_every"};
    const char *args[] = {"n", "xs", "xs", "x", "xs"};
    switch (f) {
    case 0:
        p[0] = range(r, 2, 7);
        do p[1] = range(r, 3, 11); while (p[1] == p[0]);
        desc = jr_strfmt("Return the sum of the integers k with 0 <= k < n that are divisible by %ld or by %ld.", p[0], p[1]);
        ref = jr_strfmt("    return sum(k for k in range(n) if k %% %ld == 0 or k %% %ld == 0)\n", p[0], p[1]);
        break;
    case 1:
        p[0] = range(r, -10, 10);
        p[1] = p[0] + range(r, 5, 50);
        desc = jr_strfmt("Return the sum of the elements of xs after clamping each one to the range [%ld, %ld].", p[0], p[1]);
        ref = jr_strfmt("    return sum(min(max(x, %ld), %ld) for x in xs)\n", p[0], p[1]);
        break;
    case 2:
        p[0] = range(r, 1, 3);
        desc = jr_strfmt("Return how many elements xs[i] (i >= %ld) are strictly greater than xs[i - %ld].", p[0], p[0]);
        ref = jr_strfmt("    return sum(1 for i in range(%ld, len(xs)) if xs[i] > xs[i - %ld])\n", p[0], p[0]);
        break;
    case 3:
        p[0] = range(r, -9, 9);
        p[1] = range(r, -30, 30);
        p[2] = range(r, -99, 99);
        desc = jr_strfmt("Return %ld*x**2 + (%ld)*x + (%ld) for the integer x.", p[0], p[1], p[2]);
        ref = jr_strfmt("    return %ld * x * x + (%ld) * x + (%ld)\n", p[0], p[1], p[2]);
        break;
    default:
        p[0] = range(r, 2, 4);
        desc = jr_strfmt("Return the sum of xs[0], xs[%ld], xs[%ld], ... (every %ld-th element, starting with the first).", p[0], 2 * p[0], p[0]);
        ref = jr_strfmt("    return sum(xs[::%ld])\n", p[0]);
        break;
    }
    char *problem = jr_strfmt("def %s(%s):\n    \"\"\"%s\"\"\"\n", names[f], args[f], desc ? desc : "");
    char *answer = jr_strfmt("def %s(%s):\n%s", names[f], args[f], ref ? ref : "");
    jr_strbuf pub = {0}, hid = {0};
    for (int k = 0; k < 2 + 6; k++) {
        jr_strbuf call = {0};
        long e;
        code_case(r, f, p, &call, &e);
        char *c = jr_strbuf_take(&call);
        char *line = jr_strfmt("assert %s(%s) == %ld\n", names[f], c ? c : "", e);
        jr_strbuf_add(k < 2 ? &pub : &hid, line ? line : "");
        free(line);
        free(c);
    }
    char *pt = jr_strbuf_take(&pub), *ht = jr_strbuf_take(&hid);
    json_t *row = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "problem", problem ? problem : "", "answer", answer ? answer : "",
                            "type", "code", "entry_point", names[f], "public_tests", pt ? pt : "", "hidden_tests", ht ? ht : "");
    free(desc), free(ref), free(problem), free(answer), free(pt), free(ht);
    return row;
}

/* ------------------------------------------- QA: a fictional knowledge base, 1 or 2 hops ---- */
static const char *const syl[] = {"zor", "bla", "quen", "mir", "tav", "osk", "lum", "dre", "vax", "pel", "nor", "ith", "gal", "rue", "syn", "kol"};

static void make_name(jr_rng *r, char *out, size_t n, int parts) {
    out[0] = 0;
    for (int i = 0; i < parts; i++) {
        strncat(out, PICK(r, syl), n - strlen(out) - 1);
    }
    out[0] = (char)(out[0] - 'a' + 'A');
}

/* 1 when names[i] equals one of names[0..i). */
static int seen(char names[][32], int i) {
    for (int k = 0; k < i; k++)
        if (!strcmp(names[k], names[i])) return 1;
    return 0;
}

static json_t *qa_row(jr_rng *r, long idx) {
    enum { NP = 2, NC = 2, NT = 3 };
    char person[NP][32], company[NC][32], town[NT][32];
    /* names unique within each kind, so every question has one answer */
    for (int i = 0; i < NP; i++) {
        char a[16], b[16];
        do {
            make_name(r, a, sizeof a, 2);
            make_name(r, b, sizeof b, 2);
            snprintf(person[i], sizeof person[i], "%s %s", a, b);
        } while (seen(person, i));
    }
    for (int i = 0; i < NC; i++) {
        char a[24];
        do {
            make_name(r, a, sizeof a, 2);
            snprintf(company[i], sizeof company[i], "%s Works", a);
        } while (seen(company, i));
    }
    for (int i = 0; i < NT; i++)
        do make_name(r, town[i], sizeof town[i], 2); while (seen(town, i));
    int works[NP], born[NP], hq[NC];
    for (int i = 0; i < NP; i++) { works[i] = (int)jr_rng_below(r, NC); born[i] = (int)jr_rng_below(r, NT); }
    for (int i = 0; i < NC; i++) hq[i] = (int)jr_rng_below(r, NT);
    /* facts in a shuffled order */
    char *facts[NP * 2 + NC];
    int nf = 0;
    for (int i = 0; i < NP; i++) {
        facts[nf++] = jr_strfmt("%s works for %s.", person[i], company[works[i]]);
        facts[nf++] = jr_strfmt("%s was born in %s.", person[i], town[born[i]]);
    }
    for (int i = 0; i < NC; i++) facts[nf++] = jr_strfmt("%s has its headquarters in %s.", company[i], town[hq[i]]);
    uint32_t order[NP * 2 + NC];
    for (int i = 0; i < nf; i++) order[i] = (uint32_t)i;
    jr_rng_shuffle_idx(r, order, (uint32_t)nf);
    jr_strbuf b = {0};
    jr_strbuf_add(&b, "Facts:\n");
    for (int i = 0; i < nf; i++) {
        jr_strbuf_add(&b, "- ");
        jr_strbuf_add(&b, facts[order[i]] ? facts[order[i]] : "");
        jr_strbuf_addc(&b, '\n');
    }
    int hops = 1 + (int)(idx % 2), who = (int)jr_rng_below(r, NP);
    const char *answer;
    char *q;
    if (hops == 1) {
        if (jr_rng_below(r, 2)) { q = jr_strfmt("Question: Which company does %s work for?", person[who]); answer = company[works[who]]; }
        else { q = jr_strfmt("Question: In which town was %s born?", person[who]); answer = town[born[who]]; }
    } else {
        q = jr_strfmt("Question: In which town is the headquarters of the company that %s works for?", person[who]);
        answer = town[hq[works[who]]];
    }
    jr_strbuf_add(&b, q ? q : "");
    char *problem = jr_strbuf_take(&b);
    json_t *row = json_pack("{s:s, s:s, s:s, s:i}", "problem", problem ? problem : "", "answer", answer, "type", "qa", "hops", hops);
    for (int i = 0; i < nf; i++) free(facts[i]);
    free(q);
    free(problem);
    return row;
}

jr_status jr_wf_tasks(const char *domain, long n, uint64_t seed, long first, json_t **rows) {
    *rows = NULL;
    json_t *(*gen)(jr_rng *, long) = NULL;
    uint64_t stream = 0;
    if (!strcmp(domain, "math")) gen = math_row, stream = 1;
    else if (!strcmp(domain, "code")) gen = code_row, stream = 2;
    else if (!strcmp(domain, "qa")) gen = qa_row, stream = 3;
    else return jr_fail(JR_EINVAL, "tasks: domain '%s': expected math, code or qa", domain);
    if (n < 0 || first < 0) return jr_fail(JR_EINVAL, "tasks: n and first must be >= 0");
    json_t *a = json_array();
    if (!a) return jr_fail(JR_ENOMEM, "tasks: out of memory");
    for (long i = first; i < first + n; i++) {
        jr_rng r;
        jr_rng_seed2(&r, seed, stream * 0x100000000ULL + (uint64_t)i);
        json_t *row = gen(&r, i);
        if (!row) { json_decref(a); return jr_fail(JR_ENOMEM, "tasks: out of memory"); }
        char id[48];
        snprintf(id, sizeof id, "%s-%ld", domain, i);
        json_object_set_new(row, "id", json_string(id));
        json_object_set_new(row, "domain", json_string(domain));
        json_array_append_new(a, row);
    }
    *rows = a;
    return JR_OK;
}

/* Rows from index `first` on whose problem text is in neither `seen` nor the rows already taken, until n of them. */
jr_status jr_wf_tasks_unseen(const char *domain, long n, uint64_t seed, long first, const json_t *seen, json_t **rows) {
    *rows = NULL;
    if (n < 0 || first < 0) return jr_fail(JR_EINVAL, "tasks: n and first must be >= 0");
    json_t *set = json_object(), *a = json_array();
    jr_status st = set && a ? JR_OK : jr_fail(JR_ENOMEM, "tasks: out of memory");
    size_t k;
    json_t *r;
    json_array_foreach(seen, k, r) {
        const char *p = json_string_value(json_object_get(r, "problem"));
        if (!st && p && json_object_set_new(set, p, json_true())) st = jr_fail(JR_ENOMEM, "tasks: out of memory");
    }
    /* the code generator repeats problems (about 1,400 distinct in 4,000 rows): give up after 64 draws a row */
    long limit = first + 64 * n + 1024, i = first;
    while (!st && (long)json_array_size(a) < n && i < limit) {
        long chunk = n - (long)json_array_size(a);
        json_t *c = NULL;
        st = jr_wf_tasks(domain, chunk, seed, i, &c);
        i += chunk;
        json_array_foreach(c, k, r) {
            const char *p = json_string_value(json_object_get(r, "problem"));
            if (st || !p || json_object_get(set, p)) continue;
            if (json_object_set_new(set, p, json_true()) || json_array_append(a, r)) st = jr_fail(JR_ENOMEM, "tasks: out of memory");
        }
        json_decref(c);
    }
    if (!st && (long)json_array_size(a) < n)
        st = jr_fail(JR_EINVAL, "tasks: domain %s: only %zu of the %ld rows asked for have a problem not seen before (rows %ld..%ld of seed %llu)",
                     domain, json_array_size(a), n, first, limit - 1, (unsigned long long)seed);
    json_decref(set);
    if (st) { json_decref(a); return st; }
    *rows = a;
    return JR_OK;
}
