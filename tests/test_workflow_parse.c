/* test_workflow_parse.c - the workflow parser: valid workflows and their static figures, and 40
 * malformed workflows each rejected with its exact line:column message */
#include "harness.h"

#include "judgerl/workflow.h"

static jr_workflow *parse(const char *s) {
    jr_workflow *w = NULL;
    jr_workflow_limits lim = jr_workflow_limits_default();
    if (jr_workflow_parse(s, strlen(s), &lim, &w)) return NULL;
    return w;
}

TEST(valid_workflows_and_their_figures) {
    jr_workflow *w = parse("# one direct answer\na = answer(problem)\nreturn a\n");
    CHECK(w && w->n_stmts == 1 && w->max_calls == 1 && w->n_operators == 1 && w->ret == 0);
    jr_workflow_free(w);
    w = parse("xs = answer(problem) x5\nbest = ensemble(xs)\nreturn best");
    CHECK(w && w->n_stmts == 2 && w->max_calls == 5 && w->stmts[0].kind == JR_WF_LIST_TEXT && w->stmts[1].kind == JR_WF_TEXT);
    jr_workflow_free(w);
    w = parse("p = program(problem)\nr = review(p)\nq = revise(p, r)\nreturn q\n");
    CHECK(w && w->max_calls == 4 && w->stmts[1].kind == JR_WF_REVIEWV);
    jr_workflow_free(w);
    w = parse("c = codegen(problem)\n  t = test(c, 3)   # fix up to 3 times\n\nreturn t\n");
    CHECK(w && w->max_calls == 4 && w->stmts[1].kind == JR_WF_CODE);
    jr_workflow_free(w);
    w = parse("a = answer(custom(problem, @\"List the facts first.\"))\nb = answer(problem)\n"
              "e = ensemble([a, b, format(a)], mode=llm)\nf = refine(e, 2)\nreturn f\n");
    CHECK(w && w->max_calls == 3 + 1 + 1 + 4 && w->n_operators == 6);
    if (w) CHECK_STR(w->nodes[w->nodes[w->nodes[w->stmts[0].expr].args[0]].args[1]].instr, "List the facts first.");
    jr_workflow_free(w);
    w = parse("cs = codegen(problem) x3\nc = mdensemble(cs)\nreturn c");
    CHECK(w && w->stmts[1].kind == JR_WF_CODE && w->max_calls == 6);
    jr_workflow_free(w);
}

