/* kv_wire.h: step 08's messages on the side channel: the shape both sides must share, each request's block table, and its grant of windows. */
#ifndef RDMA_STEPS_KV_WIRE_H
#define RDMA_STEPS_KV_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "kv_options.h"
#include "kv_pool.h"

/*
 * The shape, version 1, 28 bytes, multi-byte fields big-endian:
 *    0  4  magic "RDKS"
 *    4  1  version (1)
 *    5  1  --mode (0 pull, 1 push)
 *    6  1  --qps
 *    7  1  --merge (0 or 1)
 *    8  2  --layers
 *   10  2  --blocks
 *   12  4  --block-bytes
 *   16  2  --requests
 *   18  2  --pool
 *   20  2  --run
 *   22  1  --windows (0 or 1)
 *   23  1  --no-overlap (0 or 1)
 *   24  2  --layer-ms
 *   26  1  --violate (0 none, 1 rkey, 2 revoked, 3 past_window)
 *   27  1  reserved, 0
 */
#define KV_SHAPE_MAGIC "RDKS"
#define KV_SHAPE_LEN 28

/*
 * A request's block table, version 1, 24 bytes and then 4 per entry:
 *    0  4  magic "RDKT"
 *    4  1  version (1)
 *    5  1  reserved, 0
 *    6  2  the request's number, from 0
 *    8  4  rkey of the sender's pool (0: it grants no peer access)
 *   12  4  entries: --layers x --blocks
 *   16  8  the sender's pool address
 *   24  4  each entry: the pool block holding layer l, block b, at l x blocks + b
 * What an engine keeps in its metadata service; here it crosses the side
 * channel before each request moves.
 */
#define KV_TABLE_MAGIC "RDKT"
#define KV_TABLE_HEAD_LEN 24

/*
 * A request's grant (--windows), version 1, 12 bytes and then 4 per window:
 *    0  4  magic "RDKG"
 *    4  1  version (1)
 *    5  1  reserved, 0
 *    6  2  the request's number
 *    8  4  windows: one per segment
 *   12  4  each window's rkey, in segment order
 * The granting side sends it in place of its pool's rkey.
 */
#define KV_GRANT_MAGIC "RDKG"
#define KV_GRANT_HEAD_LEN 12

/* The peer's table, as it came: where each of its blocks is, and the key to reach them. */
struct remote_table {
	struct block_table table;
	uint64_t pool_addr;
	uint32_t rkey;
};

/* Sends this side's shape and compares the peer's, field by field; 0, or -1 naming the first that differs. */
int kv_exchange_shape(int fd, const struct kv_opts *opts, int timeout_s);

/*
 * Sends this side's table for REQUEST (its pool at ADDR, RKEY) and receives
 * the peer's into REMOTE (allocated: kv_table_free(&remote->table)),
 * checking every field: its request number, its size, and each entry inside
 * a pool of N_BLOCKS, none twice.  0, or -1 naming what is wrong.
 */
int kv_exchange_tables(int fd, int request, const struct block_table *mine, uint64_t addr,
		       uint32_t rkey, uint32_t n_blocks, struct remote_table *remote, int timeout_s);

/* Decodes a table message of LEN bytes; for the exchange and for the fuzzer.  0 or -1, as above. */
int kv_table_decode(const uint8_t *msg, size_t len, int request, int layers, int blocks,
		    uint32_t n_blocks, struct remote_table *remote);

/* The windows' N rkeys for REQUEST over the side channel: the granting side sends, the other receives. 0 or -1. */
int kv_grant_send(int fd, const uint32_t *rkey, int n, int request, int timeout_s);
int kv_grant_recv(int fd, uint32_t *rkey, int n, int request, int timeout_s);

#endif
