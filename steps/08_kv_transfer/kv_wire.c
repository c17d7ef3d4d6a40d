/* kv_wire.c: step 08's messages on the side channel: the shape both sides must share, each request's block table, and its grant of windows. */
#include "kv_wire.h"
#include "byteorder.h"
#include "report.h"
#include "sock.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define KV_WIRE_VERSION 1

static void shape_encode(const struct kv_opts *opts, uint8_t msg[KV_SHAPE_LEN])
{
	memset(msg, 0, KV_SHAPE_LEN);
	memcpy(msg, KV_SHAPE_MAGIC, 4);
	msg[4] = KV_WIRE_VERSION;
	msg[5] = (uint8_t)opts->mode;
	msg[6] = (uint8_t)opts->qps;
	msg[7] = opts->merge;
	put_be16(msg + 8, (uint16_t)opts->layers);
	put_be16(msg + 10, (uint16_t)opts->blocks);
	put_be32(msg + 12, (uint32_t)opts->block_bytes);
	put_be16(msg + 16, (uint16_t)opts->requests);
	put_be16(msg + 18, (uint16_t)opts->pool);
	put_be16(msg + 20, (uint16_t)opts->run);
	msg[22] = opts->windows;
	msg[23] = opts->no_overlap;
	put_be16(msg + 24, (uint16_t)opts->layer_ms);
	msg[26] = (uint8_t)opts->violate;
}

/* One field of the shape: the peer's value against ours. */
static int same(const char *option, unsigned long peer, unsigned long ours)
{
	if (peer == ours)
		return 0;
	report_error("the peer was given %s %lu, this side %lu: give both sides the same options",
		     option, peer, ours);
	return -1;
}

static int shape_compare(const uint8_t *peer, const uint8_t *ours)
{
	if (memcmp(peer, KV_SHAPE_MAGIC, 4) || peer[4] != KV_WIRE_VERSION || peer[27]) {
		report_error("the peer's shape message is not step 08's version 1 (it starts "
			     "0x%02x%02x%02x%02x, version %u): is the peer 08_kv_transfer?",
			     peer[0], peer[1], peer[2], peer[3], peer[4]);
		return -1;
	}
	if (peer[5] != ours[5]) {
		report_error("the peer was given --mode %s, this side --mode %s: give both sides "
			     "the same options", kv_mode_name((enum kv_mode)(peer[5] & 1)),
			     kv_mode_name((enum kv_mode)ours[5]));
		return -1;
	}
	return same("--qps", peer[6], ours[6]) ||
	       same("--merge (1: given)", peer[7], ours[7]) ||
	       same("--layers", get_be16(peer + 8), get_be16(ours + 8)) ||
	       same("--blocks", get_be16(peer + 10), get_be16(ours + 10)) ||
	       same("--block-bytes", get_be32(peer + 12), get_be32(ours + 12)) ||
	       same("--requests", get_be16(peer + 16), get_be16(ours + 16)) ||
	       same("--pool", get_be16(peer + 18), get_be16(ours + 18)) ||
	       same("--run", get_be16(peer + 20), get_be16(ours + 20)) ||
	       same("--windows (1: given)", peer[22], ours[22]) ||
	       same("--no-overlap (1: given)", peer[23], ours[23]) ||
	       same("--layer-ms", get_be16(peer + 24), get_be16(ours + 24)) ||
	       same("--violate (1: rkey, 2: revoked, 3: past_window)", peer[26], ours[26]) ? -1 : 0;
}

int kv_exchange_shape(int fd, const struct kv_opts *opts, int timeout_s)
{
	uint8_t ours[KV_SHAPE_LEN], peer[KV_SHAPE_LEN];

	shape_encode(opts, ours);
	if (sock_send_all(fd, ours, sizeof(ours), timeout_s) ||
	    sock_recv_all(fd, peer, sizeof(peer), timeout_s))
		return -1;
	return shape_compare(peer, ours);
}

static void table_encode(int request, const struct block_table *t, uint64_t addr, uint32_t rkey,
			 uint8_t *msg)
{
	int n = t->layers * t->blocks;

	memset(msg, 0, KV_TABLE_HEAD_LEN);
	memcpy(msg, KV_TABLE_MAGIC, 4);
	msg[4] = KV_WIRE_VERSION;
	put_be16(msg + 6, (uint16_t)request);
	put_be32(msg + 8, rkey);
	put_be32(msg + 12, (uint32_t)n);
	put_be64(msg + 16, addr);
	for (int e = 0; e < n; e++)
		put_be32(msg + KV_TABLE_HEAD_LEN + 4 * e, t->entry[e]);
}

static int bad_table(const char *field, unsigned long long value, const char *rule)
{
	report_error("the peer's block table has a bad %s (%llu): %s", field, value, rule);
	return -1;
}

