/* sampler_internal.h - the sampler's exponential pass, exposed for its test */
#ifndef JR_SAMPLE_SAMPLER_INTERNAL_H
#define JR_SAMPLE_SAMPLER_INTERNAL_H

/* z[i] = expf((z[i] - zmax) * inv_t) for i < n, bitwise glibc's expf (the same steps as its FMA
 * variant, 8 lanes at a time where the CPU has AVX-512), and returns the sum of the new z[i] in
 * double, added in index order. */
double jr_sample_exp_sum(float *z, int n, float zmax, float inv_t);

#endif
