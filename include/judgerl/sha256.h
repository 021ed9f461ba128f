/* sha256.h - SHA-256 (FIPS 180-4): one-shot and streaming, as lowercase hex */
#ifndef JUDGERL_SHA256_H
#define JUDGERL_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* A streaming hash: init, update any number of times, final. */
typedef struct jr_sha256 {
    uint32_t h[8];
    unsigned char buf[64];
    size_t n;     /* bytes waiting in buf */
    uint64_t len; /* bytes hashed so far */
} jr_sha256;

void jr_sha256_init(jr_sha256 *s);
void jr_sha256_update(jr_sha256 *s, const void *data, size_t len);
/* Writes the digest as 64 hex chars + NUL; s must be initialised again before reuse. */
void jr_sha256_final_hex(jr_sha256 *s, char out[65]);

/* SHA-256 of data[0..len) as 64 hex chars + NUL. */
void jr_sha256_hex(const void *data, size_t len, char out[65]);

#endif
