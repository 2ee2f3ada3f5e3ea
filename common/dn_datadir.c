/*
 * dn_datadir.c - the run-time lookup of the data and web directories
 * (contract in dn_datadir.h).
 *
 * Invariants: the fallback root (the build tree the program sits in, else
 * the staged install it sits in, else DNNSAT_PKGDATADIR) is computed exactly once, under pthread_once, into
 * static buffers that are read-only afterwards; the environment variables
 * are read at each call and win over it. A root path too long for the
 * buffers is not used (the next candidate is), never truncated.
 */
#include "dn_datadir.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef DNNSAT_PKGDATADIR
#error "DNNSAT_PKGDATADIR (the installed data root, $(pkgdatadir)) must be defined by the build"
#endif
#ifndef DNNSAT_BINDIR
#define DNNSAT_BINDIR ""	/* unknown: no staged-install lookup (find_root) */
#endif

static pthread_once_t data_once = PTHREAD_ONCE_INIT;
static char schemas_dir[PATH_MAX], web_dir[PATH_MAX];

/* 1 when `root` holds schemas/devices.json: a tree (build or install) with
 * this program's data. */
static int
root_has_data(const char *root)
{
	char probe[PATH_MAX];
	int n = snprintf(probe, sizeof probe, "%s/schemas/devices.json", root);

	return n > 0 && (size_t)n < sizeof probe && access(probe, R_OK) == 0;
}

/* Fills schemas_dir and web_dir from `root`; -1 (buffers untouched) when a
 * path would not fit. */
static int
set_root(const char *root)
{
	char s[PATH_MAX], w[PATH_MAX];
	int ns = snprintf(s, sizeof s, "%s/schemas", root), nw = snprintf(w, sizeof w, "%s/web", root);

	if (ns < 0 || (size_t)ns >= sizeof s || nw < 0 || (size_t)nw >= sizeof w)
		return -1;
	memcpy(schemas_dir, s, (size_t)ns + 1);
	memcpy(web_dir, w, (size_t)nw + 1);
	return 0;
}

/* The directory of the running program (from /proc/self/exe) into buf;
 * -1 when unknown. */
static int
program_dir(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	char *slash;

	if (n <= 0 || (size_t)n >= size - 1)
		return -1;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (slash == NULL)
		return -1;
	*slash = '\0';
	return 0;
}

/* The data root of an install tree that was copied whole under another
 * directory (`make install DESTDIR=X`, a package's staging root): when the
 * program's directory is X followed by DNNSAT_BINDIR, X followed by
 * DNNSAT_PKGDATADIR into buf; -1 otherwise. */
static int
staged_root(const char *dir, char *buf, size_t size)
{
	size_t nd = strlen(dir), nb = strlen(DNNSAT_BINDIR);
	int n;

	if (nb == 0 || nd <= nb || strcmp(dir + nd - nb, DNNSAT_BINDIR) != 0)
		return -1;
	n = snprintf(buf, size, "%.*s%s", (int)(nd - nb), dir, DNNSAT_PKGDATADIR);
	return n > 0 && (size_t)n < size ? 0 : -1;
}

static void
find_root(void)
{
	char dir[PATH_MAX], staged[PATH_MAX];

	if (program_dir(dir, sizeof dir) == 0) {
		if (root_has_data(dir) && set_root(dir) == 0)
			return;
		if (staged_root(dir, staged, sizeof staged) == 0 && root_has_data(staged) && set_root(staged) == 0)
			return;
	}
	if (set_root(DNNSAT_PKGDATADIR) != 0) {
		/* configure's prefix is longer than PATH_MAX: nothing can be found
		 * there; the environment variables still work */
		strcpy(schemas_dir, "schemas");
		strcpy(web_dir, "web");
	}
}

const char *
dn_data_dir(enum dn_data_kind kind)
{
	const char *env = getenv(kind == DN_DATA_WEB ? "DNNSAT_WEB_DIR" : "DNNSAT_DATA_DIR");

	if (env != NULL && env[0] != '\0')
		return env;
	pthread_once(&data_once, find_root);
	return kind == DN_DATA_WEB ? web_dir : schemas_dir;
}
