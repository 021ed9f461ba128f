/* fns_exec.h - reward functions that run the response (code_tests) or read its final answer
 * GSM8K-style (final_answer); rows of the built-in table in fns.c */
#ifndef JUDGERL_REWARD_FNS_EXEC_H
#define JUDGERL_REWARD_FNS_EXEC_H

#include "judgerl/reward.h"

jr_status jr_rw_check_code_tests(const json_t *params);
jr_rw_rc jr_rw_eval_code_tests(const jr_config *cfg, const json_t *params, const json_t *row, jr_rw_out *out);
jr_status jr_rw_check_final_answer(const json_t *params);
jr_rw_rc jr_rw_eval_final_answer(const jr_config *cfg, const json_t *params, const json_t *row, jr_rw_out *out);

#endif
