/* caps.c: stage 1's test aid: RDMA_STEPS_CAPS makes a run see a device with smaller limits than the one at hand. */
#include "caps.h"
#include "cli.h"
#include "report.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The limits the aid may lower: ibv_device_attr's int fields, by their verbs names. */
static const struct cap {
	const char *name;
	size_t offset;
} caps[] = {
	{ "max_qp_wr", offsetof(struct ibv_device_attr, max_qp_wr) },
	{ "max_sge", offsetof(struct ibv_device_attr, max_sge) },
	{ "max_cqe", offsetof(struct ibv_device_attr, max_cqe) },
	{ "max_mw", offsetof(struct ibv_device_attr, max_mw) },
	{ "max_qp_rd_atom", offsetof(struct ibv_device_attr, max_qp_rd_atom) },
	{ "max_qp_init_rd_atom", offsetof(struct ibv_device_attr, max_qp_init_rd_atom) },
};

#define N_CAPS (sizeof(caps) / sizeof(caps[0]))

static const struct cap *find_cap(const char *name, size_t len)
{
	for (size_t i = 0; i < N_CAPS; i++)
		if (strlen(caps[i].name) == len && !strncmp(caps[i].name, name, len))
			return &caps[i];
	return NULL;
}

static int unknown_cap(const char *item)
{
	char list[256] = "";

	for (size_t i = 0; i < N_CAPS; i++) {
		strncat(list, caps[i].name, sizeof(list) - strlen(list) - 1);
		strncat(list, i + 1 < N_CAPS ? ", " : "", sizeof(list) - strlen(list) - 1);
	}
	report_error("%s: '%s' is not NAME=N with a limit it knows; write it as "
		     "max_qp_wr=64,max_qp_rd_atom=4, with NAME one of %s (or unset it)", CAPS_ENV,
		     item, list);
	return -1;
}

/* One NAME=N item of the list, applied. */
static int apply_one(struct ibv_device_attr *attr, const char *dev_name, const char *item,
		     size_t len)
{
	const char *eq = memchr(item, '=', len);
	char text[64], what[96];
	const struct cap *c;
	int *field, value;

	snprintf(text, sizeof(text), "%.*s", (int)len, item);
	c = eq ? find_cap(item, (size_t)(eq - item)) : NULL;
	if (!c)
		return unknown_cap(text);
	field = (int *)((char *)attr + c->offset);
	snprintf(what, sizeof(what), "%s (%s)", CAPS_ENV, c->name);
	if (cli_parse_int(what, text + (eq - item) + 1, 0, 1 << 30, &value))
		return -1;
	if (value > *field) {
		report_error("%s: %s=%d is above %s's %d: the aid only lowers a limit", CAPS_ENV,
			     c->name, value, dev_name, *field);
		return -1;
	}
	show(CAPS_ENV, "a test aid: this run sees %s %d where %s has %d, as a smaller NIC would",
	     c->name, value, dev_name, *field);
	*field = value;
	return 0;
}

int caps_apply(struct ibv_device_attr *attr, const char *dev_name)
{
	const char *list = getenv(CAPS_ENV);

	while (list && *list) {
		size_t len = strcspn(list, ",");

		if (apply_one(attr, dev_name, list, len))
			return -1;
		list += len + (list[len] == ',');
	}
	return 0;
}
