/* fp8.c: step 10's conversion on the way (--serve-dtype fp8): a BF16 weight to FP8 E4M3 as the OCP 8-bit floating point spec (OFP8) defines it, round to nearest even, saturating. */
#include "fp8.h"
#include "report.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * BF16 is float32's top half: a sign, 8 exponent bits (bias 127) and 7
 * mantissa bits.  A normal BF16 value is 1.m x 2^(e - 127), its significand
 * 1.m the 8 bits 1mmmmmmm; E4M3 keeps 4 of them (1.mmm), at exponent
 * e - 127 + 7 if that is 1 to 15, and below that as a subnormal 0.mmm x 2^-6,
 * fewer bits again.  So the conversion drops the significand's low bits,
 * rounds, and clamps.
 */
uint8_t fp8_from_bf16(uint16_t bf16, enum fp8_fate *fate)
{
	uint8_t sign = (uint8_t)(bf16 >> 8 & 0x80), out;
	unsigned exp = bf16 >> 7 & 0xff, sig = 0x80 | (bf16 & 0x7f), drop, kept, rest, half;
	int e = (int)exp - 127 + 7;	/* E4M3's biased exponent, were it normal */
	enum fp8_fate f;

	if (exp == 0xff && (bf16 & 0x7f)) {
		out = sign | FP8_E4M3_NAN;
		f = FP8_NAN;
		goto done;
	}
	if (exp == 0xff) {	/* an infinity: saturating mode gives the largest, its sign kept */
		out = sign | FP8_E4M3_MAX;
		f = FP8_SATURATED;
		goto done;
	}
	if (exp == 0) {		/* zero, or a BF16 subnormal (under 2^-126): far under 2^-10 */
		out = sign;
		f = bf16 & 0x7f ? FP8_TO_ZERO : FP8_EXACT;
		goto done;
	}
	/* Bits of the 8-bit significand dropped: 4 for a normal result, more for a subnormal one. */
	drop = e >= 1 ? 4 : (unsigned)(4 + 1 - e);
	if (drop > 9) {		/* under 2^-10, half the smallest subnormal: rounds to zero */
		out = sign;
		f = FP8_TO_ZERO;
		goto done;
	}
	kept = sig >> drop;
	rest = sig & ((1u << drop) - 1);
	half = 1u << (drop - 1);
	/* Round to nearest; a tie goes to the even one, the kept bits' last 0. */
	if (rest > half || (rest == half && (kept & 1)))
		kept++;
	f = !rest ? FP8_EXACT : rest == half ? FP8_TIE : FP8_ROUNDED;
	if (e < 1) {
		/*
		 * A subnormal: KEPT counts 2^-9s, 0 to 8.  8 is 2^-6, the
		 * smallest normal, whose encoding S.0001.000 is that same 8.
		 */
		out = sign | (uint8_t)kept;
		if (!kept)
			f = FP8_TO_ZERO;
		goto done;
	}
	if (kept == 0x10) {	/* rounded up to 2.0: the next exponent */
		kept = 0x8;
		e++;
	}
	/* Past S.1111.110 (448), the next pattern would be NaN: saturate. */
	if (e > 15 || (e == 15 && (kept & 0x7) == 0x7)) {
		out = sign | FP8_E4M3_MAX;
		f = FP8_SATURATED;
		goto done;
	}
	out = sign | (uint8_t)(e << 3) | (uint8_t)(kept & 0x7);
done:
	if (fate)
		*fate = f;
	return out;
}

void fp8_convert(const uint16_t *src, uint8_t *dst, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		dst[i] = fp8_from_bf16(src[i], NULL);
}

/* BF16 is float32's top half: the same bits, the low 16 zero. */
double bf16_value(uint16_t bf16)
{
	uint32_t bits = (uint32_t)bf16 << 16;
	float v;

	memcpy(&v, &bits, sizeof(v));
	return v;
}

/* 2^K, exactly, for the small K of E4M3 (no libm). */
static double two_to(int k)
{
	double v = 1;

	for (; k > 0; k--)
		v *= 2;
	for (; k < 0; k++)
		v /= 2;
	return v;
}

double fp8_value(uint8_t e4m3)
{
	unsigned exp = e4m3 >> 3 & 0xf, man = e4m3 & 0x7;
	double v;

	if (exp == 0xf && man == 0x7)
		v = NAN;
	else if (exp == 0)
		v = man * two_to(-6 - 3);
	else
		v = (0x8 | man) * two_to((int)exp - 7 - 3);
	return e4m3 & 0x80 ? -v : v;
}

static const char *const fate_words[] = {
	[FP8_EXACT] = "exact",
	[FP8_ROUNDED] = "rounded to the nearest",
	[FP8_TIE] = "a tie, rounded to the even one (its last mantissa bit 0)",
	[FP8_SATURATED] = "saturated: past 448, E4M3's largest",
	[FP8_TO_ZERO] = "to zero: no more than half of 2^-9, the smallest subnormal",
	[FP8_NAN] = "NaN stays NaN",
};

int fp8_show_list(const char *list)
{
	const char *at = list;

	while (*at) {
		char *end;
		unsigned long b = strtoul(at, &end, 16);
		size_t len = strcspn(at, ",");
		enum fp8_fate fate;
		uint8_t out;

		if (end == at || (*end && *end != ',') || b > 0xffff || isspace((unsigned char)*at)) {
			report_error("--fp8-of: '%.*s' is no BF16 bit pattern: give 16-bit hex words, "
				     "comma separated, such as 0x3f80,0x43e0", (int)len, at);
			return 2;
		}
		out = fp8_from_bf16((uint16_t)b, &fate);
		show("fp8", "BF16 0x%04lx = %.9g -> E4M3 0x%02x = %.9g, %s", b, bf16_value((uint16_t)b),
		     out, fp8_value(out), fate_words[fate]);
		at = *end ? end + 1 : end;
	}
	return 0;
}
