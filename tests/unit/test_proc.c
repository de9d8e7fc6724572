/* Unit tests of the /proc parsers: maps lines, stat, container ids; the
 * command line read two ways from our own process. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "proc.h"
#include "proc_root.h"
#include "target_src.h"

static void test_maps(void)
{
	static const char text[] =
		"00400000-00452000 r-xp 00000000 fd:01 1234 /usr/bin/python3.11\n"
		"7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n"
		"garbage line\n"
		"7f0000002000-7f0000003000 r--p 00001000 08:02 99 /lib/x (deleted)\n"
		"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]";
	struct proc_maps m;

	check(proc_maps_parse(text, strlen(text), &m) == 0 && m.n == 4, "maps: 4 of 5 lines parse");
	check(m.n == 4 && m.v[0].start == 0x400000 && m.v[0].inode == 1234 &&
	      strcmp(m.v[0].path, "/usr/bin/python3.11") == 0, "maps: fields of line 1");
	check(m.n == 4 && strcmp(m.v[2].path, "/lib/x (deleted)") == 0 && m.v[2].offset == 0x1000,
	      "maps: deleted file keeps its path");
	check(proc_maps_find(&m, 0x400100) == &m.v[0] && !proc_maps_find(&m, 0x500000),
	      "maps: address lookup");
	check(m.n == 4 && strcmp(m.v[3].path, "[stack]") == 0, "maps: last line without newline");
	proc_maps_free(&m);
}

/* A chroot's maps, as read from outside it: its own names come back. */
static void test_strip_root(void)
{
	char text[] =
		"00400000-00452000 r-xp 00000000 fd:01 1234                       /srv/jail/usr/bin/python3.14\n"
		"7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n"
		"7f0000002000-7f0000003000 r--p 00001000 08:02 99 /srv/jail/lib/x (deleted)\n"
		"7f0000004000-7f0000005000 r--p 00000000 08:02 98 /srv/jailbird/lib/y\n"
		"7f0000006000-7f0000007000 r--p 00000000 08:02 97 /srv/jail\n"
		"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n"
		"7ffd00030000-7ffd00031000 r--p 00000000 08:02 96 /srv/jail/tail";
	const char *want =
		"00400000-00452000 r-xp 00000000 fd:01 1234                       /usr/bin/python3.14\n"
		"7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n"
		"7f0000002000-7f0000003000 r--p 00001000 08:02 99 /lib/x (deleted)\n"
		"7f0000004000-7f0000005000 r--p 00000000 08:02 98 /srv/jailbird/lib/y\n"
		"7f0000006000-7f0000007000 r--p 00000000 08:02 97 /srv/jail\n"
		"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]\n"
		"7ffd00030000-7ffd00031000 r--p 00000000 08:02 96 /tail";
	size_t n = proc_root_strip(text, strlen(text), "/srv/jail");

	check(n == strlen(want) && memcmp(text, want, n) == 0,
	      "strip root: names under the root lose it, others and [stack] stay");
	check(proc_root_strip(text, n, "") == n && memcmp(text, want, n) == 0,
	      "strip root: no prefix, no change");
}

static void test_root_words(void)
{
	struct proc_root ours = { 0 }, dir = { .kind = PROC_ROOT_DIR, .pid = 5, .dev = 1, .ino = 9,
						.dir = "/var/cache/it's here" };
	struct proc_root ns = { .kind = PROC_ROOT_NS, .pid = 6, .dev = 1, .ino = 9 };
	struct proc_root other = { .kind = PROC_ROOT_NS, .pid = 6, .dev = 1, .ino = 10 };
	char buf[512];

	proc_root_run(&ours, buf, sizeof(buf));
	check(buf[0] == '\0', "root run: nothing for our root");
	proc_root_run(&dir, buf, sizeof(buf));
	check(strcmp(buf, "chroot '/var/cache/it'\\''s here' ") == 0, "root run: chroot, quoted");
	proc_root_note(&dir, buf, sizeof(buf));
	check(strcmp(buf, " (root /var/cache/it's here)") == 0, "root note: the directory");
	check(proc_root_same(NULL, &ours) && !proc_root_same(&ours, &dir) && proc_root_same(&dir, &dir),
	      "root same: ours apart, a directory is itself");
	check(proc_root_same(&dir, &ns) && !proc_root_same(&ns, &other),
	      "root same: one directory reached two ways, by its identity");
}

static void test_container_id(void)
{
	static const char docker[] =
		"0::/system.slice/docker-4f2b8c1a9d3e0123456789abcdef0123456789abcdef0123456789abcdef0123.scope\n";
	static const char k8s[] =
		"12:memory:/kubepods/burstable/pod1234/cri-containerd-"
		"aaaabbbbccccddddeeeeffff0000111122223333444455556666777788889999\n";
	static const char none[] = "0::/user.slice/user-0.slice/session-1.scope\n";
	static const char too_long[] =
		"0::/x/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0\n";
	char id[16];

	check(proc_container_id_parse(docker, strlen(docker), id, sizeof(id)) == 0 &&
	      strcmp(id, "4f2b8c1a9d3e") == 0, "container id: docker scope");
	check(proc_container_id_parse(k8s, strlen(k8s), id, sizeof(id)) == 0 &&
	      strcmp(id, "aaaabbbbcccc") == 0, "container id: containerd under kubepods");
	check(proc_container_id_parse(none, strlen(none), id, sizeof(id)) == -1,
	      "container id: none outside containers");
	check(proc_container_id_parse(too_long, strlen(too_long), id, sizeof(id)) == -1,
	      "container id: a 65-digit run is not an id");
}

