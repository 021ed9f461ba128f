/* rng.h - seedable random numbers (xoshiro256**): the only source of randomness in judgerl */
#ifndef JUDGERL_RNG_H
#define JUDGERL_RNG_H

#include <stddef.h>
#include <stdint.h>

/* The whole state is these 32 bytes: copy the struct to save it, copy it back to restore. */
typedef struct jr_rng {
    uint64_t s[4];
} jr_rng;

/* Seeds from a 64-bit seed (splitmix64 expansion); the same seed gives the same stream. */
void jr_rng_seed(jr_rng *r, uint64_t seed);
/* Derives an independent stream for (seed, stream id), e.g. one per sequence or worker. */
void jr_rng_seed2(jr_rng *r, uint64_t seed, uint64_t stream);
uint64_t jr_rng_u64(jr_rng *r);
/* Uniform in [0, 1) with 53 (double) or 24 (float) random bits. */
double jr_rng_double(jr_rng *r);
float jr_rng_float(jr_rng *r);
/* Uniform integer in [0, n) without modulo bias; n > 0. */
uint64_t jr_rng_below(jr_rng *r, uint64_t n);
/* Standard normal (Box-Muller). */
double jr_rng_normal(jr_rng *r);
/* Fisher-Yates shuffle of n indices in place. */
void jr_rng_shuffle_idx(jr_rng *r, uint32_t *idx, uint32_t n);
/* FNV-1a (64-bit) of n bytes: a seed or stream id from a name or a text. */
uint64_t jr_rng_hash(const void *p, size_t n);

#endif
