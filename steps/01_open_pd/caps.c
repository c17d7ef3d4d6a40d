/* caps.c: stage 1's test aid: RDMA_STEPS_CAPS makes a run see a device with smaller limits than the one at hand. */
#include "caps.h"
#include "cli.h"
#include "report.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How a limit is stored and written. */
enum cap_kind {
	CAP_INT,	/* an int field of ibv_device_attr: NAME=N */
	CAP_SIZE,	/* a uint64_t field of ibv_device_attr: NAME=N, or 64K, 1M, 1G */
	CAP_ATOMIC,	/* atomic_cap: none, hca or glob, in that order */
	CAP_FLAGS,	/* bits of device_cap_flags: NAME=0 clears them, NAME=1 keeps them */
	CAP_PORT,	/* a uint32_t field of ibv_port_attr */
};

/* The limits the aid may lower, by their verbs names. */
static const struct cap {
	const char *name;
	enum cap_kind kind;
	size_t offset;		/* in ibv_device_attr, or ibv_port_attr for CAP_PORT */
	unsigned int bits;	/* CAP_FLAGS: the bits of device_cap_flags */
} caps[] = {
	{ "max_qp_wr", CAP_INT, offsetof(struct ibv_device_attr, max_qp_wr), 0 },
	{ "max_sge", CAP_INT, offsetof(struct ibv_device_attr, max_sge), 0 },
	{ "max_cqe", CAP_INT, offsetof(struct ibv_device_attr, max_cqe), 0 },
	{ "max_mw", CAP_INT, offsetof(struct ibv_device_attr, max_mw), 0 },
	{ "max_qp_rd_atom", CAP_INT, offsetof(struct ibv_device_attr, max_qp_rd_atom), 0 },
	{ "max_qp_init_rd_atom", CAP_INT, offsetof(struct ibv_device_attr, max_qp_init_rd_atom), 0 },
	{ "max_mr_size", CAP_SIZE, offsetof(struct ibv_device_attr, max_mr_size), 0 },
	{ "atomic_cap", CAP_ATOMIC, offsetof(struct ibv_device_attr, atomic_cap), 0 },
	{ "mem_window_type_2", CAP_FLAGS, offsetof(struct ibv_device_attr, device_cap_flags),
	  IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B },
	{ "max_msg_sz", CAP_PORT, offsetof(struct ibv_port_attr, max_msg_sz), 0 },
};

#define N_CAPS (sizeof(caps) / sizeof(caps[0]))

/* atomic_cap's values, IBV_ATOMIC_NONE to IBV_ATOMIC_GLOB, each allowing more than the last. */
static const char *const atomic_names[] = { "none", "hca", "glob" };

static const struct cap *find_cap(const char *name, size_t len)
{
	for (size_t i = 0; i < N_CAPS; i++)
		if (strlen(caps[i].name) == len && !strncmp(caps[i].name, name, len))
			return &caps[i];
	return NULL;
}

static int unknown_cap(const char *item)
{
	char list[320] = "";

	for (size_t i = 0; i < N_CAPS; i++) {
		strncat(list, caps[i].name, sizeof(list) - strlen(list) - 1);
		strncat(list, i + 1 < N_CAPS ? ", " : "", sizeof(list) - strlen(list) - 1);
	}
	report_error("%s: '%s' is not NAME=N with a limit it knows; write it as "
		     "max_qp_wr=64,max_qp_rd_atom=4, with NAME one of %s (or unset it)", CAPS_ENV,
		     item, list);
	return -1;
}

/* A limit's value as a number, whichever way it is stored; the order the aid lowers in. */
static unsigned long long read_cap(const struct cap *c, void *base)
{
	void *field = (char *)base + c->offset;

	switch (c->kind) {
	case CAP_INT:
		return *(int *)field < 0 ? 0 : (unsigned long long)*(int *)field;
	case CAP_SIZE:
		return *(uint64_t *)field;
	case CAP_ATOMIC:
		return *(enum ibv_atomic_cap *)field;
	case CAP_FLAGS:
		return (*(unsigned int *)field & c->bits) != 0;
	case CAP_PORT:
		return *(uint32_t *)field;
	}
	return 0;
}