static const struct { const char *text, *msg; } bad[] = {
    {"a = progam(problem)\nreturn a\n", "workflow:1:5: unknown operator 'progam' (did you mean 'program'?)"},
    {"a = answer(problem)\nb = answer(a)\nc = progam(b)\nreturn c\n", "workflow:3:5: unknown operator 'progam' (did you mean 'program'?)"},
    {"a = frobnicate(problem)\nreturn a\n", "workflow:1:5: unknown operator 'frobnicate' (operators: answer, custom, codegen, program, ensemble, ...)"},
    {"a = answer(problm)\nreturn a\n", "workflow:1:12: undefined name 'problm' (did you mean 'problem'?)"},
    {"a = answer(b)\nb = answer(problem)\nreturn b\n", "workflow:1:12: undefined name 'b'"},
    {"a = answer(problem)\nreturn b\n", "workflow:2:8: undefined name 'b' (did you mean 'a'?)"},
    {"a = answer(problem)\na = answer(a)\nreturn a\n", "workflow:2:1: name 'a' already defined at line 1"},
    {"a = answer(problem)\n", "workflow:2:1: missing 'return NAME' at the end"},
    {"", "workflow:1:1: empty workflow: write assignments and a final 'return NAME'"},
    {"# only a comment\n\n", "workflow:3:1: empty workflow: write assignments and a final 'return NAME'"},
    {"a = answer(problem)\nreturn a\nb = answer(a)\n", "workflow:3:1: nothing may follow 'return' (line 2)"},
    {"a = answer(problem, problem)\nreturn a\n", "workflow:1:5: 'answer' takes 1 argument, got 2"},
    {"a = revise(problem)\nreturn a\n", "workflow:1:5: 'revise' takes 2 arguments, got 1"},
    {"a = answer()\nreturn a\n", "workflow:1:5: 'answer' takes 1 argument, got 0"},
    {"a = answer(problem)\nt = test(a, 2)\nreturn t\n", "workflow:2:10: test: argument 1 must be code (from codegen or test), got text"},
    {"a = answer(problem)\nb = revise(a, a)\nreturn b\n", "workflow:2:15: revise: argument 2 must be a review (from review(x)), got text"},
    {"a = answer(problem)\nr = review(a)\nb = format(r)\nreturn b\n", "workflow:3:12: format: argument 1 must be text, got a review"},
    {"xs = answer(problem) x3\nb = answer(xs)\nreturn b\n", "workflow:2:12: list 'xs' can only go into ensemble or mdensemble"},
    {"a = answer(problem)\nb = answer([a, a])\nreturn b\n", "workflow:2:12: a list can only go into ensemble or mdensemble"},
    {"a = answer(problem)\nb = ensemble(a)\nreturn b\n", "workflow:2:14: ensemble: argument 1 must be a list ([a, b] or a name from `call xK`), got text"},
    {"xs = answer(problem) x3\nreturn xs\n", "workflow:2:8: return: 'xs' is a list; pass it to ensemble first"},
    {"a = answer(problem)\nr = review(a)\nreturn r\n", "workflow:3:8: return: 'r' is a review, not an answer"},
    {"a = answer(problem)\nreturn problem\n", "workflow:2:8: return: 'problem' is the input, not an answer"},
    {"a = answer(problem)\nreturn answer(a)\n", "workflow:2:8: return takes a name, not a call: assign the call first"},
    {"c = codegen(problem)\nt = test(c, 9)\nreturn t\n", "workflow:2:13: test: loops must be 1..5, got 9"},
    {"a = answer(problem)\nb = refine(a, 0)\nreturn b\n", "workflow:2:15: refine: rounds must be 1..5, got 0"},
    {"c = codegen(problem)\nt = test(c, problem)\nreturn t\n", "workflow:2:13: test: argument 2 must be a number 1..5, got text"},
    {"xs = answer(problem) x12\nb = ensemble(xs)\nreturn b\n", "workflow:1:22: x12: K must be 2..9"},
    {"xs = answer(problem) x1\nb = ensemble(xs)\nreturn b\n", "workflow:1:22: x1: K must be 2..9"},
    {"a = answer(problem)\nr = review(a) x3\nreturn a\n", "workflow:2:15: x3: only a call giving text or code can be repeated"},
    {"a = answer(problem) y3\nreturn a\n", "workflow:1:21: expected the end of the line or xK, got 'y3'"},
    {"a = custom(problem, problem)\nreturn a\n", "workflow:1:21: custom: argument 2 must be an instruction @\"...\", got text"},
    {"a = answer(@\"think\")\nreturn a\n", "workflow:1:12: answer: argument 1 must be text, got an instruction"},
    {"a = custom(problem, @\"think)\nreturn a\n", "workflow:1:21: unterminated instruction (missing closing '\"' on this line)"},
    {"a = custom(problem, @\"\")\nreturn a\n", "workflow:1:21: empty instruction"},
    {"a = custom(problem, think)\nreturn a\n", "workflow:1:21: undefined name 'think'"},
    {"a = custom(problem, @think)\nreturn a\n", "workflow:1:21: expected '\"' after '@' (an instruction is @\"text\")"},
    {"xs = answer(problem) x3\nb = ensemble(xs, mod=llm)\nreturn b\n", "workflow:2:18: unknown option 'mod' (did you mean 'mode'?)"},
    {"xs = answer(problem) x3\nb = ensemble(xs, mode=best)\nreturn b\n", "workflow:2:23: mode must be 'vote' or 'llm', got 'best'"},
    {"a = answer(problem, mode=llm)\nreturn a\n", "workflow:1:21: 'answer' takes no options"},
    {"a answer(problem)\nreturn a\n", "workflow:1:3: expected '=' after 'a'"},
    {"a = answer(problem\nreturn a\n", "workflow:1:19: expected ',' or ')' in the call to 'answer'"},
    {"a = answer(problem) $\nreturn a\n", "workflow:1:21: unexpected character '$'"},
    {"a = answer(problem)\n= answer(a)\nreturn a\n", "workflow:2:1: expected a name or 'return' at the start of a line"},
    {"a = answer(problem)\nb = ensemble([a])\nreturn b\n", "workflow:2:14: a list needs at least 2 items, got 1"},
    {"a = answer(problem)\nr = review(a)\nb = ensemble([a, r])\nreturn b\n", "workflow:3:18: a list item must be text or code, got a review"},
    {"a = answer(problem)\nb = ensemble([a, [a, a]])\nreturn b\n", "workflow:2:18: lists cannot be nested"},
    {"answer = answer(problem)\nreturn answer\n", "workflow:1:1: 'answer' is an operator and cannot be assigned"},
    {"problem = answer(problem)\nreturn problem\n", "workflow:1:1: 'problem' is the input and cannot be assigned"},
    {"a = problem\nreturn a\n", "workflow:1:5: the right side must be an operator call"},
    {"a = answer(format(custom(answer(problem), @\"x\")))\nreturn a\n", "workflow:1:26: calls nested deeper than 3"},
    {"a = answer(problem) x9\nb = answer(problem) x9\nc = answer(problem) x9\nd = ensemble(a)\nreturn d\n",
     "workflow:3:5: executor calls exceed the bound: this line brings the most calls to 27, at most 24"},
    {"a1 = answer(problem)\na2 = answer(a1)\na3 = answer(a2)\na4 = answer(a3)\na5 = answer(a4)\na6 = answer(a5)\n"
     "a7 = answer(a6)\na8 = answer(a7)\na9 = answer(a8)\na10 = answer(a9)\na11 = answer(a10)\na12 = answer(a11)\nreturn a12\n",
     "workflow:12:1: too many statements: at most 12, the return included"},
    {"a = answer(problem)\nreturn a b\n", "workflow:2:10: expected the end of the line after 'return a'"},
    {"a = answer(problem)\nb = format(a,)\nreturn b\n", "workflow:2:14: expected an argument after ','"},
    {"a = custom(problem, @\"caf\xc3\xa9\")\nb = answer(a) \xc3\xa9\nreturn b\n", "workflow:2:15: unexpected byte 0xC3"},
    {"a = answer(problem)\nreturn\n", "workflow:2:7: expected a name after 'return'"},
    {"a = ensemble([problem, problem])\nreturn a\n", "workflow:1:15: 'problem' is the input, not a candidate answer"},
    {"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa = answer(problem)\nreturn a\n", "workflow:1:1: name longer than 32 bytes"},
    {"a = answer(problem)\nb = answer(a)\xff\nreturn b\n", "workflow:2:14: unexpected byte 0xFF"},
};

