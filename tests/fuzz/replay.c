/* replay.c: runs a libFuzzer harness over corpus files without libFuzzer, so that gcc's sanitizers can replay a corpus. */
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *target;
static unsigned long replayed;
static bool selftest;

/*
 * Reads PATH whole into a buffer of its size plus one, so that an empty file
 * is still a valid pointer, as libFuzzer passes it.
 */
static uint8_t *read_input(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data = NULL;
	struct stat st;

	errno = 0;
	if (!f || fstat(fileno(f), &st) || !(data = malloc((size_t)st.st_size + 1)) ||
	    fread(data, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		fprintf(stderr, "%s: cannot read %s: %s\n", target, path,
			errno ? strerror(errno) : "short read");
		free(data);
		data = NULL;
	}
	*size = data ? (size_t)st.st_size : 0;
	if (f)
		fclose(f);
	return data;
}

/*
 * Runs the harness on one file.  The file is named on stderr first: a crash
 * ends the process in the sanitizer or in abort(), and this line says which
 * input did it.  FUZZ_REPLAY_SELFTEST=1 aborts on the first input, which
 * shows that a crash fails the replay and names its file.
 */
static int replay_file(const char *path)
{
	size_t size;
	uint8_t *data = read_input(path, &size);

	if (!data)
		return -1;
	fprintf(stderr, "%s: running %s (%zu bytes)\n", target, path, size);
	if (selftest)
		abort();
	LLVMFuzzerTestOneInput(data, size);
	free(data);
	replayed++;
	return 0;
}

/* Every file of DIR but hidden ones, in name order, so that runs repeat exactly. */
static int replay_dir(const char *dir)
{
	struct dirent **names;
	char path[4096];
	int n = scandir(dir, &names, NULL, alphasort), rc = 0;

	if (n < 0) {
		fprintf(stderr, "%s: cannot list %s: %s\n", target, dir, strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (names[i]->d_name[0] != '.' && !stat(path, &st) && S_ISREG(st.st_mode) &&
		    replay_file(path))
			rc = -1;
		free(names[i]);
	}
	free(names);
	return rc;
}

static int replay_path(const char *path)
{
	struct stat st;

	if (stat(path, &st)) {
		fprintf(stderr, "%s: cannot open %s: %s\n", target, path, strerror(errno));
		return -1;
	}
	return S_ISDIR(st.st_mode) ? replay_dir(path) : replay_file(path);
}

int main(int argc, char **argv)
{
	const char *selftest_env = getenv("FUZZ_REPLAY_SELFTEST");
	int rc = 0;

	target = basename(argv[0]);
	selftest = selftest_env && !strcmp(selftest_env, "1");
	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE_OR_DIR...\n", target);
		return 2;
	}
	for (int i = 1; i < argc; i++)
		if (replay_path(argv[i]))
			rc = 1;
	printf("%s: replayed %lu inputs, %s\n", target, replayed,
	       rc ? "some could not be read" : "no crash");
	return rc;
}
