/* crc32c.h - CRC-32C (Castagnoli), as TFRecord framing and many storage formats use it */
#ifndef JUDGERL_CRC32C_H
#define JUDGERL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extends crc (0 to start) over n bytes: jr_crc32c(jr_crc32c(0, a, n), b, m) equals the CRC of
 * a followed by b. jr_crc32c(0, "123456789", 9) == 0xE3069283. */
uint32_t jr_crc32c(uint32_t crc, const void *data, size_t n);

/* TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8. */
uint32_t jr_crc32c_mask(uint32_t crc);

#endif
