/* fuzz_kv_table.c: libFuzzer harness for kv_table_decode, step 08's decoder of a request's block table. */
#include "kv_wire.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A small shape, so that short inputs reach the entries: 2 layers of 3 blocks, a pool of 16. */
#define LAYERS 2
#define BLOCKS 3
#define POOL_BLOCKS 16

/* What kv_wire.h promises of a table it accepted: every entry inside the pool, none twice. */
static void check_entries(const struct remote_table *t)
{
	bool seen[POOL_BLOCKS] = { false };

	if (!t->pool_addr || t->table.layers != LAYERS || t->table.blocks != BLOCKS)
		abort();
	for (int e = 0; e < LAYERS * BLOCKS; e++) {
		if (t->table.entry[e] >= POOL_BLOCKS || seen[t->table.entry[e]])
			abort();
		seen[t->table.entry[e]] = true;
	}
}

/* The input is the message, its length the decoder's LEN; request 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct remote_table t;
	int rc = kv_table_decode(data, size, 0, LAYERS, BLOCKS, POOL_BLOCKS, &t);

	if (rc == 0) {
		check_entries(&t);
		kv_table_free(&t.table);
	} else if (rc != -1 || t.table.entry) {
		abort();
	}
	return 0;
}
