/*
 * dn_file.c - a whole file read into memory (see dn_file.h). The size
 * comes from fstat and the read stops there: a file that grows meanwhile
 * is read as it was, one that shrinks ends early (len says how much).
 */
#include "dn_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *
dn_file_read(const char *path, size_t max, const char *what, size_t *len, struct dn_error *err)
{
	struct stat st;
	size_t n, got = 0;
	char *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return dn_error_set(err, errno == ENOENT ? DN_ENOENT : DN_EINVAL, what, "cannot open %s: %s", path,
		    strerror(errno)), NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return dn_error_set(err, DN_ENOENT, what, "cannot read %s: not a regular file", path), NULL;
	}
	n = (size_t)st.st_size;
	if (max > 0 && n > max) {
		close(fd);
		return dn_error_set(err, DN_ETOOBIG, what, "%s is %zu bytes, more than %zu", path, n, max), NULL;
	}
	buf = malloc(n + 1);
	if (buf == NULL) {
		close(fd);
		return dn_error_set(err, DN_ENOMEM, what, "out of memory reading %s", path), NULL;
	}
	while (got < n) {
		ssize_t k = read(fd, buf + got, n - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			int e = errno;
			free(buf);
			close(fd);
			return dn_error_set(err, DN_EINVAL, what, "cannot read %s: %s", path, strerror(e)), NULL;
		}
		if (k == 0)
			break;
		got += (size_t)k;
	}
	close(fd);
	buf[got] = '\0';
	if (len != NULL)
		*len = got;
	return buf;
}
