/* fp8.h: step 10's conversion on the way (--serve-dtype fp8): a BF16 weight to FP8 E4M3 as the OCP 8-bit floating point spec (OFP8) defines it, round to nearest even, saturating. */
#ifndef RDMA_STEPS_FP8_H
#define RDMA_STEPS_FP8_H

#include <stdint.h>

/*
 * FP8 E4M3 (OFP8 revision 1.0, Table 2): a sign, 4 exponent bits (bias 7)
 * and 3 mantissa bits; no infinities; S.1111.111 is NaN, so the largest
 * magnitude is S.1111.110 = 1.75 x 2^8 = 448; the smallest normal
 * S.0001.000 = 2^-6, the smallest subnormal S.0000.001 = 2^-9.
 */
#define FP8_E4M3_MAX 0x7e	/* 448 */
#define FP8_E4M3_NAN 0x7f

/* What the conversion did to one value: fp8_show's words. */
enum fp8_fate {
	FP8_EXACT,	/* the E4M3 value is the BF16 value */
	FP8_ROUNDED,	/* to the nearest E4M3 value */
	FP8_TIE,	/* halfway between two: to the one whose last mantissa bit is 0 */
	FP8_SATURATED,	/* past 448 after rounding, or an infinity: +-448 */
	FP8_TO_ZERO,	/* at most half the smallest subnormal (2^-10): rounds to a zero of its sign */
	FP8_NAN,	/* a NaN stays a NaN, its sign kept */
};

/*
 * One BF16 bit pattern to E4M3, OFP8's saturating mode (§5.2): round the
 * mantissa to 3 bits, to nearest, ties to even; then a magnitude past 448
 * becomes +-448 (an infinity too), one that rounds under the smallest
 * subnormal (2^-9) a zero of its sign; a NaN becomes S.1111.111.  *FATE, when not NULL, says which.
 */
uint8_t fp8_from_bf16(uint16_t bf16, enum fp8_fate *fate);

/* N BF16 elements at SRC (host order, as the trainers keep them) to N E4M3 bytes at DST. */
void fp8_convert(const uint16_t *src, uint8_t *dst, uint64_t n);

/* The values, for the lines that show a conversion. */
double bf16_value(uint16_t bf16);
double fp8_value(uint8_t e4m3);

/*
 * --fp8-of: the E4M3 byte of each BF16 bit pattern in LIST (hex, comma
 * separated), a line each; no device.  0, or 2 after naming a word that is
 * no 16-bit hex pattern.
 */
int fp8_show_list(const char *list);

#endif
