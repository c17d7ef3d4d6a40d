/* lossy_wire.c: step 11's messages: the asks and SACKs on the RC control QP, the plan and the end on the side channel, every field the peer sends checked. */
#include "lossy_wire.h"
#include "byteorder.h"
#include "report.h"
#include "sock.h"

#include <string.h>

#define PLAN_MAGIC "LPLN"
#define PLAN_LEN 20
#define END_MAGIC "LEND"
#define END_LEN 32
#define VERDICT_MAGIC "LCHK"
#define VERDICT_LEN 8

size_t sack_encode(uint8_t *msg, const struct sack *s, int paths, const struct chunk_map *m)
{
	size_t at = sack_header_len(paths), words = chunk_map_bytes(m->n) / 8;

	memcpy(msg, SACK_MAGIC, 4);
	msg[4] = (uint8_t)s->kind;
	msg[5] = (uint8_t)paths;
	put_be16(msg + 6, 0);
	put_be32(msg + 8, s->round);
	put_be32(msg + 12, m->n);
	put_be32(msg + 16, s->kind == SACK_ASK ? 0 : s->n_in);
	put_be32(msg + 20, 0);
	for (int k = 0; k < paths; k++) {
		put_be64(msg + 24 + 16 * k, s->count[k]);
		put_be64(msg + 32 + 16 * k, s->kind == SACK_ASK ? 0 : s->receives[k]);
	}
	if (s->kind == SACK_ASK)
		return at;
	for (size_t w = 0; w < words; w++, at += 8)
		put_be64(msg + at, m->in[w]);
	return at;
}

static int bad_field(const char *field, unsigned long long value, const char *why)
{
	report_error("the peer's control message has a bad %s (%llu): %s", field, value, why);
	return -1;
}

int sack_decode(const uint8_t *msg, size_t len, const char *want, int paths, uint32_t chunks,
		struct sack *s, uint64_t *bits)
{
	size_t need = sack_header_len(paths), words = chunk_map_bytes(chunks) / 8;

	if (len < sack_header_len(1) || memcmp(msg, SACK_MAGIC, 4))
		return bad_field("start", len, "a control message is at least 40 bytes, from \"SACK\"");
	*s = (struct sack){ .kind = (char)msg[4], .round = get_be32(msg + 8),
			    .n_in = get_be32(msg + 16) };
	if (!msg[4] || !strchr(want, msg[4]))
		return bad_field("kind", msg[4], want[0] == SACK_ASK ? "the sender sends asks ('A') "
				 "alone" : "the receiver sends 'S', 'C' or 'F'");
	if (msg[5] != paths)
		return bad_field("path count", msg[5], "it must be the --paths both sides were given");
	if (get_be16(msg + 6) || get_be32(msg + 20))
		return bad_field("reserved field", get_be16(msg + 6) | get_be32(msg + 20), "must be 0");
	if (get_be32(msg + 12) != chunks)
		return bad_field("chunk count", get_be32(msg + 12), "it must be the transfer's");
	if (s->round == 0)
		return bad_field("round", 0, "rounds count from 1");
	if (s->n_in > chunks)
		return bad_field("count of chunks in", s->n_in, "more than the transfer has");
	if (s->kind != SACK_ASK)
		need += words * 8;
	if (len != need)
		return bad_field("length", len, s->kind == SACK_ASK ? "an ask is 24 bytes and 16 a path" :
				 "a SACK is 24 bytes, 16 a path, and its bitmap");
	if (s->kind == SACK_ASK && s->n_in)
		return bad_field("count of chunks in", s->n_in, "an ask carries 0 there");
	for (int k = 0; k < paths; k++) {
		s->count[k] = get_be64(msg + 24 + 16 * k);
		s->receives[k] = get_be64(msg + 32 + 16 * k);
		if (s->kind == SACK_ASK && s->receives[k])
			return bad_field("reserved count", s->receives[k], "an ask carries 0 there");
		if (s->kind != SACK_ASK && s->receives[k] < s->count[k])
			return bad_field("count of receives posted", s->receives[k], "a path cannot "
					 "have consumed more receives than were posted on it");
	}
	if (s->kind == SACK_ASK)
		return 0;
	if (s->kind == SACK_FINAL && s->n_in != chunks)
		return bad_field("count of chunks in", s->n_in, "a final SACK ('F') has every chunk");
	for (size_t w = 0; w < words; w++)
		bits[w] = get_be64(msg + sack_header_len(paths) + 8 * w);
	return 0;
}

static int bad_plan(const char *field, unsigned long long theirs, unsigned long long ours,
		    const char *why)
{
	report_error("the receiver's plan has a bad %s (%llu; here %llu): %s", field, theirs, ours,
		     why);
	return -1;
}

