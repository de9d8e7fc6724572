/* Unnamed native frames per object, and what to install about it. */
#include "symgap.h"

#include <stdio.h>
#include <string.h>

long symgap_count(struct symgap *g, const char *path, const char *build_id, int named)
{
	struct symgap_obj *o = NULL;

	if (!path || !path[0])
		return -1;
	for (size_t i = 0; i < g->n; i++)
		if (strcmp(g->o[i].path, path) == 0) {
			o = &g->o[i];
			break;
		}
	if (!o) {
		if (g->n == SYMGAP_OBJECTS)
			return -1;
		o = &g->o[g->n++];
		snprintf(o->path, sizeof(o->path), "%s", path);
		if (build_id && strlen(build_id) < sizeof(o->build_id))
			snprintf(o->build_id, sizeof(o->build_id), "%s", build_id);
	}
	o->frames++;
	o->unnamed += !named;
	return o - g->o;
}

void symgap_count_slot(struct symgap *g, long i, int named)
{
	if (i < 0 || (size_t)i >= g->n)
		return;
	g->o[i].frames++;
	g->o[i].unnamed += !named;
}

/* "3.11" from ".../python3.11" or ".../libpython3.11.so.1.0"; 0 if neither. */
static int python_version(const char *path, char *ver, size_t len)
{
	const char *base = strrchr(path, '/');
	unsigned major, minor;

	base = base ? base + 1 : path;
	if (strncmp(base, "lib", 3) == 0)
		base += 3;
	if (sscanf(base, "python%u.%u", &major, &minor) != 2)
		return 0;
	snprintf(ver, len, "%u.%u", major, minor);
	return 1;
}

int symgap_hint(const struct symgap *g, size_t i, uint64_t min_frames,
		unsigned min_percent, char *buf, size_t len)
{
	const struct symgap_obj *o;
	unsigned pct;
	char ver[16], where[96] = "";

	if (i >= g->n)
		return 0;
	o = &g->o[i];
	if (o->frames < min_frames || !o->unnamed)
		return 0;
	pct = (unsigned)(o->unnamed * 100 / o->frames);
	if (pct < min_percent)
		return 0;
	if (strlen(o->build_id) > 2)
		snprintf(where, sizeof(where), " (/usr/lib/debug/.build-id/%.2s/%s.debug)",
			 o->build_id, o->build_id + 2);
	if (python_version(o->path, ver, sizeof(ver)))
		snprintf(buf, len, "%u%% of the native frames in %s have no name: install its debug file%s, on Debian: apt-get install python%s-dbg=\"$(dpkg-query -W -f '${Version}' python%s-minimal)\"",
			 pct, o->path, where, ver, ver);
	else
		snprintf(buf, len, "%u%% of the native frames in %s have no name: install its debug file%s, on Debian the -dbg or -dbgsym package of the package that holds it (dpkg -S %s)",
			 pct, o->path, where, o->path);
	return 1;
}
