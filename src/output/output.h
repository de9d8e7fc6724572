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
	uint32_t run_id;	/* in every name of the series; 0: none */
	unsigned seq;		/* the run's writes, in order; never reused */
};

/*
 * Resolves --out (a directory gets "profile-%t.pb.gz", or ".folded" for
 * --format collapsed, inside it) and checks it can be written. -1 with one
 * line in err. run_id makes the series' names this run's own: %t becomes
 * "YYYYmmddTHHMMSSZ-RUNID-NNN" (the live profiler's pid; a replay uses the
 * recorded one; 0, from older recordings, leaves "-RUNID" out).
 */
int output_init(struct output *o, const struct config *cfg, uint32_t run_id, char *err,
		size_t errlen);

/* Writes the profile atomically in the configured format; wall_ns
 * (CLOCK_REALTIME) is the time a %t name carries; path gets the file's
 * name. A series' file never replaces an existing one: a taken name is
 * skipped (the sequence number moves on); a single --out FILE is replaced,
 * as its name was given. In a series, older files beyond --keep are
 * deleted: only names of the exact form this run writes (prefix, UTC
 * stamp, this run's id, sequence number, suffix), never the file just
 * written. */
int output_write(struct output *o, const struct profile *p, int64_t wall_ns, char *path,
		 size_t pathlen, char *err, size_t errlen);

/* Writes a page to a probe file in the output's directory and removes it:
 * 0 if that worked, else -1 with one line in err. Cheap, to ask before
 * encoding a profile while writes fail. */
int output_probe(const struct output *o, char *err, size_t errlen);

#endif
