/* sampler_bpf_shared.h: what the BPF program (sampler_bpf.bpf.c, compiled with clang -target
 * bpf) and its loader (sampler_bpf.c) agree on: the sample record of the ring buffer, the unwind
 * table rows built from .eh_frame/.debug_frame (unwind/cfitable.h), each process' executable
 * mappings and the counters. Plain C types only, no pointers: both sides include it. */
#ifndef CSAMPLER_SAMPLER_BPF_SHARED_H
#define CSAMPLER_SAMPLER_BPF_SHARED_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define CSB_MAX_KERNEL 127         /* kernel frames per sample (perf's sample_max_stack) */
#define CSB_MAX_USER 255           /* user frames per sample: 127 cut 4.5% of the PyTorch loop's
				    * (imports nest Python calls 130 and more frames deep) */
#define CSB_FP_MASK_BITS 128       /* frames fp_mask can mark: a walk that needs a frame-pointer
				    * step beyond them stops there, cut (and goes with a slice) */
#define CSB_MAX_MAPS 256           /* executable file mappings per process with a table */
#define CSB_MAX_ROWS (8u << 20)    /* unwind rows of every file, 8 bytes each (64 MiB) */
#define CSB_RING_BYTES (16u << 20) /* the sample ring buffer */

/* csb_sample.flags: how the user stack walk ended */
#define CSB_USER_COMPLETE 0x1  /* reached the outermost frame's row (RA undefined) */
#define CSB_USER_ERROR 0x2     /* stopped: unreadable memory, a frame that did not move up */
#define CSB_USER_TRUNCATED 0x4 /* CSB_MAX_USER frames, not the end */
#define CSB_USER_NO_TABLE 0x8  /* a frame was unwound by frame pointer: no table covered it */
#define CSB_USER_ANON 0x10     /* stopped at a PC in no file mapping (JIT code) */
#define CSB_KERNEL_THREAD 0x20 /* no user part */
#define CSB_USER_FP_END 0x80   /* ended at a zero frame pointer, after a frame-pointer step */
#define CSB_USER_SLICE 0x40    /* the walk is uncertain (it took a frame-pointer step and did not
				* end at an outermost frame's row) or cut at CSB_MAX_USER frames:
				* the record carries the leaf registers and a slice of the stack
				* for user space's unwinder */

#define CSB_SLICE_MAX 32768        /* bytes of stack in such a record, at most */

struct csb_sample {
	__u64 time;                /* bpf_ktime_get_ns: CLOCK_MONOTONIC */
	__u32 pid, tid, cpu, flags;
	__u32 nkernel, nuser;
	__u64 ip, sp, bp;          /* the leaf's user registers */
	__u32 slice, pad;          /* CSB_USER_SLICE: bytes of stack from sp in stack[] */
	__u64 fp_mask[2];          /* bit i: user[i] was found by a frame-pointer step (i < 128) */
	__u64 kernel[CSB_MAX_KERNEL];
	__u64 user[CSB_MAX_USER];  /* leaf first: the sampled PC, then return addresses */
};

/* An uncertain walk's record (the ring holds it whole, CSB_USER_SLICE says whether stack[]
 * holds slice bytes); the others are a csb_sample cut after user[nuser]. */
struct csb_slice_sample {
	struct csb_sample head;
	__u8 stack[CSB_SLICE_MAX];
};

/* One unwind rule, valid from pc to the next row's pc (offsets in the file's address space,
 * the ELF's p_vaddr numbering). cfa = (CSB_ROW_CFA_BP ? bp : sp) + cfa_off; the return
 * address is at cfa - 8 (x86-64); the caller's bp is at cfa + 8 * bp_off8 when
 * CSB_ROW_BP_SAVED, else unchanged. 8 bytes a row (16 before: 4 Mi rows in 64 MiB held the
 * PyTorch loop's files only just, libtorch_cpu.so alone 1.4 Mi): a rule whose offsets do not
 * fit (bp saved off a multiple of 8 or beyond +-1 KiB) becomes a gap row. */
#define CSB_ROW_BP_SAVED 0x1
#define CSB_ROW_END 0x2            /* the return address is undefined: the outermost frame */
#define CSB_ROW_GAP 0x4            /* no rule here (between FDEs, or one we cannot express) */
#define CSB_ROW_CFA_BP 0x8         /* the CFA is rbp + cfa_off (else rsp + cfa_off) */
struct csb_row {
	__u32 pc;
	__s16 cfa_off;
	__s8 bp_off8;              /* the saved bp's offset from the CFA, in 8-byte words */
	__u8 flags;
};

/* A process' executable file mappings with a table, sorted by start: rel = pc - bias is the
 * pc in the file's numbering; its rows are rows[first, first + count). */
struct csb_map {
	__u64 start, end, bias;
	__u32 first, count;
};
struct csb_proc {
	__u32 nmaps, pad;
	struct csb_map maps[CSB_MAX_MAPS];
};

/* Settings the loader writes into .rodata before loading. */
#define CSB_FILTER_PIDS 0          /* the processes of the targets map */
#define CSB_FILTER_ALL 1           /* record -a */
#define CSB_FILTER_CGROUP 2        /* --cgroup: tasks under one cgroup (v2) */

/* The per-CPU counters (the stats map, one array of CSB_STAT_N per CPU). */
enum csb_stat {
	CSB_STAT_SAMPLES,          /* samples written to the ring */
	CSB_STAT_LOST,             /* samples the full ring refused */
	CSB_STAT_NS,               /* time in the program for the targets' samples, ns */
	CSB_STAT_N,
};

#endif