static void test_stat(void)
{
	static const char line[] = "30 (python3.10) R 1 0 0 0 -1 4194304 1163 0 0 0 2 0 0 0 20 0 "
				   "3 0 1234567 29175808 2380 18446744073709551615 1 1 0 0 0 0 0 "
				   "16781312 2 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
	static const char odd[] = "7 (a) b (c) S 5 7 7 0 -1 4194560 0 0 0 0 0 0 0 0 -2 -5 1 0 "
				  "99 0 0\n";
	static const char full[] = "12014 (cat) R 12009 12009 20757 0 -1 4194304 98 0 0 0 0 0 0 0 "
				   "20 0 1 0 4184657 3133440 387 18446744073709551615 "
				   "94688823767040 94688823786921 140732784042576 0 0 0 0 0 0 0 0 "
				   "0 17 1 0 0 0 0 0 94688823802928 94688823804544 94689480081408 "
				   "140732784048772 140732784048792 140732784048792 "
				   "140732784050155 0\n";
	struct proc_stat ps;

	check(proc_stat_parse(line, &ps) == 0 && ps.ppid == 1 && ps.num_threads == 3 &&
	      ps.start_time == 1234567 && strcmp(ps.comm, "python3.10") == 0 && ps.state == 'R' &&
	      !proc_stat_gone(&ps), "stat: ppid, threads, start time, comm and state");
	check(proc_stat_parse(odd, &ps) == 0 && ps.ppid == 5 && ps.num_threads == 1 &&
	      ps.start_time == 99 && strcmp(ps.comm, "a) b (c") == 0,
	      "stat: a comm with parentheses, negative priority and nice");
	check(proc_stat_parse("9 (python3) Z 1 0 0 0 -1 4227084 0 0 0 0 0 0 0 0 20 0 1 0 "
			      "77 0 0\n", &ps) == 0 && ps.state == 'Z' && proc_stat_gone(&ps),
	      "stat: a zombie is gone");
	check(ps.arg_start == 0 && ps.arg_end == 0, "stat: no argument area in a short line");
	check(proc_stat_parse(full, &ps) == 0 && ps.start_time == 4184657 &&
	      ps.arg_start == 140732784048772ull && ps.arg_end == 140732784048792ull,
	      "stat: the argument area, fields 48 and 49");
	check(proc_stat_parse("7 (x) S 5 7 7 0 -1 0 0\n", &ps) == -1 &&
	      proc_stat_parse("7 x S 5\n", &ps) == -1, "stat: truncated text refused");
}

/* Our own command line read from memory is the kernel's; an area
 * outside the stack mapping is read from the file instead. */
static void test_cmdline(void)
{
	char want[96] = "", got[96] = "", moved[96] = "";
	struct proc_maps maps;
	struct proc_stat ps;
	int ok = proc_stat(getpid(), &ps) == 0 &&
		 proc_maps_read(target_src_live(), getpid(), &maps) == 0;

	check(ok && ps.arg_start && ps.arg_end > ps.arg_start, "cmdline: stat shows the area");
	if (!ok)
		return;
	check(proc_cmdline(target_src_live(), getpid(), want, sizeof(want)) == 0 &&
	      proc_cmdline_stat(target_src_live(), getpid(), &ps, &maps, got, sizeof(got)) == 0 &&
	      want[0] && strcmp(want, got) == 0, "cmdline: from memory as from the file");
	ps.arg_start = ps.arg_end = (uint64_t)(uintptr_t)&test_cmdline;
	ps.arg_end += 8;
	check(proc_cmdline_stat(target_src_live(), getpid(), &ps, &maps, moved,
				sizeof(moved)) == 0 && strcmp(want, moved) == 0,
	      "cmdline: an area off the stack is read from the file");
	proc_maps_free(&maps);
}

static void test_syscall(void)
{
	uint64_t sp = 0, pc = 0;

	check(proc_parse_syscall("230 0x1 0x1 0x7ffce70c3310 0x0 0x0 0x0 0x7ffce70c32f8 "
				 "0x7f326d0ed503\n", &sp, &pc) == 1 &&
	      sp == 0x7ffce70c32f8 && pc == 0x7f326d0ed503, "syscall: in clock_nanosleep");
	sp = pc = 0;
	check(proc_parse_syscall("-1 0x7ffc00001000 0x401000\n", &sp, &pc) == 1 &&
	      sp == 0x7ffc00001000 && pc == 0x401000, "syscall: blocked outside a system call");
	check(proc_parse_syscall("running\n", &sp, &pc) == 0, "syscall: running");
	check(proc_parse_syscall("230 0x1 0x1\n", &sp, &pc) == -1 &&
	      proc_parse_syscall("", &sp, &pc) == -1, "syscall: truncated text refused");
}

int main(void)
{
	test_syscall();
	test_stat();
	test_cmdline();
	test_maps();
	test_container_id();
	test_strip_root();
	test_root_words();
	return check_exit();
}
