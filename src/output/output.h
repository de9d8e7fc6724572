/*
 * Where profiles go: one file, or a series of files in continuous mode
 * (--interval), named from a pattern with %t (UTC time) or inside a
 * directory, keeping the newest --keep of them.
 */
#ifndef OUTPUT_H
#define OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "profile.h"

struct output {
	const struct config *cfg;
	char pattern[4096];	/* the --out path; may contain %t */
	int series;		/* several files: pattern has %t */
	unsigned seq;		/* disambiguates writes within one second */
};

/* Resolves --out (a directory gets "profile-%t.pb.gz" inside it) and
 * checks it can be written. -1 with one line in err. */
int output_init(struct output *o, const struct config *cfg, char *err, size_t errlen);

/* Writes the profile atomically in the configured format; wall_ns
 * (CLOCK_REALTIME) is the time a %t name carries; path gets the file's name. In a series, older files beyond --keep are deleted: only
 * names of the exact form this program writes (prefix, UTC stamp and
 * sequence number, suffix), never the file just written. */
int output_write(struct output *o, const struct profile *p, int64_t wall_ns, char *path,
		 size_t pathlen, char *err, size_t errlen);

/* Writes a page to a probe file in the output's directory and removes it:
 * 0 if that worked, else -1 with one line in err. Cheap, to ask before
 * encoding a profile while writes fail. */
int output_probe(const struct output *o, char *err, size_t errlen);

#endif