/* Sets the limit to VALUE, at most what read_cap read. */
static void write_cap(const struct cap *c, void *base, unsigned long long value)
{
	void *field = (char *)base + c->offset;

	switch (c->kind) {
	case CAP_INT:
		*(int *)field = (int)value;
		break;
	case CAP_SIZE:
		*(uint64_t *)field = value;
		break;
	case CAP_ATOMIC:
		*(enum ibv_atomic_cap *)field = (enum ibv_atomic_cap)value;
		break;
	case CAP_FLAGS:
		if (!value)
			*(unsigned int *)field &= ~c->bits;
		break;
	case CAP_PORT:
		*(uint32_t *)field = (uint32_t)value;
		break;
	}
}

/* TEXT (after "NAME=") as C's value; 0 or -1 after saying what is wrong. */
static int parse_cap(const struct cap *c, const char *text, unsigned long long *value)
{
	char what[96];
	size_t size;
	int pick, n;

	snprintf(what, sizeof(what), "%s (%s)", CAPS_ENV, c->name);
	switch (c->kind) {
	case CAP_SIZE:
		if (cli_parse_size(what, text, 0, SIZE_MAX, &size))
			return -1;
		*value = size;
		return 0;
	case CAP_ATOMIC:
		pick = cli_pick_named(what, "atomic_cap", text, atomic_names, 0, 3);
		if (pick < 0)
			return -1;
		*value = (unsigned long long)pick;
		return 0;
	case CAP_FLAGS:
		if (cli_parse_int(what, text, 0, 1, &n))
			return -1;
		*value = (unsigned long long)n;
		return 0;
	default:
		if (cli_parse_int(what, text, 0, c->kind == CAP_PORT ? INT32_MAX : 1 << 30, &n))
			return -1;
		*value = (unsigned long long)n;
		return 0;
	}
}

/* VALUE as RDMA_STEPS_CAPS writes it: atomic_cap by name, the rest as numbers. */
static void format_cap(const struct cap *c, unsigned long long value, char *buf, size_t len)
{
	if (c->kind == CAP_ATOMIC && value < 3)
		snprintf(buf, len, "%s", atomic_names[value]);
	else
		snprintf(buf, len, "%llu", value);
}

/* One NAME=N item of the list, applied to ATTR or PORT_ATTR. */
static int apply_one(struct ibv_device_attr *attr, struct ibv_port_attr *port_attr,
		     const char *dev_name, const char *item, size_t len)
{
	const char *eq = memchr(item, '=', len);
	char text[64], was[32], now[32];
	unsigned long long value, current;
	const struct cap *c;
	void *base;

	snprintf(text, sizeof(text), "%.*s", (int)len, item);
	c = eq ? find_cap(item, (size_t)(eq - item)) : NULL;
	if (!c)
		return unknown_cap(text);
	base = c->kind == CAP_PORT ? (void *)port_attr : (void *)attr;
	if (parse_cap(c, text + (eq - item) + 1, &value))
		return -1;
	current = read_cap(c, base);
	format_cap(c, value, now, sizeof(now));
	format_cap(c, current, was, sizeof(was));
	if (value > current) {
		report_error("%s: %s=%s is above %s's %s: the aid only lowers a limit", CAPS_ENV,
			     c->name, now, dev_name, was);
		return -1;
	}
	show(CAPS_ENV, "a test aid: this run sees %s %s where %s has %s, as a smaller NIC would",
	     c->name, now, dev_name, was);
	write_cap(c, base, value);
	return 0;
}

int caps_apply(struct ibv_device_attr *attr, struct ibv_port_attr *port_attr,
	       const char *dev_name)
{
	const char *list = getenv(CAPS_ENV);

	while (list && *list) {
		size_t len = strcspn(list, ",");

		if (apply_one(attr, port_attr, dev_name, list, len))
			return -1;
		list += len + (list[len] == ',');
	}
	return 0;
}