TEST(malformed_workflows_give_line_and_column) {
    int n = (int)(sizeof bad / sizeof *bad);
    CHECK(n >= 30);
    for (int i = 0; i < n; i++) {
        jr_workflow *w = (jr_workflow *)1;
        jr_workflow_limits lim = jr_workflow_limits_default();
        jr_status st = jr_workflow_parse(bad[i].text, strlen(bad[i].text), &lim, &w);
        CHECK_MSG(st == JR_EFORMAT && w == NULL, "case %d parsed (st=%d)", i, (int)st);
        CHECK_MSG(!strcmp(jr_errmsg(), bad[i].msg), "case %d:\n     got: %s\n    want: %s", i, jr_errmsg(), bad[i].msg);
    }
}

TEST(text_need_not_be_terminated) {
    const char *s = "a = answer(problem)\nreturn a\nGARBAGE";
    jr_workflow *w = NULL;
    CHECK_OK(jr_workflow_parse(s, strlen(s) - 7, NULL, &w));
    jr_workflow_free(w);
}

/* jr_workflow_returned_op: the operator whose output is returned, through ensembles and reworking operators. */
TEST(operator_returned) {
    static const struct { const char *text; int op; } cases[] = {
        {"a = program(problem)\nreturn a\n", JR_WF_PROGRAM},
        /* an unused statement does not count: the returned variable decides */
        {"a = answer(problem)\nb = program(problem)\nreturn b\n", JR_WF_PROGRAM},
        {"a = answer(problem)\nb = program(problem)\nreturn a\n", JR_WF_ANSWER},
        /* a vote over K answers returns one of them: answer */
        {"xs = answer(problem) x5\nbest = ensemble(xs)\nreturn best\n", JR_WF_ANSWER},
        {"xs = codegen(problem) x3\nbest = mdensemble(xs)\nreturn best\n", JR_WF_CODEGEN},
        /* reworking operators follow their first argument */
        {"a = program(problem)\nb = refine(a, 1)\nreturn b\n", JR_WF_PROGRAM},
        {"c = codegen(problem)\nt = test(c, 2)\nreturn t\n", JR_WF_CODEGEN},
        {"p = program(problem)\nr = review(p)\nq = revise(p, r)\nreturn q\n", JR_WF_PROGRAM},
        {"a = answer(problem)\nf = format(a)\nreturn f\n", JR_WF_ANSWER},
        /* applied to the problem itself, they are the operator returned */
        {"f = format(problem)\nreturn f\n", JR_WF_FORMAT},
        {"r = refine(problem, 2)\nreturn r\n", JR_WF_REFINE},
        /* a generator over another's output is itself the producer */
        {"h = custom(problem, @\"Find the first hop.\")\nb = answer(h)\nreturn b\n", JR_WF_ANSWER},
        {"b = answer(problem)\nh = custom(b, @\"Say it again.\")\nreturn h\n", JR_WF_CUSTOM},
        /* a list literal: its items' producer, nested calls included; different producers are mixed */
        {"a = answer(problem)\nb = answer(problem)\ne = ensemble([a, b, format(a)])\nreturn e\n", JR_WF_ANSWER},
        {"a = answer(problem)\nb = program(problem)\ne = ensemble([a, b])\nreturn e\n", JR_WF_N_OPS},
        {"a = answer(problem)\nb = refine(format(program(problem)), 1)\nreturn b\n", JR_WF_PROGRAM},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        jr_workflow *w = parse(cases[i].text);
        CHECK_MSG(w != NULL, "case %zu does not parse: %s", i, jr_errmsg());
        if (!w) continue;
        int got = jr_workflow_returned_op(w);
        CHECK_MSG(got == cases[i].op, "case %zu: returned %d, want %d\n%s", i, got, cases[i].op, cases[i].text);
        jr_workflow_free(w);
    }
    CHECK(jr_workflow_returned_op(NULL) == JR_WF_N_OPS);
}

int main(void) {
    RUN(valid_workflows_and_their_figures);
    RUN(operator_returned);
    RUN(malformed_workflows_give_line_and_column);
    RUN(text_need_not_be_terminated);
    return jt_done();
}
