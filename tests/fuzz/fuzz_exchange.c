/* fuzz_exchange.c: libFuzzer harness for exchange_decode, step 03's decoder of the side-channel message. */
#include "device.h"
#include "exchange.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_24_BITS 0xffffffu

/* What exchange.h promises of a message it accepted: every field in range, the options text safe to show. */
static void check_fields(const struct peer_info *info)
{
	size_t len = strnlen(info->options, EXCHANGE_OPTIONS_LEN);

	if (info->mtu < IBV_MTU_256 || info->mtu > IBV_MTU_4096 ||
	    info->qpn == 0 || info->qpn > MAX_24_BITS || info->psn > MAX_24_BITS ||
	    info->addr == 0 || info->len == 0 || (info->lid == 0 && gid_is_zero(&info->gid)) ||
	    info->rd_atomic > EXCHANGE_RD_ATOMIC_MAX || info->rd_accept > EXCHANGE_RD_ATOMIC_MAX ||
	    len == EXCHANGE_OPTIONS_LEN)
		abort();
	for (size_t i = 0; i < len; i++)
		if (!isprint((unsigned char)info->options[i]))
			abort();
}

/* An accepted message holds nothing the encoder would not write: encoding the result gives it back. */
static void check_round_trip(const uint8_t msg[EXCHANGE_MSG_LEN], const struct peer_info *info)
{
	uint8_t again[EXCHANGE_MSG_LEN];

	exchange_encode(info, again);
	if (memcmp(again, msg, EXCHANGE_MSG_LEN))
		abort();
}

/*
 * The decoder only ever sees whole messages, so the first EXCHANGE_MSG_LEN
 * bytes are used and a shorter input is padded with zeros: a short input is
 * still a message, one that ends in NULs.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t msg[EXCHANGE_MSG_LEN] = { 0 };
	struct peer_info info;
	int rc;

	memcpy(msg, data, size < sizeof(msg) ? size : sizeof(msg));
	rc = exchange_decode(msg, &info);
	if (rc == 0) {
		check_fields(&info);
		check_round_trip(msg, &info);
	} else if (rc != -1) {
		abort();
	}
	return 0;
}
