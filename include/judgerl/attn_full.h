/* attn_full.h - non-causal (bidirectional) multi-head attention forward/backward, no mask, as torch.nn.MultiheadAttention's core */
#ifndef JUDGERL_ATTN_FULL_H
#define JUDGERL_ATTN_FULL_H

/* Same conventions as nn.h: outputs first, backward ACCUMULATES, NULL gradients are skipped,
 * nothing can fail. Every query row attends to ALL T keys (pads included: no mask).
 * q, k, v, out (B,T,H,D); att (B,H,T,T) the softmax probabilities of q.k^T / sqrt(D), saved for
 * the backward. */
void jr_attn_full_forward(float *out, float *att, const float *q, const float *k, const float *v, int B, int T,
                          int H, int D);
/* dq, dk, dv (B,T,H,D) += gradients from dout (B,T,H,D), the saved att and q, k, v. */
void jr_attn_full_backward(float *dq, float *dk, float *dv, const float *dout, const float *att, const float *q,
                           const float *k, const float *v, int B, int T, int H, int D);

#endif
