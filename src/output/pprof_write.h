/*
 * Encoding of a struct profile as a pprof file: the protobuf message
 * perftools.profiles.Profile, gzip-compressed as one member, the form
 * `go tool pprof` and speedscope read.
 */
#ifndef PPROF_WRITE_H
#define PPROF_WRITE_H

#include <stddef.h>
#include <stdint.h>

struct profile;

/*
 * Writes the gzip-compressed profile to path atomically: a temporary file
 * in the same directory is written, fsync'ed and renamed over path, so
 * path holds either its old content or the whole new profile.  The file
 * is created with mode 0644.  On failure the temporary file is removed,
 * err gets one line naming what failed (e.g. "cannot write
 * /x/profile.pb.gz: No space left on device") and -1 is returned.
 */
int pprof_write_file(const struct profile *p, const char *path, char *err,
		     size_t errlen);

/*
 * Encodes into a malloc'd buffer, gzip-compressed or raw protobuf.
 * Returns 0, or -1 with errno set (ENOMEM).
 */
int pprof_encode(const struct profile *p, int gzip, uint8_t **out,
		 size_t *outlen);

/*
 * Checks before a long capture that pprof_write_file(path) can succeed:
 * creates and removes a temporary file in path's directory and checks that
 * path is not a directory.  Returns 0, or -1 with a message in err.
 */
int pprof_check_writable(const char *path, char *err, size_t errlen);

/*
 * The same atomic temp-file-and-rename write of buf (an encoded profile,
 * any format). With excl, path is never replaced: -1 with errno EEXIST
 * (and err set) when a file of that name exists.
 */
int pprof_install_buffer(const char *path, const uint8_t *buf, size_t len, int excl,
			 char *err, size_t errlen);

#endif /* PPROF_WRITE_H */
