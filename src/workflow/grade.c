/* grade.c - gold grading of a workflow's answer by a verifier (never a judge): the reference
 * answer for maths and QA, the hidden tests in the sandbox for code */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judgerl/reward.h"
#include "judgerl/verify.h"
#include "judgerl/workflow.h"

jr_status jr_wf_grade(const json_t *row, const char *answer, const jr_sandbox_opts *sb, int *correct, char *why, size_t why_len) {
    *correct = 0;
    if (why_len) why[0] = 0;
    const char *type = json_string_value(json_object_get(row, "type"));
    if (!type) return jr_fail(JR_EINVAL, "row: field 'type' must be a string");
    if (!strcmp(type, "code")) {
        const char *tests = json_string_value(json_object_get(row, "hidden_tests"));
        const char *ep = json_string_value(json_object_get(row, "entry_point"));
        if (!tests || !ep) return jr_fail(JR_EINVAL, "row: a code row needs 'hidden_tests' and 'entry_point' to be graded");
        char *suite = malloc(strlen(tests) + 64);
        if (!suite) return jr_fail(JR_ENOMEM, "grade: out of memory");
        sprintf(suite, "%s\n\ndef check(candidate):\n    pass\n", tests); /* the driver calls check(entry_point) */
        jr_py_job job = {answer, suite, ep};
        jr_py_result pr;
        jr_status st = jr_sandbox_python(sb, &job, &pr);
        free(suite);
        if (st) return st;
        *correct = pr.outcome == JR_SB_PASSED;
        snprintf(why, why_len, "%s (%d of %d hidden asserts)", pr.result ? pr.result : "", pr.asserts_passed, pr.asserts_total);
        jr_py_result_free(&pr);
        return JR_OK;
    }
    char nb[64];
    const char *ref = jr_row_text_or_number(row, "answer", nb, sizeof nb);
    if (!ref) return jr_fail(JR_EINVAL, "row: field 'answer' (the reference) must be a string or a number to be graded");
    *correct = jr_answer_equiv(answer, ref);
    snprintf(why, why_len, "%s the reference", *correct ? "equivalent to" : "differs from");
    return JR_OK;
}
