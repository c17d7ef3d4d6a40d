/* fuzz_peer.h: what the harnesses of the two peer_info decoders share (step 03's exchange message, step 05's rc_pingpong line). */
#ifndef FUZZ_PEER_H
#define FUZZ_PEER_H

#include "device.h"
#include "exchange.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_24_BITS 0xffffffu

/*
 * The decoders only ever see whole messages, so the input's first LEN bytes
 * are MSG and a shorter input is padded with zeros: a short input is still a
 * message, one that ends in NULs.
 */
static inline void read_whole_message(void *msg, size_t len, const uint8_t *data, size_t size)
{
	memset(msg, 0, len);
	memcpy(msg, data, size < len ? size : len);
}

/* Whether the decoder accepted its message (RC 0); it refuses with -1 and returns nothing else. */
static inline bool accepted(int rc)
{
	if (rc != 0 && rc != -1)
		abort();
	return rc == 0;
}

/* What both decoders promise of a peer they accepted: a QPN (not 0) and a PSN of 24 bits, and a LID or a GID to reach it by. */
static inline void check_address(const struct peer_info *info)
{
	if (info->qpn == 0 || info->qpn > MAX_24_BITS || info->psn > MAX_24_BITS ||
	    (info->lid == 0 && gid_is_zero(&info->gid)))
		abort();
}

#endif
