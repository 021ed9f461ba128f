/* wf_internal.h - what the workflow module's files share: operator signatures and call costs */
#ifndef JUDGERL_WF_INTERNAL_H
#define JUDGERL_WF_INTERNAL_H

#include <stddef.h>

#include "judgerl/workflow.h"

/* What an argument slot accepts. */
enum { JR_WF_A_TEXT, JR_WF_A_CODE, JR_WF_A_REVIEW, JR_WF_A_LIST, JR_WF_A_INSTR, JR_WF_A_LOOPS };

#define JR_WF_MD_VOTES 3 /* mdensemble: shuffled letter votes (executor calls) */

typedef struct jr_wf_sig {
    int n_args;
    int arg[3];
    int calls; /* executor calls of one run (test, refine and ensemble depend on arguments) */
} jr_wf_sig;

extern const jr_wf_sig jr_wf_sigs[JR_WF_N_OPS];

/* The operator called `s` (n bytes), -1 when none. */
int jr_wf_op_lookup(const char *s, size_t n);
/* Most executor calls of one run of op with its number argument (loops/rounds) and mode. */
int jr_wf_op_calls(jr_wf_op op, int num, int mode_llm);
/* The kind a call of op returns given its first argument's kind. */
jr_wf_kind jr_wf_result_kind(jr_wf_op op, jr_wf_kind arg0);
/* "text", "code", "a review", "a list". */
const char *jr_wf_kind_name(jr_wf_kind k);

#endif
