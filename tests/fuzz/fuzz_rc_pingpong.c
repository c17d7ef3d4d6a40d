/* fuzz_rc_pingpong.c: libFuzzer harness for rc_pingpong_decode and rc_pingpong_printable, step 05's ibv_rc_pingpong codec. */
#include "device.h"
#include "rc_pingpong_wire.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_24_BITS 0xffffffu

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
	if (info->qpn == 0 || info->qpn > MAX_24_BITS || info->psn > MAX_24_BITS ||
	    info->mtu != MTU_NOT_SENT || (info->lid == 0 && gid_is_zero(&info->gid)))
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

/*
 * The decoder only ever sees whole lines, so the first RC_PINGPONG_MSG_LEN
 * bytes are used and a shorter input is padded with zeros: a short input is
 * still a line, one that ends in NULs.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char msg[RC_PINGPONG_MSG_LEN] = { 0 };
	struct peer_info info;
	int rc;

	memcpy(msg, data, size < sizeof(msg) ? size : sizeof(msg));
	check_printable(msg);
	rc = rc_pingpong_decode(msg, &info);
	if (rc == 0) {
		check_fields(&info);
		check_round_trip(msg, &info);
	} else if (rc != -1) {
		abort();
	}
	return 0;
}