/* Every entry inside the pool, and none twice: a table that points outside it would let a WR do so. */
static int check_entries(const uint8_t *msg, int n, uint32_t n_blocks, uint32_t *entry)
{
	bool *seen = calloc(n_blocks, sizeof(*seen));
	int rc = 0;

	if (!seen) {
		report_error("no memory to check a block table of %d entries", n);
		return -1;
	}
	for (int e = 0; e < n && !rc; e++) {
		entry[e] = get_be32(msg + KV_TABLE_HEAD_LEN + 4 * e);
		if (entry[e] >= n_blocks)
			rc = bad_table("entry", entry[e], "a pool block index, 0 to the pool's blocks "
				       "less one: it points outside the pool");
		else if (seen[entry[e]])
			rc = bad_table("entry", entry[e], "each pool block holds one layer's block: it "
				       "comes twice");
		else
			seen[entry[e]] = true;
	}
	free(seen);
	return rc;
}

int kv_table_decode(const uint8_t *msg, size_t len, int request, int layers, int blocks,
		    uint32_t n_blocks, struct remote_table *remote)
{
	int n = layers * blocks;

	*remote = (struct remote_table){ .table = { .layers = layers, .blocks = blocks } };
	if (len < KV_TABLE_HEAD_LEN || memcmp(msg, KV_TABLE_MAGIC, 4))
		return bad_table("magic", len >= 4 ? get_be32(msg) : 0, "a table starts \"RDKT\"");
	if (msg[4] != KV_WIRE_VERSION)
		return bad_table("version", msg[4], "this program speaks version 1 only");
	if (msg[5])
		return bad_table("reserved byte", msg[5], "byte 5 is 0 in version 1");
	if (get_be16(msg + 6) != request)
		return bad_table("request number", get_be16(msg + 6), "the requests move in turn, "
				 "and this is not the one this side is on");
	if (get_be32(msg + 12) != (uint32_t)n || len != KV_TABLE_HEAD_LEN + 4 * (size_t)n)
		return bad_table("entry count", get_be32(msg + 12), "--layers x --blocks, as on "
				 "this side");
	remote->rkey = get_be32(msg + 8);
	remote->pool_addr = get_be64(msg + 16);
	if (!remote->pool_addr)
		return bad_table("pool address", 0, "must be non-zero");
	remote->table.entry = calloc((size_t)n, sizeof(*remote->table.entry));
	if (!remote->table.entry) {
		report_error("no memory for the peer's block table of %d entries", n);
		return -1;
	}
	if (check_entries(msg, n, n_blocks, remote->table.entry)) {
		kv_table_free(&remote->table);
		return -1;
	}
	return 0;
}

int kv_exchange_tables(int fd, int request, const struct block_table *mine, uint64_t addr,
		       uint32_t rkey, uint32_t n_blocks, struct remote_table *remote, int timeout_s)
{
	size_t len = KV_TABLE_HEAD_LEN + 4 * (size_t)(mine->layers * mine->blocks);
	uint8_t *out = malloc(len), *in = malloc(len);
	int rc = -1;

	*remote = (struct remote_table){ 0 };
	if (!out || !in) {
		report_error("no memory for two block tables of %zu bytes", len);
		goto out_free;
	}
	table_encode(request, mine, addr, rkey, out);
	if (!sock_send_all(fd, out, len, timeout_s) && !sock_recv_all(fd, in, len, timeout_s))
		rc = kv_table_decode(in, len, request, mine->layers, mine->blocks, n_blocks, remote);
out_free:
	free(in);
	free(out);
	return rc;
}

int kv_grant_send(int fd, const uint32_t *rkey, int n, int request, int timeout_s)
{
	size_t len = KV_GRANT_HEAD_LEN + 4 * (size_t)n;
	uint8_t *msg = calloc(1, len);
	int rc;

	if (!msg) {
		report_error("no memory for a grant of %d windows", n);
		return -1;
	}
	memcpy(msg, KV_GRANT_MAGIC, 4);
	msg[4] = 1;
	put_be16(msg + 6, (uint16_t)request);
	put_be32(msg + 8, (uint32_t)n);
	for (int i = 0; i < n; i++)
		put_be32(msg + KV_GRANT_HEAD_LEN + 4 * i, rkey[i]);
	rc = sock_send_all(fd, msg, len, timeout_s);
	free(msg);
	return rc ? -1 : 0;
}

int kv_grant_recv(int fd, uint32_t *rkey, int n, int request, int timeout_s)
{
	size_t len = KV_GRANT_HEAD_LEN + 4 * (size_t)n;
	uint8_t *msg = malloc(len);
	int rc = -1;

	if (!msg) {
		report_error("no memory for a grant of %d windows", n);
		return -1;
	}
	if (sock_recv_all(fd, msg, len, timeout_s))
		goto out_free;
	if (memcmp(msg, KV_GRANT_MAGIC, 4) || msg[4] != 1 || msg[5] || get_be16(msg + 6) != request ||
	    get_be32(msg + 8) != (uint32_t)n) {
		report_error("the peer's grant is not version 1's for request %d with %d windows (its "
			     "header: 0x%02x%02x%02x%02x, version %u, request %u, %u windows)", request, n,
			     msg[0], msg[1], msg[2], msg[3], msg[4], get_be16(msg + 6), get_be32(msg + 8));
		goto out_free;
	}
	for (int i = 0; i < n; i++)
		rkey[i] = get_be32(msg + KV_GRANT_HEAD_LEN + 4 * i);
	rc = 0;
out_free:
	free(msg);
	return rc;
}
