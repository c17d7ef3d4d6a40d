/* fuzz_rc_pingpong.c: libFuzzer harness for rc_pingpong_decode and rc_pingpong_printable, step 05's ibv_rc_pingpong codec. */
#include "fuzz_peer.h"
#include "rc_pingpong_wire.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The shown copy is MSG up to its NUL or its 51st byte, every byte of it printable. */
static void check_printable(const char msg[RC_PINGPONG_MSG_LEN])
{
	char shown[RC_PINGPONG_MSG_LEN];
	size_t len;

	rc_pingpong_printable(msg, shown);
	len = strnlen(shown, RC_PINGPONG_MSG_LEN);
	if (len != strnlen(msg, RC_PINGPONG_MSG_LEN - 1))
		abort();
	for (size_t i = 0; i < len; i++)
		if (!isprint((unsigned char)shown[i]) ||
		    (shown[i] != msg[i] && shown[i] != '?'))
			abort();
}

/* What rc_pingpong_wire.h promises of a line it accepted. */
static void check_fields(const struct peer_info *info)
{
	check_address(info);
	if (info->mtu != MTU_NOT_SENT)
		abort();
}

/* An accepted line is the encoder's, but for the case of its hex digits. */
static void check_round_trip(const char msg[RC_PINGPONG_MSG_LEN], const struct peer_info *info)
{
	char again[RC_PINGPONG_MSG_LEN];

	rc_pingpong_encode(info, again);
	if (strcasecmp(again, msg))
		abort();
}

/* The input is a whole line (read_whole_message), one that ends in NULs where it is short. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char msg[RC_PINGPONG_MSG_LEN];
	struct peer_info info;

	read_whole_message(msg, sizeof(msg), data, size);
	check_printable(msg);
	if (accepted(rc_pingpong_decode(msg, &info))) {
		check_fields(&info);
		check_round_trip(msg, &info);
	}
	return 0;
}
