// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The mappings of one process (the iterator's link names its pid), as
 * struct py_vma_rec records: what /proc/PID/maps says but the paths,
 * without the kernel's text. Its own object, loaded apart from
 * pyperf.bpf.c: where it cannot load, /proc/PID/maps is read as before.
 * The iterator's vma is not a trusted pointer (no bpf_d_path of its
 * file): its fields are read by plain loads, which the verifier turns into
 * faulting-safe ones (a probe-read helper call each cost more than the
 * kernel's own text).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "pyperf.h"

char LICENSE[] SEC("license") = "GPL";

#define VM_READ		0x1
#define VM_WRITE	0x2
#define VM_EXEC		0x4
#define VM_MAYSHARE	0x80
#define PAGE_SHIFT	12
#define MNT_NS_INTERNAL	((unsigned long)-22)	/* ERR_PTR(-EINVAL): kern_mount,
						 * clone_private_mount */

/* A file of a mount no namespace holds: /proc/PID/maps names an
 * overlayfs layer's file by its user path (file_user_path), not by where
 * the file is; shmem and memfd files live there too. */
static __always_inline int internal_mount(__u64 mnt)
{
	struct mount *m = (void *)(mnt - bpf_core_field_offset(struct mount, mnt));
	unsigned long ns = (unsigned long)BPF_CORE_READ(m, mnt_ns);

	return !ns || ns == MNT_NS_INTERNAL;
}

/* d_unlinked(): the maps text says " (deleted)" after the path. */
static __always_inline int unlinked(__u64 dentry)
{
	struct dentry *d = (void *)dentry;

	return !BPF_CORE_READ(d, d_hash.pprev) && (__u64)BPF_CORE_READ(d, d_parent) != dentry;
}

static __always_inline __u8 anon_name(struct mm_struct *mm, __u64 start, __u64 end)
{
	__u64 stack = mm->start_stack;

	if (start <= mm->brk && end >= mm->start_brk)
		return PY_VMA_NAME_HEAP;
	if (start <= stack && end >= stack)
		return PY_VMA_NAME_STACK;
	if (start == (__u64)mm->context.vdso)
		return PY_VMA_NAME_VDSO;
	return 0;
}

SEC("iter/task_vma")
int py_maps(struct bpf_iter__task_vma *ctx)
{
	struct vm_area_struct *vma = ctx->vma;
	struct seq_file *seq = ctx->meta->seq;
	struct py_vma_rec r = {};
	struct { __u64 mnt, dentry; } path;	/* as numbers: no pointer math on them */
	struct inode *inode;
	struct mm_struct *mm;
	struct file *file;

	if (!vma)
		return 0;
	mm = vma->vm_mm;
	file = vma->vm_file;
	r.start = vma->vm_start;
	r.end = vma->vm_end;
	r.vm_flags = (__u32)(vma->vm_flags & (VM_READ | VM_WRITE | VM_EXEC | VM_MAYSHARE));
	r.map_count = (__u32)mm->map_count;
	if (!file) {
		r.name = anon_name(mm, r.start, r.end);
		bpf_seq_write(seq, &r, sizeof(r));
		return 0;
	}
	if (bpf_probe_read_kernel(&path, sizeof(path), &file->f_path))
		return 0;	/* no record: the count says the list is cut */
	inode = file->f_inode;
	r.flags = PY_VMA_F_FILE;
	r.pgoff = vma->vm_pgoff << PAGE_SHIFT;
	r.ino = inode->i_ino;
	r.gen = inode->i_generation;
	r.dev = inode->i_sb->s_dev;
	r.key = (path.mnt * 0x9e3779b97f4a7c15ull) ^ (path.dentry * 0xc2b2ae3d27d4eb4full);
	if (internal_mount(path.mnt) || unlinked(path.dentry))
		r.flags |= PY_VMA_F_FALLBACK;
	bpf_seq_write(seq, &r, sizeof(r));
	return 0;
}
