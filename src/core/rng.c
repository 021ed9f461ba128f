/* rng.c - seedable random numbers (xoshiro256** seeded through splitmix64) */
#include "judgerl/rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void jr_rng_seed(jr_rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

void jr_rng_seed2(jr_rng *r, uint64_t seed, uint64_t stream) {
    uint64_t x = seed ^ 0x5851f42d4c957f2dULL;
    uint64_t mixed = splitmix64(&x) ^ (stream * 0xda942042e4dd58b5ULL + 0x632be59bd9b4e019ULL);
    jr_rng_seed(r, mixed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t jr_rng_u64(jr_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double jr_rng_double(jr_rng *r) { return (double)(jr_rng_u64(r) >> 11) * 0x1.0p-53; }

float jr_rng_float(jr_rng *r) { return (float)(jr_rng_u64(r) >> 40) * 0x1.0p-24f; }

uint64_t jr_rng_below(jr_rng *r, uint64_t n) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = jr_rng_u64(r); while (x >= limit);
    return x % n;
}

double jr_rng_normal(jr_rng *r) {
    double u1 = jr_rng_double(r), u2 = jr_rng_double(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void jr_rng_shuffle_idx(jr_rng *r, uint32_t *idx, uint32_t n) {
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = (uint32_t)jr_rng_below(r, i);
        uint32_t t = idx[i - 1];
        idx[i - 1] = idx[j];
        idx[j] = t;
    }
}

uint64_t jr_rng_hash(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}
