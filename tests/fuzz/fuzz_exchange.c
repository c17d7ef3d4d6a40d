/* fuzz_exchange.c: libFuzzer harness for exchange_decode, step 03's decoder of the side-channel message. */
#include "exchange.h"
#include "fuzz_peer.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* What exchange.h promises of a message it accepted: every field in range, the options text safe to show. */
static void check_fields(const struct peer_info *info)
{
	size_t len = strnlen(info->options, EXCHANGE_OPTIONS_LEN);

	check_address(info);
	if (info->mtu < IBV_MTU_256 || info->mtu > IBV_MTU_4096 || info->addr == 0 || info->len == 0 ||
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

/* The input is a whole message (read_whole_message). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t msg[EXCHANGE_MSG_LEN];
	struct peer_info info;

	read_whole_message(msg, sizeof(msg), data, size);
	if (accepted(exchange_decode(msg, &info))) {
		check_fields(&info);
		check_round_trip(msg, &info);
	}
	return 0;
}
