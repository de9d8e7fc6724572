/* Unnamed native frames per object, and what to install about it. */
#include "symgap.h"

#include <stdio.h>
#include <string.h>

long symgap_count(struct symgap *g, const struct proc_root *root, const char *path,
		  const char *build_id, int named)
{
	struct symgap_obj *o = NULL;

	if (!path || !path[0])
		return -1;
	if (path[0] != '/')	/* the vDSO: the kernel's, in no root */
		root = NULL;
	/* Two containers may hold different files at one path. */
	for (size_t i = 0; i < g->n; i++)
		if (strcmp(g->o[i].path, path) == 0 && proc_root_same(&g->o[i].root, root)) {
			o = &g->o[i];
			break;
		}
	if (!o) {
		if (g->n == SYMGAP_OBJECTS)
			return -1;
		o = &g->o[g->n++];
		snprintf(o->path, sizeof(o->path), "%s", path);
		if (root)
			o->root = *root;
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
	char ver[16], where[128] = "", note[320], run[600];

	if (i >= g->n)
		return 0;
	o = &g->o[i];
	if (o->frames < min_frames || !o->unnamed)
		return 0;
	pct = (unsigned)(o->unnamed * 100 / o->frames);
	if (pct < min_percent)
		return 0;
	proc_root_note(&o->root, note, sizeof(note));
	proc_root_run(&o->root, run, sizeof(run));
	if (strlen(o->build_id) > 2)
		snprintf(where, sizeof(where), " (/usr/lib/debug/.build-id/%.2s/%s.debug%s)",
			 o->build_id, o->build_id + 2, run[0] ? " in that root" : "");
	if (strcmp(o->path, "[vdso]") == 0)
		snprintf(buf, len, "%u%% of the native frames in [vdso] have no name: it is the running kernel's; install its debug file%s, on Debian: apt-get install linux-image-\"$(uname -r)\"-dbg",
			 pct, where);
	else if (!python_version(o->path, ver, sizeof(ver)))
		snprintf(buf, len, "%u%% of the native frames in %s%s have no name: install its debug file%s, on Debian the -dbg or -dbgsym package of the package that holds it (%sdpkg -S %s)",
			 pct, o->path, note, where, run, o->path);
	else if (!run[0])
		snprintf(buf, len, "%u%% of the native frames in %s have no name: install its debug file%s, on Debian: apt-get install python%s-dbg=\"$(dpkg-query -W -f '${Version}' python%s-minimal)\"",
			 pct, o->path, where, ver, ver);
	else	/* one command, its $(...) expanded in the target's root */
		snprintf(buf, len, "%u%% of the native frames in %s%s have no name: install its debug file%s, on Debian: %ssh -c 'apt-get install python%s-dbg=\"$(dpkg-query -W -f \"\\${Version}\" python%s-minimal)\"'",
			 pct, o->path, note, where, run, ver, ver);
	return 1;
}
