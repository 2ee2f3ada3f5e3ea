/*
 * dn_file.h - a whole file read into memory (dn_file.c): for the few files
 * the programs need as bytes, not only as parsed JSON (the device catalog,
 * whose bytes the service hashes into query ids and then parses; the
 * dashboard's and schemas' files it sends as they are).
 */
#ifndef DN_FILE_H
#define DN_FILE_H

#include "dn_error.h"

#include <stddef.h>

/*
 * The contents of the regular file `path` with a NUL after them (*len:
 * the bytes before it; len may be NULL), read whole (short reads and
 * EINTR retried). `max` bounds the size (0: no bound). NULL with err when
 * the file does not exist or is not a regular file (a directory, a
 * device: DN_ENOENT), cannot be opened or read (DN_EINVAL; the message
 * names the path and the system's reason), is larger than max
 * (DN_ETOOBIG), or memory runs out (DN_ENOMEM); err's path is `what`. The
 * caller frees the result.
 */
char *dn_file_read(const char *path, size_t max, const char *what, size_t *len, struct dn_error *err);

#endif
