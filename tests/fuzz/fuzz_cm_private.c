/* fuzz_cm_private.c: libFuzzer harness for cm_private_decode, step 03's decoder of the rdma_cm private data (--cm). */
#include "cm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The REP's private data, the larger of the two the CM delivers. */
#define CM_DELIVERED_MAX 196

/*
 * An accepted message holds nothing the encoder would not write: the fields
 * decoded are in range, and encoding them gives back the first 40 bytes,
 * whatever padding followed.  The reason for a refusal is always set.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t again[CM_PRIVATE_LEN];
	struct peer_info info = { 0 };
	char why[256] = "";
	size_t len = size < CM_DELIVERED_MAX ? size : CM_DELIVERED_MAX;
	int rc = cm_private_decode(data, len, &info, why, sizeof(why));

	if (rc == -1) {
		if (!why[0])
			abort();
		return 0;
	}
	if (rc != 0 || info.addr == 0 || info.len == 0)
		abort();
	/* The encoder writes the digest of a text; the decoder keeps the digest itself. */
	cm_private_encode(&info, again);
	if (memcmp(again, data, 32))
		abort();
	return 0;
}
