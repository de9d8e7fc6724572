/* Which root a target's file names are in, and how to reach it. */
#include "proc_root.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void proc_root_prefix(pid_t pid, char *buf, size_t len)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/root", (int)pid);
	n = len ? readlink(link, buf, len - 1) : -1;
	if (n <= 0 || (size_t)n >= len - 1 || (n == 1 && buf[0] == '/'))
		n = 0;		/* unknown, too long, or ours */
	if (len)
		buf[n] = '\0';
}

/* Our root, looked at once: we never chroot. */
static const struct stat *our_root(void)
{
	static struct stat ours;
	static int known;

	if (!known && stat("/", &ours) == 0)
		known = 1;
	return known ? &ours : NULL;
}

void proc_root_read(pid_t pid, struct proc_root *r)
{
	const struct stat *ours;
	char link[64];
	struct stat theirs, dir;

	memset(r, 0, sizeof(*r));
	r->pid = (int)pid;
	snprintf(link, sizeof(link), "/proc/%d/root", (int)pid);
	if (stat(link, &theirs) || !(ours = our_root()) ||
	    (theirs.st_dev == ours->st_dev && theirs.st_ino == ours->st_ino))
		return;
	r->kind = PROC_ROOT_NS;
	r->dev = (uint64_t)theirs.st_dev;
	r->ino = (uint64_t)theirs.st_ino;
	proc_root_prefix(pid, r->dir, sizeof(r->dir));
	/* The link is relative to the target's mount namespace: it names a
	 * directory of ours only if that directory is the very root. */
	if (r->dir[0] && stat(r->dir, &dir) == 0 &&
	    dir.st_dev == theirs.st_dev && dir.st_ino == theirs.st_ino)
		r->kind = PROC_ROOT_DIR;
	else
		r->dir[0] = '\0';
}

/* Where the file name of a maps line (ll bytes) starts: after address,
 * perms, offset, device and inode; ll if the line has none. */
static size_t name_start(const char *line, size_t ll)
{
	size_t i = 0;

	for (int field = 0; field < 5; field++) {
		while (i < ll && line[i] != ' ' && line[i] != '\n')
			i++;
		while (i < ll && line[i] == ' ')
			i++;
	}
	return i;
}

size_t proc_root_strip(char *text, size_t len, const char *prefix)
{
	size_t plen = strlen(prefix), in = 0, out = 0;

	if (!plen)
		return len;
	while (in < len) {
		const char *nl = memchr(text + in, '\n', len - in);
		size_t ll = nl ? (size_t)(nl - (text + in)) + 1 : len - in;
		size_t p = name_start(text + in, ll), skip = 0;

		if (ll - p > plen && memcmp(text + in + p, prefix, plen) == 0 &&
		    text[in + p + plen] == '/')
			skip = plen;
		memmove(text + out, text + in, p);
		memmove(text + out + p, text + in + p + skip, ll - p - skip);
		out += ll - skip;
		in += ll;
	}
	return out;
}

/* s, quoted for a POSIX shell when it holds anything but plain path
 * characters. */
static void shell_word(const char *s, char *buf, size_t len)
{
	size_t n = 0;

	if (strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._+-,:=@%")
	    == strlen(s)) {
		snprintf(buf, len, "%s", s);
		return;
	}
	if (len < 3) {
		if (len)
			buf[0] = '\0';
		return;
	}
	buf[n++] = '\'';
	for (; *s && n + 5 < len; s++) {
		if (*s == '\'') {
			memcpy(buf + n, "'\\''", 4);
			n += 4;
		} else {
			buf[n++] = *s;
		}
	}
	buf[n++] = '\'';
	buf[n] = '\0';
}

void proc_root_note(const struct proc_root *r, char *buf, size_t len)
{
	if (r && r->kind == PROC_ROOT_DIR)
		snprintf(buf, len, " (root %s)", r->dir);
	else if (r && r->kind == PROC_ROOT_NS)
		snprintf(buf, len, " (root of pid %d, another mount namespace)", r->pid);
	else if (len)
		buf[0] = '\0';
}

void proc_root_run(const struct proc_root *r, char *buf, size_t len)
{
	char dir[2 * sizeof(r->dir) + 8];

	if (r && r->kind == PROC_ROOT_DIR) {
		shell_word(r->dir, dir, sizeof(dir));
		snprintf(buf, len, "chroot %s ", dir);
	} else if (r && r->kind == PROC_ROOT_NS) {
		snprintf(buf, len, "nsenter -t %d -m -r -w ", r->pid);
	} else if (len) {
		buf[0] = '\0';
	}
}

int proc_root_same(const struct proc_root *a, const struct proc_root *b)
{
	int ka = a ? a->kind : PROC_ROOT_OURS, kb = b ? b->kind : PROC_ROOT_OURS;

	/* One directory reached two ways (a chroot into a bind mount of it)
	 * holds the same files. */
	if ((ka == PROC_ROOT_OURS) != (kb == PROC_ROOT_OURS))
		return 0;
	return ka == PROC_ROOT_OURS || (a->dev == b->dev && a->ino == b->ino);
}
