/* clock.h - the one monotonic clock (seconds since an arbitrary start, for durations and deadlines) and the process CPU clock */
#ifndef JUDGERL_CLOCK_H
#define JUDGERL_CLOCK_H

/* CLOCK_MONOTONIC in seconds (never jumps with the wall clock); only differences mean anything. */
double jr_now_s(void);

/* The CPU time of the whole process (all threads) in seconds: on a shared machine, the cost of the
 * work itself however long the process waited for a core (benchmarks, the generator's ITL budget). */
double jr_cpu_s(void);

#endif
