/* clock.h - the one monotonic clock: seconds since an arbitrary start, for durations and deadlines */
#ifndef JUDGERL_CLOCK_H
#define JUDGERL_CLOCK_H

/* CLOCK_MONOTONIC in seconds (never jumps with the wall clock); only differences mean anything. */
double jr_now_s(void);

#endif