int lossy_plan_send(int fd, const struct lossy_plan *p, int timeout_s)
{
	uint8_t msg[PLAN_LEN];

	memcpy(msg, PLAN_MAGIC, 4);
	put_be32(msg + 4, p->chunks);
	put_be32(msg + 8, p->chunk_bytes);
	put_be32(msg + 12, p->window);
	put_be32(msg + 16, p->paths);
	return sock_send_all(fd, msg, sizeof(msg), timeout_s);
}

int lossy_plan_recv(int fd, const struct lossy_plan *ours, struct lossy_plan *theirs, int timeout_s)
{
	uint8_t msg[PLAN_LEN];

	if (sock_recv_all(fd, msg, sizeof(msg), timeout_s))
		return -1;
	if (memcmp(msg, PLAN_MAGIC, 4)) {
		report_error("the receiver's plan does not start with \"%s\": is the peer this step's "
			     "program, with the same options?", PLAN_MAGIC);
		return -1;
	}
	*theirs = (struct lossy_plan){ .chunks = get_be32(msg + 4), .chunk_bytes = get_be32(msg + 8),
				       .window = get_be32(msg + 12), .paths = get_be32(msg + 16) };
	if (theirs->chunk_bytes != ours->chunk_bytes)
		return bad_plan("chunk size", theirs->chunk_bytes, ours->chunk_bytes,
				"a chunk is the path MTU, which both sides agreed in the exchange");
	if (theirs->chunks != ours->chunks)
		return bad_plan("chunk count", theirs->chunks, ours->chunks,
				"the buffer's size over the chunk size must be the same on both sides");
	if (theirs->paths != ours->paths)
		return bad_plan("path count", theirs->paths, ours->paths, "give both sides the same --paths");
	if (theirs->window == 0 || theirs->window > ours->window)
		return bad_plan("window", theirs->window, ours->window, "the receives posted ahead on a "
				"path must be 1 to the most this side can take (here)");
	return 0;
}

int lossy_end_send(int fd, const struct lossy_end *e, bool *right, int timeout_s)
{
	uint8_t msg[END_LEN], verdict[VERDICT_LEN];
	uint32_t v;

	memcpy(msg, END_MAGIC, 4);
	put_be32(msg + 4, e->rounds);
	put_be64(msg + 8, e->posts);
	put_be64(msg + 16, e->again);
	put_be64(msg + 24, e->again_bytes);
	if (sock_send_all(fd, msg, sizeof(msg), timeout_s) ||
	    sock_recv_all(fd, verdict, sizeof(verdict), timeout_s))
		return -1;
	v = get_be32(verdict + 4);
	if (memcmp(verdict, VERDICT_MAGIC, 4) || v > 1) {
		report_error("the receiver's verdict is not \"%s\" and 0 or 1 (got %u): is the peer "
			     "this step's program?", VERDICT_MAGIC, v);
		return -1;
	}
	*right = v == 1;
	return 0;
}

static int bad_end(const char *field, unsigned long long value, const char *why)
{
	report_error("the sender's account has a bad %s (%llu): %s", field, value, why);
	return -1;
}

int lossy_end_recv(int fd, const struct chunk_map *m, uint32_t answered, struct lossy_end *e,
		   int timeout_s)
{
	uint8_t msg[END_LEN];

	if (sock_recv_all(fd, msg, sizeof(msg), timeout_s))
		return -1;
	if (memcmp(msg, END_MAGIC, 4)) {
		report_error("the sender's account does not start with \"%s\"", END_MAGIC);
		return -1;
	}
	*e = (struct lossy_end){ .rounds = get_be32(msg + 4), .posts = get_be64(msg + 8),
				 .again = get_be64(msg + 16), .again_bytes = get_be64(msg + 24) };
	/* Each answer that left a chunk missing began a round; the last round may have had none. */
	if (e->rounds < answered || e->rounds > answered + 1)
		return bad_end("round count", e->rounds, "this side answered one ask a round but the last");
	if (e->posts < m->n || e->posts - m->n != e->again)
		return bad_end("count of WRITEs", e->posts, "every chunk once, and once more for each "
			       "sent again");
	if (e->again > (uint64_t)m->n * (e->rounds - 1))
		return bad_end("count of chunks sent again", e->again, "at most every chunk in each "
			       "round after the first");
	if (e->again_bytes > e->again * m->bytes || e->again_bytes < e->again)
		return bad_end("bytes sent again", e->again_bytes, "1 to a chunk's bytes for each chunk "
			       "sent again");
	return 0;
}

int lossy_verdict_send(int fd, bool right, int timeout_s)
{
	uint8_t msg[VERDICT_LEN];

	memcpy(msg, VERDICT_MAGIC, 4);
	put_be32(msg + 4, right ? 1 : 0);
	return sock_send_all(fd, msg, sizeof(msg), timeout_s);
}
