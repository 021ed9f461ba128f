/* wf_exec.h - what the executor's files share: the executor handle and one model call */
#ifndef JUDGERL_WF_EXEC_H
#define JUDGERL_WF_EXEC_H

#include <pthread.h>

#include "judgerl/judge.h"
#include "judgerl/workflow.h"

#define WF_TYPES 3 /* math, code, qa */

struct jr_wf_executor {
    jr_workflow_opts o;
    jr_wf_templates *tmpl;
    jr_judge *judge;
    int proto;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* a call's answer arrived */
    pthread_cond_t cv_work; /* a call was sent: the collector has something to wait for */
    long waiting;           /* calls sent and not yet collected (abandoned ones too) */
    int stop, started;
    void **lost; /* calls abandoned at a deadline, freed at close */
    int n_lost;
};

/* One model call's reply. */
typedef struct wf_reply {
    char *text;      /* reasoning stripped; owned */
    char *finish;    /* owned, may be NULL */
    long tokens;     /* server usage, -1 when none */
    int cached, timed_out;
    double latency_s;
    char error[512]; /* when the call failed */
} wf_reply;

jr_status wf_client_open(jr_wf_executor *e, const jr_judge_opts *jo);
void wf_client_close(jr_wf_executor *e);
/* Sends one user message; waits until the answer or `deadline` (jr_now_s() clock). 0 with out
 * filled, or -1 with out->error set. */
int wf_client_call(jr_wf_executor *e, const char *prompt, uint64_t seed, double deadline, wf_reply *out);
void wf_reply_free(wf_reply *r);

#endif
